// SPDX-License-Identifier: Apache-2.0

package calllabels_test

import (
	"context"
	"fmt"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/resources"
)

// Example shows the three parties: the channel's interceptor gives the
// RPC a Holder, the picker sets the labels of the endpoint it picked, and
// a stats handler reads them when the attempt ends.
func Example() {
	// The interceptor (xdsresolver.DialOptions's), once per RPC.
	ctx := calllabels.NewContext(context.Background(), new(calllabels.Holder))

	// The picker, in Pick(balancer.PickInfo{Ctx: ctx, ...}), with labels
	// made once per locality of a cluster.
	loc := resources.LocalityID{Region: "r1", Zone: "z1", SubZone: "s1"}
	labels := &calllabels.Labels{Locality: loc.String(), BackendService: "cluster-a"}
	calllabels.FromContext(ctx).Set(labels)

	// A stats handler, in HandleRPC(ctx, *stats.End).
	got := calllabels.FromContext(ctx).Labels()
	fmt.Printf("%s=%s\n%s=%s\n", calllabels.KeyLocality, got.Locality, calllabels.KeyBackendService, got.BackendService)
	// Output:
	// grpc.lb.locality={region="r1", zone="z1", sub_zone="s1"}
	// grpc.lb.backend_service=cluster-a
}
