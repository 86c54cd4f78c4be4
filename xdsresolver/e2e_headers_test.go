// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/balancer"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// mdBackend is a backend whose UnaryCall sends the metadata it received
// on got, and answers with its id.
type mdBackend struct {
	testgrpc.UnimplementedTestServiceServer
	id  string
	got chan metadata.MD
}

func (b *mdBackend) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	select {
	case b.got <- md:
	default:
	}
	return &testgrpc.SimpleResponse{ServerId: b.id}, nil
}

// startMDBackend starts an mdBackend, stopped when the test ends, and
// returns it and its port.
func startMDBackend(t *testing.T) (*mdBackend, uint32) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	b := &mdBackend{id: "A", got: make(chan metadata.MD, 1)}
	serveOn(t, lis, b)
	return b, uint32(lis.Addr().(*net.TCPAddr).Port)
}

func hvo(key, value string, action v3corepb.HeaderValueOption_HeaderAppendAction) *v3corepb.HeaderValueOption {
	return &v3corepb.HeaderValueOption{Header: &v3corepb.HeaderValue{Key: key, Value: value}, AppendAction: action}
}

const (
	appendOrAdd  = v3corepb.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	addIfAbsent  = v3corepb.HeaderValueOption_ADD_IF_ABSENT
	overwriteAdd = v3corepb.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
)

// headerRoutes returns the RouteConfiguration "route-svc" whose one
// route, a weighted_clusters route to cluster-svc, has request header
// mutations at every level: each level appends its name to x-order and
// overwrites x-level with it; the virtual host removes x-secret; the
// route adds x-app if absent and an empty x-keep (keep_empty_value); the
// weighted cluster adds x-bin-bin (base64 of 0 1 2) and what gRPC
// refuses: grpc-foo, te, x-latin (a non-ASCII value), x-bad-bin (not
// base64), and removes grpc-trace-bin and user-agent.
func headerRoutes(mostSpecificWins bool) *v3routepb.RouteConfiguration {
	level := func(name string) []*v3corepb.HeaderValueOption {
		return []*v3corepb.HeaderValueOption{hvo("x-order", name, appendOrAdd), hvo("x-level", name, overwriteAdd)}
	}
	rt := testutil.WeightedClustersRoute("", testutil.ClusterWeight{Name: "cluster-svc", Weight: 1})
	rt.RequestHeadersToAdd = append(level("route"), hvo("x-app", "default", addIfAbsent),
		&v3corepb.HeaderValueOption{Header: &v3corepb.HeaderValue{Key: "x-keep"}, KeepEmptyValue: true})
	wc := rt.GetRoute().GetWeightedClusters().GetClusters()[0]
	wc.RequestHeadersToAdd = append(level("wc"), hvo("x-bin-bin", "AAEC", appendOrAdd),
		hvo("grpc-foo", "1", appendOrAdd), hvo("te", "x", overwriteAdd), hvo("x-latin", "caf\u00e9", appendOrAdd), hvo("x-bad-bin", "!!", appendOrAdd))
	wc.RequestHeadersToRemove = []string{"grpc-trace-bin", "user-agent"}
	vh := testutil.VirtualHost("vh", []string{"svc"}, rt)
	vh.RequestHeadersToAdd = level("vh")
	vh.RequestHeadersToRemove = []string{"x-secret"}
	rc := testutil.RouteConfigWithVirtualHosts("route-svc", vh)
	rc.RequestHeadersToAdd = level("rc")
	rc.ResponseHeadersToAdd = level("rc-response") // not applied by gRPC
	rc.MostSpecificHeaderMutationsWins = mostSpecificWins
	return rc
}

// TestResolver_E2E_HeaderRewriting checks issue 31's header rewriting
// with DialOptions: the request header mutations of the weighted cluster,
// route, virtual host and RouteConfiguration become the RPC's metadata,
// with Envoy's precedence (least specific overwrite wins by default, the
// route's with most_specific_header_mutations_wins), its removals and
// append actions; "-bin" values are decoded from base64; what gRPC
// reserves or cannot send is left out and the RPC succeeds; the
// application's metadata are not changed.
//
//  1. Serve headerRoutes(false) with a backend that records metadata.
//  2. An RPC with x-secret, x-app and x-order reaches the backend with
//     the rewritten metadata, x-level from the RouteConfiguration.
//  3. Serve headerRoutes(true): x-level is the route's, x-order's levels
//     reversed but for the weighted cluster's, still first.
func TestResolver_E2E_HeaderRewriting(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	b, port := startMDBackend(t)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{port}})
	tc := e.dialWithInterceptors(t, "xds:///svc")
	appMD := metadata.Pairs("x-secret", "s", "x-app", "mine", "x-order", "app")

	// call makes RPCs until one reaches the backend with x-level want,
	// and returns its metadata.
	call := func(want string) metadata.MD {
		t.Helper()
		var last metadata.MD
		for ctx.Err() == nil {
			if _, err := tc.UnaryCall(metadata.NewOutgoingContext(ctx, appMD), &testgrpc.SimpleRequest{}); err != nil {
				continue
			}
			last = <-b.got
			if l := last.Get("x-level"); len(l) == 1 && l[0] == want {
				return last
			}
		}
		t.Fatalf("no RPC reached the backend with x-level %q; last metadata %v", want, last)
		return nil
	}
	for _, tc := range []struct {
		mostSpecificWins bool
		wantLevel        string
		wantOrder        []string
	}{
		{false, "rc", []string{"app", "wc", "route", "vh", "rc"}},
		{true, "route", []string{"app", "wc", "rc", "vh", "route"}},
	} {
		r.Routes = []*v3routepb.RouteConfiguration{headerRoutes(tc.mostSpecificWins)}
		e.ms.Update("", r)
		md := call(tc.wantLevel)
		got := map[string][]string{}
		for _, k := range []string{"x-order", "x-secret", "x-app", "x-keep", "x-bin-bin", "grpc-foo", "x-latin", "x-bad-bin", "x-level"} {
			if v, ok := md[k]; ok {
				got[k] = v
			}
		}
		want := map[string][]string{
			"x-order":   tc.wantOrder,
			"x-app":     {"mine"},
			"x-keep":    {""},
			"x-bin-bin": {"\x00\x01\x02"},
			"x-level":   {tc.wantLevel},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("most_specific_header_mutations_wins %v: the backend's metadata (-want +got):\n%s", tc.mostSpecificWins, diff)
		}
		if ua := md.Get("user-agent"); len(ua) == 0 {
			t.Errorf("most_specific_header_mutations_wins %v: user-agent removed; gRPC sets it, a route cannot remove it", tc.mostSpecificWins)
		}
		if te := md.Get("te"); len(te) != 0 && te[0] != "trailers" {
			t.Errorf("te = %q; gRPC's", te)
		}
	}
	if diff := cmp.Diff(metadata.Pairs("x-secret", "s", "x-app", "mine", "x-order", "app"), appMD); diff != "" {
		t.Errorf("the application's metadata changed (-want +got):\n%s", diff)
	}
}

// TestResolver_E2E_HeaderRewritingNeedsDialOptions checks the other side
// of the package doc's "Header rewriting": a channel of NewBuilder alone
// sends the application's metadata unchanged.
func TestResolver_E2E_HeaderRewritingNeedsDialOptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	b, port := startMDBackend(t)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{port}})
	r.Routes = []*v3routepb.RouteConfiguration{headerRoutes(false)}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")
	for {
		_, err := tc.UnaryCall(metadata.AppendToOutgoingContext(ctx, "x-secret", "s"), &testgrpc.SimpleRequest{})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
	}
	md := <-b.got
	if got := md.Get("x-secret"); len(got) != 1 || len(md.Get("x-level")) != 0 {
		t.Errorf("NewBuilder alone: x-secret %q, x-level %q; want the application's metadata unchanged", got, md.Get("x-level"))
	}
}

// TestResolver_E2E_HeaderRewritingHashesOriginal checks that the picker
// hashes the headers the application sent, not the rewritten ones, as
// Envoy picks the endpoint before it rewrites the request's headers: a
// route hashing x-user overwrites x-user with one value, and RPCs of
// different users still spread over both endpoints of its RING_HASH
// cluster.
func TestResolver_E2E_HeaderRewritingHashesOriginal(t *testing.T) {
	if balancer.Get("ring_hash_experimental") == nil {
		t.Fatal("grpc's ring_hash balancer is not registered")
	}
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a, b)
	route := testutil.ClusterRoute("", "cluster-svc")
	route.GetRoute().HashPolicy = []*v3routepb.RouteAction_HashPolicy{{
		PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Header_{Header: &v3routepb.RouteAction_HashPolicy_Header{HeaderName: "x-user"}},
	}}
	route.RequestHeadersToAdd = []*v3corepb.HeaderValueOption{{Header: &v3corepb.HeaderValue{Key: "x-user", Value: "everyone"}, Append: wrapperspb.Bool(false)}}
	r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, route))}
	c := testutil.Cluster("cluster-svc", "eds-svc")
	c.LbPolicy = v3clusterpb.Cluster_RING_HASH
	r.Clusters = []*v3clusterpb.Cluster{c}
	e.ms.Update("", r)
	tc := e.dialWithInterceptors(t, "xds:///svc")
	usersOf := map[string]int{}
	for i := 0; i < 40 && (usersOf["A"] == 0 || usersOf["B"] == 0); i++ {
		uctx := metadata.AppendToOutgoingContext(ctx, "x-user", fmt.Sprintf("user-%d", i))
		id, err := unaryServerID(uctx, tc)
		for err != nil && ctx.Err() == nil {
			id, err = unaryServerID(uctx, tc)
		}
		if err != nil {
			t.Fatalf("user-%d: %v", i, err)
		}
		usersOf[id]++
	}
	if usersOf["A"] == 0 || usersOf["B"] == 0 {
		t.Errorf("users per server = %v; want both servers to have some (the hash of the rewritten x-user would send all to one)", usersOf)
	}
}
