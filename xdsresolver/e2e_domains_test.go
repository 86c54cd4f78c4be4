// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"testing"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// TestResolver_E2E_DomainPatterns checks that virtual host domains are
// read as gRPC and Envoy read them: a virtual host with a
// pattern whose '*' is at neither end never matches, without making the
// RouteConfiguration unusable; "*s*" is the suffix "s*".
//
//  1. Serve three virtual hosts: "svc" and "a*b" → cluster B; "*s*" → cluster C; "s*" → cluster A.
//  2. RPCs to xds:///svc reach A: the first virtual host is skipped, "*s*" does not match "svc".
func TestResolver_E2E_DomainPatterns(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc",
			testutil.VirtualHost("invalid", []string{"svc", "a*b"}, testutil.ClusterRoute("", "cluster-b")),
			testutil.VirtualHost("suffix-with-star", []string{"*s*"}, testutil.ClusterRoute("", "cluster-c")),
			testutil.VirtualHost("prefix", []string{"s*"}, testutil.ClusterRoute("", "cluster-a")),
		)},
		Clusters: []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b"), testutil.Cluster("cluster-c", "eds-c")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			testutil.Endpoints("eds-a", "127.0.0.1", a.port), testutil.Endpoints("eds-b", "127.0.0.1", b.port), testutil.Endpoints("eds-c", "127.0.0.1", c.port),
		},
	})
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "A", 20); err != nil {
		t.Error(err)
	}
}
