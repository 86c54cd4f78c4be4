// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// authorityBackend answers UnaryCall with the :authority it got (in
// SimpleResponse.username).
type authorityBackend struct {
	testgrpc.UnimplementedTestServiceServer
	port uint32
}

func (authorityBackend) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return &testgrpc.SimpleResponse{Username: strings.Join(md.Get(":authority"), ",")}, nil
}

func startAuthorityBackend(t *testing.T) *authorityBackend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &authorityBackend{port: uint32(lis.Addr().(*net.TCPAddr).Port)}
	serveOn(t, lis, b)
	return b
}

// trustedBootstrap marks the bootstrap's server trusted_xds_server (gRFC
// A81).
func trustedBootstrap(m map[string]any) {
	for _, s := range m["xds_servers"].([]any) {
		s.(map[string]any)["server_features"] = []any{"trusted_xds_server"}
	}
}

// rewriteChain is the chain of listener name to b, whose endpoint has the
// host name hostname and whose route has auto_host_rewrite as rewrite.
func rewriteChain(name string, b *authorityBackend, hostname string, rewrite bool) testutil.Resources {
	r := testutil.Chain(testutil.ChainOptions{Listener: name, Ports: []uint32{b.port}})
	r.Endpoints[0].Endpoints[0].LbEndpoints[0].GetEndpoint().Hostname = hostname
	if rewrite {
		r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().HostRewriteSpecifier = &v3routepb.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)}
	}
	return r
}

// TestAuthorityRewrite checks auto_host_rewrite (gRFC A81): an RPC of a
// route with it, from a management server with trusted_xds_server, has
// its endpoint's host name as :authority (a LOGICAL_DNS cluster's DNS name
// and port); without the feature on the server, without the field, or
// without a host name, the channel's authority; grpc.CallAuthority wins.
func TestAuthorityRewrite(t *testing.T) {
	ctx := testContext(t)
	b := startAuthorityBackend(t)
	dnsRes := func() testutil.Resources {
		r := rewriteChain("dns", b, "", true)
		r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().ClusterSpecifier = &v3routepb.RouteAction_Cluster{Cluster: "dns-cluster"}
		r.Clusters = []*v3clusterpb.Cluster{testutil.LogicalDNSCluster("dns-cluster", "backend.example", b.port)}
		r.Endpoints = nil
		return r
	}()
	res := merge(
		rewriteChain("rewrite", b, "host.example", true),
		rewriteChain("no-rewrite", b, "host.example", false),
		rewriteChain("no-hostname", b, "", true),
		dnsRes,
	)
	dns := &fakeDNS{addrs: map[string][]string{"backend.example": {"127.0.0.1"}}}
	authorityOf := func(t *testing.T, e *env, target string, opts ...grpc.CallOption) string {
		t.Helper()
		cc, err := grpc.NewClient("xds:///"+target, xdsresolver.DialOptions(e.client, xdsresolver.WithLogger(testLogger(t)), xdsresolver.WithDepMgrOptions(depmgr.WithDNSResolver(dns)))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{}, append(opts, grpc.WaitForReady(true))...)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		return resp.GetUsername()
	}
	t.Run("trusted", func(t *testing.T) {
		e := newEnv(t, testutil.BootstrapOptions{}, trustedBootstrap)
		if err := e.ms.Update("", res); err != nil {
			t.Fatal(err)
		}
		for target, want := range map[string]string{
			"rewrite":     "host.example",
			"no-rewrite":  "no-rewrite",
			"no-hostname": "no-hostname",
			"dns":         "backend.example:" + strconv.FormatUint(uint64(b.port), 10),
		} {
			if got := authorityOf(t, e, target); got != want {
				t.Errorf("%s: :authority %q, want %q", target, got, want)
			}
		}
		if got := authorityOf(t, e, "rewrite", grpc.CallAuthority("explicit.example")); got != "explicit.example" {
			t.Errorf("rewrite with grpc.CallAuthority: :authority %q, want explicit.example", got)
		}
	})
	t.Run("not trusted", func(t *testing.T) {
		e := newEnv(t, testutil.BootstrapOptions{}, nil)
		if err := e.ms.Update("", res); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"rewrite", "dns"} {
			if got := authorityOf(t, e, target); got != target {
				t.Errorf("%s: :authority %q, want the channel's, %q", target, got, target)
			}
		}
	})
}
