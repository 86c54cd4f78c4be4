// SPDX-License-Identifier: Apache-2.0

package lrs_test

import (
	"errors"
	"fmt"

	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
)

// Example records the load of a cluster in a Store and reads it back as
// the ClusterStats a Client would send (lrs.NewClient reports it on an
// LRS stream every load_reporting_interval).
func Example() {
	store := lrs.NewStore()
	cl := store.Cluster("cluster-a", "eds-a")
	zone := cl.Locality(resources.LocalityID{Region: "r", Zone: "z1"})
	for i := range 3 {
		zone.Start()
		var err error
		if i == 2 {
			err = errors.New("unavailable")
		}
		zone.Finish(err)
	}
	zone.Start() // still in progress
	cl.DropCounter("throttle").Add(1)

	for _, cs := range store.Stats(nil) {
		l := cs.GetUpstreamLocalityStats()[0]
		fmt.Printf("%s/%s zone %s: issued %d, succeeded %d, errored %d, in progress %d; dropped %d (%s: %d)\n",
			cs.GetClusterName(), cs.GetClusterServiceName(), l.GetLocality().GetZone(),
			l.GetTotalIssuedRequests(), l.GetTotalSuccessfulRequests(), l.GetTotalErrorRequests(), l.GetTotalRequestsInProgress(),
			cs.GetTotalDroppedRequests(), cs.GetDroppedRequests()[0].GetCategory(), cs.GetDroppedRequests()[0].GetDroppedCount())
	}
	// Output: cluster-a/eds-a zone z1: issued 4, succeeded 2, errored 1, in progress 1; dropped 1 (throttle: 1)
}
