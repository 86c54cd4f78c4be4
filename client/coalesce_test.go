// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// TestCoalesce_WatchesFromCallbacksOneRequest checks that the names
// watchers add while the client handles a response go out in one request
// per type, once the response's watcher calls are done, SotW and delta:
// each Cluster callback watches its ClusterLoadAssignment and then lets
// every other goroutine run (synctest.Wait), which is when a send loop
// that does not hold changes back writes a request with the names so far.
// The ACK of the CDS response is not held.
func TestCoalesce_WatchesFromCallbacksOneRequest(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				const n = 3
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
				var res testutil.Resources
				for i := range n {
					res.Clusters = append(res.Clusters, testutil.Cluster(fmt.Sprint("c", i), fmt.Sprint("e", i)))
					res.Endpoints = append(res.Endpoints, testutil.Endpoints(fmt.Sprint("e", i), "10.0.0.1", 8080))
				}
				var opts []client.Option
				if delta {
					opts = append(opts, client.WithDelta())
				}
				c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
				got := make(chan string, n)
				onEndpoints := watcher.Funcs[*resources.Endpoints]{OnChanged: func(e *resources.Endpoints) { got <- e.ClusterName }}
				// Only touched by the serialized callbacks until the end.
				var cancels []func()
				ackedInCallback := true
				onCluster := watcher.Funcs[*resources.Cluster]{OnChanged: func(cl *resources.Cluster) {
					cancels = append(cancels, client.Watch(c, resources.EndpointsType, cl.EDSServiceName, onEndpoints))
					synctest.Wait()
					ackedInCallback = ackedInCallback && slices.ContainsFunc(ms.Requests(), func(r *testutil.Request) bool {
						return r.Req.GetTypeUrl() == resources.ClusterTypeURL && r.Req.GetResponseNonce() != "" ||
							r.Delta.GetTypeUrl() == resources.ClusterTypeURL && r.Delta.GetResponseNonce() != ""
					})
				}}
				for i := range n {
					defer client.Watch(c, resources.ClusterType, fmt.Sprint("c", i), onCluster)()
				}
				// Every Cluster is asked for before the server has any, so
				// that one CDS response carries them all.
				synctest.Wait()
				ms.Update("", res)
				for range n {
					<-got
				}
				synctest.Wait()
				reqs := ms.Requests() // before the cancels below change the subscription
				for _, cancel := range cancels {
					cancel()
				}

				var changes [][]string // the EDS names each request changed
				for _, r := range reqs {
					switch {
					case r.Delta.GetTypeUrl() == resources.EndpointsTypeURL && len(r.Delta.GetResourceNamesSubscribe()) > 0:
						changes = append(changes, r.Delta.GetResourceNamesSubscribe())
					case r.Req.GetTypeUrl() == resources.EndpointsTypeURL && (len(changes) == 0 || !slices.Equal(changes[len(changes)-1], r.Req.GetResourceNames())):
						changes = append(changes, r.Req.GetResourceNames())
					}
				}
				if !ackedInCallback {
					t.Error("the CDS response was not ACKed while its watcher calls ran (R-12.2)")
				}
				if want := [][]string{{"e0", "e1", "e2"}}; !slices.EqualFunc(changes, want, slices.Equal) {
					t.Errorf("EDS requests subscribed to %q, want one request subscribing to %q", changes, want)
				}
			})
		})
	}
}
