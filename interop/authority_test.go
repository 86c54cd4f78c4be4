// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// TestAuthority_SideBySide_GRPCGo serves, from go-control-plane, the
// Listener "svc/v2 beta" whose RouteConfiguration has a virtual host for
// the target's path percent-encoded as gRPC encodes a channel's
// authority ("svc%2Fv2%20beta" → A), one for the raw path ("svc/v2 beta"
// → B) and "override.example" → C; and checks that this library's
// channel and grpc-go's xDS channel select the same virtual host:
// A for xds:///svc/v2 beta, C with grpc.WithAuthority("override.example").
func TestAuthority_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const service = "svc/v2 beta"
	a, b, c := startIDServer(t, "A"), startIDServer(t, "B"), startIDServer(t, "C")
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener(service, "route-svc")},
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc",
			testutil.VirtualHost("encoded", []string{"svc%2Fv2%20beta"}, testutil.ClusterRoute("", "cluster-a")),
			testutil.VirtualHost("raw", []string{service}, testutil.ClusterRoute("", "cluster-b")),
			testutil.VirtualHost("override", []string{"override.example"}, testutil.ClusterRoute("", "cluster-c")),
		)},
		Clusters: []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b"), testutil.Cluster("cluster-c", "eds-c")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			testutil.Endpoints("eds-a", "127.0.0.1", a.port), testutil.Endpoints("eds-b", "127.0.0.1", b.port), testutil.Endpoints("eds-c", "127.0.0.1", c.port),
		},
	})
	for _, tc := range []struct {
		name string
		opts []grpc.DialOption
		want string
	}{
		{"the target's path", nil, "A"},
		{"grpc.WithAuthority", []grpc.DialOption{grpc.WithAuthority("override.example")}, "C"},
	} {
		for _, ch := range bothChannels(t, s, "xds:///"+service, tc.opts...) {
			tsc := testgrpc.NewTestServiceClient(ch.cc)
			for range 3 {
				resp, err := tsc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
				if err != nil || resp.GetServerId() != tc.want {
					t.Errorf("%s, %s: server %q, error %v; want %s", tc.name, ch.name, resp.GetServerId(), err, tc.want)
					break
				}
			}
		}
	}
}
