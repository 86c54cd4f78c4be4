// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

const sessionCookie = "grpc-session"

// sessionRPC makes a UnaryCall sending cookie (a "name=value" pair; ""
// for none) and returns the server that answered and the set-cookie of
// the response ("" for none).
func sessionRPC(ctx context.Context, tc testgrpc.TestServiceClient, cookie string) (server, setCookie string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if cookie != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "cookie", "other=1; "+cookie)
	}
	var hdr metadata.MD
	resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.Header(&hdr))
	if err != nil {
		return "", "", err
	}
	if v := hdr.Get("set-cookie"); len(v) == 1 {
		setCookie = v[0]
	}
	return resp.GetServerId(), setCookie, nil
}

// cookieOf returns the "name=value" pair of a set-cookie header, and its
// value decoded.
func cookieOf(t *testing.T, setCookie string) (pair, decoded string) {
	t.Helper()
	pair, _, _ = strings.Cut(setCookie, ";")
	name, v, ok := strings.Cut(pair, "=")
	b, err := base64.StdEncoding.DecodeString(v)
	if !ok || name != sessionCookie || err != nil {
		t.Fatalf("set-cookie %q: want %s=<base64>", setCookie, sessionCookie)
	}
	return pair, string(b)
}

// startSession makes RPCs without cookie until one answers with a
// set-cookie, and returns the cookie, and the server that answered.
func startSession(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient) (cookie, server string) {
	t.Helper()
	for ctx.Err() == nil {
		server, setCookie, err := sessionRPC(ctx, tc, "")
		if err == nil && setCookie != "" {
			if !strings.Contains(setCookie, "; HttpOnly") || !strings.HasSuffix(setCookie, "; Max-Age=60") {
				t.Errorf("set-cookie %q; want HttpOnly and Max-Age=60", setCookie)
			}
			cookie, _ = cookieOf(t, setCookie)
			return cookie, server
		}
	}
	t.Fatal("no RPC got a session cookie")
	return "", ""
}

// verifySession makes n RPCs with cookie and checks that server answers
// each, without a new cookie.
func verifySession(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient, cookie, server string, n int) {
	t.Helper()
	for i := range n {
		got, setCookie, err := sessionRPC(ctx, tc, cookie)
		if err != nil || got != server || setCookie != "" {
			t.Fatalf("RPC %d of the session: server %q, set-cookie %q, error %v; want server %q, no new cookie", i, got, setCookie, err, server)
		}
	}
}

// sessionListener is the Listener "svc" with the stateful session
// filter: the cookie grpc-session for every path, 60 s.
func sessionListener() *v3listenerpb.Listener {
	return testutil.WithHTTPFilter(testutil.Listener("svc", "route-svc"), testutil.CookieSessionFilter(sessionCookie, "", time.Minute))
}

// TestResolver_E2E_SessionAffinity checks stateful session affinity
// (gRFC A55) with DialOptions: a response sets a cookie naming the
// endpoint; RPCs carrying it go to that endpoint, until it goes away.
//
//  1. Serve the stateful session filter and a round-robin cluster of A, B and C.
//  2. An RPC without cookie gets one (base64 of "<address>;cluster-svc", HttpOnly, Max-Age=60).
//  3. 30 RPCs with it reach the same server, without a new cookie.
//  4. That endpoint leaves the cluster: an RPC with the cookie reaches another server and gets a new cookie, which the next 30 RPCs follow.
func TestResolver_E2E_SessionAffinity(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	bs := map[string]*backend{"A": startBackend(t, "A"), "B": startBackend(t, "B"), "C": startBackend(t, "C")}
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serve := func(ids ...string) {
		var ps []*backend
		for _, id := range ids {
			ps = append(ps, bs[id])
		}
		r := chain(ps...)
		r.Listeners = []*v3listenerpb.Listener{sessionListener()}
		e.ms.Update("", r)
	}
	serve("A", "B", "C")
	tc := e.dialWithInterceptors(t, "xds:///svc")
	for _, id := range []string{"A", "B", "C"} {
		if err := waitForServer(ctx, tc, id); err != nil {
			t.Fatal(err)
		}
	}
	cookie, server := startSession(ctx, t, tc)
	_, decoded := cookieOf(t, cookie)
	if want := bs[server].addr + ";cluster-svc"; decoded != want {
		t.Errorf("cookie value %q; want %q", decoded, want)
	}
	verifySession(ctx, t, tc, cookie, server, 30)

	var rest []string
	for _, id := range []string{"A", "B", "C"} {
		if id != server {
			rest = append(rest, id)
		}
	}
	serve(rest...)
	var next, setCookie string
	for ctx.Err() == nil {
		got, sc, err := sessionRPC(ctx, tc, cookie)
		if err == nil && got != server {
			next, setCookie = got, sc
			break
		}
	}
	if setCookie == "" {
		t.Fatalf("the session moved to %q without a new cookie", next)
	}
	cookie, _ = cookieOf(t, setCookie)
	verifySession(ctx, t, tc, cookie, next, 30)
}

// TestResolver_E2E_SessionDraining checks that a session goes on on an
// endpoint that becomes DRAINING when the cluster's override_host_status
// has DRAINING, while no other RPC reaches it (gRFC A55, A60).
//
//  1. Serve the stateful session filter and a round-robin cluster of A and B, override_host_status UNKNOWN, HEALTHY, DRAINING.
//  2. Start a session; its server turns DRAINING.
//  3. 30 RPCs of the session still reach it; 30 RPCs without cookie never do.
//  4. Its endpoint leaves the cluster: the session moves.
func TestResolver_E2E_SessionDraining(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	bs := map[string]*backend{"A": startBackend(t, "A"), "B": startBackend(t, "B")}
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	cl := testutil.Cluster("cluster-svc", "eds-svc")
	cl.CommonLbConfig = &v3clusterpb.Cluster_CommonLbConfig{OverrideHostStatus: &v3corepb.HealthStatusSet{Statuses: []v3corepb.HealthStatus{
		v3corepb.HealthStatus_UNKNOWN, v3corepb.HealthStatus_HEALTHY, v3corepb.HealthStatus_DRAINING,
	}}}
	serve := func(health map[string]v3corepb.HealthStatus) {
		var eps []*v3endpointpb.LbEndpoint
		for _, id := range []string{"A", "B"} {
			if h, ok := health[id]; ok {
				eps = append(eps, lbEndpoint(bs[id].port, h))
			}
		}
		e.ms.Update("", testutil.Resources{
			Listeners: []*v3listenerpb.Listener{sessionListener()},
			Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "svc", "cluster-svc")},
			Clusters:  []*v3clusterpb.Cluster{cl},
			Endpoints: []*v3endpointpb.ClusterLoadAssignment{{ClusterName: "eds-svc", Endpoints: []*v3endpointpb.LocalityLbEndpoints{localityEndpoints("a", 0, eps...)}}},
		})
	}
	serve(map[string]v3corepb.HealthStatus{"A": v3corepb.HealthStatus_HEALTHY, "B": v3corepb.HealthStatus_HEALTHY})
	tc := e.dialWithInterceptors(t, "xds:///svc")
	for _, id := range []string{"A", "B"} {
		if err := waitForServer(ctx, tc, id); err != nil {
			t.Fatal(err)
		}
	}
	cookie, server := startSession(ctx, t, tc)
	other := map[string]string{"A": "B", "B": "A"}[server]
	serve(map[string]v3corepb.HealthStatus{server: v3corepb.HealthStatus_DRAINING, other: v3corepb.HealthStatus_HEALTHY})
	for { // until RPCs without cookie no longer reach the draining endpoint
		if err := verifyServer(ctx, tc, other, 10); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
	}
	verifySession(ctx, t, tc, cookie, server, 30)
	if err := verifyServer(ctx, tc, other, 30); err != nil {
		t.Errorf("RPCs without cookie: %v", err)
	}

	serve(map[string]v3corepb.HealthStatus{other: v3corepb.HealthStatus_HEALTHY})
	for ctx.Err() == nil {
		got, setCookie, err := sessionRPC(ctx, tc, cookie)
		if err == nil && got == other {
			if setCookie == "" {
				t.Errorf("the session moved to %s without a new cookie", other)
			}
			return
		}
	}
	t.Fatalf("the session did not move once its endpoint left")
}

// TestResolver_E2E_SessionWeightedClusters checks gRFC A60: the cookie
// names the cluster too, so that a session stays on its endpoint across a
// weighted_clusters split; and a route whose override disables the filter
// has no sessions.
//
//  1. Serve the stateful session filter, a route splitting 50/50 between cluster-a (A1, A2) and cluster-b (B), and a route for EmptyCall with the filter disabled.
//  2. Sessions started on each cluster: 30 RPCs each reach their server, their cookie names their cluster.
//  3. EmptyCalls get no cookie.
func TestResolver_E2E_SessionWeightedClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a1, a2, b := startBackend(t, "A1"), startBackend(t, "A2"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	split := testutil.WeightedClustersRoute("", testutil.ClusterWeight{Name: "cluster-a", Weight: 1}, testutil.ClusterWeight{Name: "cluster-b", Weight: 1})
	noSession := testutil.ClusterRoute("/grpc.testing.TestService/EmptyCall", "cluster-b")
	noSession.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.stateful_session": testutil.SessionDisabled()}
	e.ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{sessionListener()},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, noSession, split))},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-a", "127.0.0.1", a1.port, a2.port), testutil.Endpoints("eds-b", "127.0.0.1", b.port)},
	})
	tc := e.dialWithInterceptors(t, "xds:///svc")
	for _, id := range []string{"A1", "A2", "B"} {
		if err := waitForServer(ctx, tc, id); err != nil {
			t.Fatal(err)
		}
	}
	clusterOf := map[string]string{"A1": "cluster-a", "A2": "cluster-a", "B": "cluster-b"}
	seen := map[string]bool{}
	for len(seen) < 2 && ctx.Err() == nil {
		cookie, server := startSession(ctx, t, tc)
		_, decoded := cookieOf(t, cookie)
		if want := ";" + clusterOf[server]; !strings.HasSuffix(decoded, want) {
			t.Errorf("cookie %q of a session on %s; want it to end with %q", decoded, server, want)
		}
		verifySession(ctx, t, tc, cookie, server, 30)
		seen[clusterOf[server]] = true
	}
	var hdr metadata.MD
	if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&hdr)); err != nil || len(hdr.Get("set-cookie")) != 0 {
		t.Errorf("EmptyCall, whose route disables the filter: %v, set-cookie %q; want success without cookie", err, hdr.Get("set-cookie"))
	}
}
