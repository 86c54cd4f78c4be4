// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"testing"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestResolver_E2E_CustomLBPolicy checks that a custom LB policy (gRFC
// A52), a balancer the program registered with gRPC and that a Cluster
// names in a TypedStruct, gets the endpoints of the cluster and its JSON
// config, and picks their RPCs.
//
//  1. Register testutil's pin policy (pick_first over the endpoints of the port its config names).
//  2. Serve a cluster of A, B and C whose load_balancing_policy is an unregistered TypedStruct, then the pin policy with B's port.
//  3. Every RPC reaches B.
func TestResolver_E2E_CustomLBPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	testutil.RegisterPinPolicy()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a, b, c)
	cl := testutil.Cluster("cluster-svc", "eds-svc")
	cl.LoadBalancingPolicy = testutil.PinPolicy(b.port)
	r.Clusters = []*v3clusterpb.Cluster{cl}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "B", 50); err != nil {
		t.Error(err)
	}
}
