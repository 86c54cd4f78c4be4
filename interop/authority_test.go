// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	grpcxds "google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// authorityEcho answers UnaryCall with the :authority it got.
type authorityEcho struct {
	testgrpc.UnimplementedTestServiceServer
}

func (authorityEcho) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return &testgrpc.SimpleResponse{Username: strings.Join(md.Get(":authority"), ",")}, nil
}

// TestAuthorityRewrite_SideBySide_GRPCGo: auto_host_rewrite (gRFC A81)
// from a server with trusted_xds_server, on this library's channel and on
// grpc-go's (GRPC_EXPERIMENTAL_XDS_AUTHORITY_REWRITE=true, in a child
// process): the same :authority reaches the backend, with and without
// the field, and with the server not trusted.
func TestAuthorityRewrite_SideBySide_GRPCGo(t *testing.T) {
	if !inChildWithGRPCEnv(t, "GRPC_EXPERIMENTAL_XDS_AUTHORITY_REWRITE=true") {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, authorityEcho{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	port := uint32(lis.Addr().(*net.TCPAddr).Port)
	var res testutil.Resources
	for _, name := range []string{"rewrite", "no-rewrite"} {
		addChain(&res, name, port, func(r testutil.Resources) {
			r.Endpoints[0].Endpoints[0].LbEndpoints[0].GetEndpoint().Hostname = "host.example"
			if name == "rewrite" {
				r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().HostRewriteSpecifier = &v3routepb.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)}
			}
		})
	}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)
	for _, trusted := range []bool{true, false} {
		features := `["xds_v3"]`
		if trusted {
			features = `["xds_v3", "trusted_xds_server"]`
		}
		js := []byte(fmt.Sprintf(`{
			"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": %s}],
			"node": {"id": %q}
		}`, s.Addr, features, nodeID))
		cfg, err := bootstrap.Parse(js)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting(js)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"rewrite", "no-rewrite"} {
			want := target
			if trusted && target == "rewrite" {
				want = "host.example"
			}
			authority := func(opts ...grpc.DialOption) string {
				resp, err := oneRPC(ctx, t, "xds:///"+target, opts...)
				if err != nil {
					return "error: " + err.Error()
				}
				return resp.GetUsername()
			}
			ours := authority(xdsresolver.DialOptions(c)...)
			theirs := authority(grpc.WithResolvers(theirResolver), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if ours != want || theirs != want {
				t.Errorf("trusted %v, %s: :authority proxyless/xds %q, grpc-go %q; want both %q", trusted, target, ours, theirs, want)
			}
		}
		c.Close()
	}
}
