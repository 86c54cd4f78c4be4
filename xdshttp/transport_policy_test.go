// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultcommonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"
)

// TestTransport_WeightedClusters: a route's weighted clusters share the
// requests by weight (3:1 over 400 requests, within a tolerance).
func TestTransport_WeightedClusters(t *testing.T) {
	e := newCliEnv(t)
	ba, bb := startBackend(t, "a", nil), startBackend(t, "b", nil)
	e.update(t, testutil.Resources{
		Listeners: clientResources("svc").Listeners,
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("rc-svc",
			testutil.VirtualHost("vh", []string{"*"}, testutil.WeightedClustersRoute("/", testutil.ClusterWeight{Name: "ca", Weight: 3}, testutil.ClusterWeight{Name: "cb", Weight: 1})))},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("ca", ""), testutil.Cluster("cb", "")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{backendEndpoints("ca", ba), backendEndpoints("cb", bb)},
	})
	got := map[string]int{}
	for range 400 {
		_, body, err := e.get(t, "http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		got[body]++
	}
	if got["a"] < 250 || got["a"] > 350 || got["a"]+got["b"] != 400 {
		t.Errorf("requests per cluster = %v, want about 300 a and 100 b", got)
	}
}

// TestTransport_EDSHealth: endpoints EDS marks UNHEALTHY or DRAINING are
// never used (gRFC A27); HEALTHY and UNKNOWN are.
func TestTransport_EDSHealth(t *testing.T) {
	e := newCliEnv(t)
	bs := []*backend{startBackend(t, "healthy", nil), startBackend(t, "unknown", nil), startBackend(t, "unhealthy", nil), startBackend(t, "draining", nil)}
	r := clientResources("svc", bs...)
	lbs := r.Endpoints[0].Endpoints[0].LbEndpoints
	for i, h := range []v3corepb.HealthStatus{v3corepb.HealthStatus_HEALTHY, v3corepb.HealthStatus_UNKNOWN, v3corepb.HealthStatus_UNHEALTHY, v3corepb.HealthStatus_DRAINING} {
		lbs[i].HealthStatus = h
	}
	e.update(t, r)
	got := map[string]int{}
	for range 20 {
		_, body, err := e.get(t, "http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		got[body]++
	}
	if got["healthy"] == 0 || got["unknown"] == 0 || got["unhealthy"] != 0 || got["draining"] != 0 {
		t.Errorf("requests per endpoint = %v, want HEALTHY and UNKNOWN only", got)
	}
}

// withFault returns l with the fault filter f first (xdsbuild's
// WithHTTPFilter).
func withFault(l *v3listenerpb.Listener, f *v3faultpb.HTTPFault) *v3listenerpb.Listener {
	return testutil.WithHTTPFilter(l, &v3httppb.HttpFilter{Name: "fault", ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: testutil.MarshalAny(f)}})
}

// TestTransport_Faults: the fault filter's abort fails requests with a
// *FaultAbortError carrying its http_status; its delay delays them.
func TestTransport_Faults(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", nil)
	r := clientResources("svc", b)
	hundred := &v3typepb.FractionalPercent{Numerator: 100, Denominator: v3typepb.FractionalPercent_HUNDRED}
	r.Listeners[0] = withFault(r.Listeners[0], &v3faultpb.HTTPFault{Abort: &v3faultpb.FaultAbort{
		ErrorType:  &v3faultpb.FaultAbort_HttpStatus{HttpStatus: 418},
		Percentage: hundred,
	}})
	e.update(t, r)
	_, _, err := e.get(t, "http://svc/")
	var fe *xdshttp.FaultAbortError
	if !errors.Is(err, xdshttp.ErrFaultAbort) || !errors.As(err, &fe) || fe.Status != 418 {
		t.Errorf("request with a 100%% abort: %v, want a *FaultAbortError with status 418", err)
	}

	r.Listeners[0] = withFault(clientResources("svc").Listeners[0], &v3faultpb.HTTPFault{Delay: &v3faultcommonpb.FaultDelay{
		FaultDelaySecifier: &v3faultcommonpb.FaultDelay_FixedDelay{FixedDelay: durationpb.New(200 * time.Millisecond)},
		Percentage:         hundred,
	}})
	r.Version = "2"
	e.update(t, r)
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		start := time.Now()
		_, _, err := e.get(t, "http://svc/")
		if err == nil && time.Since(start) >= 200*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request was delayed 200ms by the fault filter (last: %v)", err)
		}
	}
	_ = http.StatusOK
}

// TestTransport_HeaderMutations: request_headers_to_add/_to_remove of the
// route and virtual host reach the backend, the route's overwriting the
// virtual host's append (most specific first, Envoy); response headers
// to add reach the application.
func TestTransport_HeaderMutations(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", nil)
	r := clientResources("svc", b)
	vh := r.Routes[0].VirtualHosts[0]
	vh.RequestHeadersToAdd = []*v3corepb.HeaderValueOption{
		{Header: &v3corepb.HeaderValue{Key: "x-level", Value: "vh"}, AppendAction: v3corepb.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD},
		{Header: &v3corepb.HeaderValue{Key: "x-vh", Value: "1"}},
	}
	vh.Routes[0].RequestHeadersToAdd = []*v3corepb.HeaderValueOption{{Header: &v3corepb.HeaderValue{Key: "x-level", Value: "route"}, AppendAction: v3corepb.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}}
	vh.Routes[0].RequestHeadersToRemove = []string{"x-secret"}
	vh.Routes[0].ResponseHeadersToAdd = []*v3corepb.HeaderValueOption{{Header: &v3corepb.HeaderValue{Key: "x-served-by", Value: "mesh"}}}
	e.update(t, r)
	req, _ := http.NewRequest("GET", "http://svc/", nil)
	req.Header.Set("X-Secret", "s")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := <-b.reqs
	if v := got.Header.Values("X-Level"); len(v) != 1 || v[0] != "vh" {
		t.Errorf("backend's x-level = %q, want [vh] (the virtual host's overwrite applies last)", v)
	}
	if got.Header.Get("X-Vh") != "1" || got.Header.Get("X-Secret") != "" {
		t.Errorf("backend's headers %v: want x-vh 1 and no x-secret", got.Header)
	}
	if resp.Header.Get("X-Served-By") != "mesh" {
		t.Errorf("response's x-served-by = %q, want mesh", resp.Header.Get("X-Served-By"))
	}
	if req.Header.Get("X-Secret") != "s" {
		t.Error("the application's request was modified")
	}
}

// TestTransport_PriorityFailover: requests go to priority 0 while it is
// healthy, to priority 1 when EDS marks priority 0's endpoints unhealthy
// (Envoy's priority load), and back.
func TestTransport_PriorityFailover(t *testing.T) {
	e := newCliEnv(t)
	p0, p1 := startBackend(t, "p0", nil), startBackend(t, "p1", nil)
	cla := func(p0Health v3corepb.HealthStatus) *v3endpointpb.ClusterLoadAssignment {
		a, b := backendEndpoints("c", p0), backendEndpoints("c", p1)
		a.Endpoints[0].LbEndpoints[0].HealthStatus = p0Health
		b.Endpoints[0].Priority = 1
		b.Endpoints[0].Locality = &v3corepb.Locality{Zone: "z1"}
		a.Endpoints = append(a.Endpoints, b.Endpoints[0])
		return a
	}
	r := clientResources("svc")
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{cla(v3corepb.HealthStatus_HEALTHY)}
	e.update(t, r)
	want := func(backend string) {
		t.Helper()
		deadline := time.Now().Add(defaultTestTimeout)
		for n := 0; n < 10; {
			_, body, err := e.get(t, "http://svc/")
			if err != nil {
				t.Fatal(err)
			}
			if body == backend {
				n++
			} else {
				n = 0
			}
			if time.Now().After(deadline) {
				t.Fatalf("requests do not all go to %s", backend)
			}
		}
	}
	want("p0")
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{cla(v3corepb.HealthStatus_UNHEALTHY)}
	r.Version = "2"
	e.update(t, r)
	want("p1")
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{cla(v3corepb.HealthStatus_HEALTHY)}
	r.Version = "3"
	e.update(t, r)
	want("p0")
}

// TestTransport_PriorityLoad: with half of priority 0 ejected by outlier
// detection, priority 0 is 70 % healthy (50 % × the overprovisioning
// factor 1.4) and takes 70 % of the requests, priority 1 the other 30 %
// (Envoy's priority load; gRPC would stay on priority 0).
func TestTransport_PriorityLoad(t *testing.T) {
	e := newCliEnv(t)
	bad := startBackend(t, "bad", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	good, p1 := startBackend(t, "good", nil), startBackend(t, "p1", nil)
	a, b := backendEndpoints("c", bad, good), backendEndpoints("c", p1)
	b.Endpoints[0].Priority = 1
	b.Endpoints[0].Locality = &v3corepb.Locality{Zone: "z1"}
	a.Endpoints = append(a.Endpoints, b.Endpoints[0])
	r := clientResources("svc")
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{a}
	r.Clusters[0].OutlierDetection = &v3clusterpb.OutlierDetection{
		Interval:                       durationpb.New(50 * time.Millisecond),
		BaseEjectionTime:               durationpb.New(time.Minute),
		MaxEjectionPercent:             wrapperspb.UInt32(50),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(2),
		FailurePercentageRequestVolume: wrapperspb.UInt32(2),
	}
	e.update(t, r)
	deadline := time.Now().Add(defaultTestTimeout)
	for bads := 1; bads > 0; { // until "bad" is ejected: 20 requests without it
		if time.Now().After(deadline) {
			t.Fatal("the endpoint answering 503 was not ejected")
		}
		bads = 0
		for range 20 {
			resp, err := e.hc.Get("http://svc/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get("X-Backend") == "bad" {
				bads++
			}
		}
	}
	got := map[string]int{}
	for range 1000 {
		_, body, err := e.get(t, "http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		got[body]++
	}
	if got["p1"] < 220 || got["p1"] > 380 || got["bad"] != 0 {
		t.Errorf("requests = %v, want about 700 good and 300 p1", got)
	}
}

// TestTransport_Rewrites: prefix_rewrite replaces the matched prefix,
// keeping the query; regex_rewrite replaces every match with capture
// groups; host_rewrite_literal replaces the Host sent, after the virtual
// host was selected with the original one.
func TestTransport_Rewrites(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", nil)
	r := clientResources("svc", b)
	vh := r.Routes[0].VirtualHosts[0]
	prefixRoute := &v3routepb.Route{Match: prefix("/old/"), Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
		ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}, PrefixRewrite: "/new/",
		HostRewriteSpecifier: &v3routepb.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "backend.internal"},
	}}}
	regexRoute := &v3routepb.Route{Match: prefix("/service/"), Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
		ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"},
		RegexRewrite: &v3matcherpb.RegexMatchAndSubstitute{
			Pattern:      &v3matcherpb.RegexMatcher{Regex: "^/service/([^/]+)(/.*)$"},
			Substitution: `\2/instance/\1`,
		},
	}}}
	vh.Routes = []*v3routepb.Route{prefixRoute, regexRoute, vh.Routes[0]}
	e.update(t, r)
	for _, tc := range []struct{ url, path, query, host string }{
		{"http://svc/old/a/b?x=1", "/new/a/b", "x=1", "backend.internal"},
		{"http://svc/service/foo/v1/api", "/v1/api/instance/foo", "", "svc"},
		{"http://svc/other", "/other", "", "svc"},
	} {
		if _, _, err := e.get(t, tc.url); err != nil {
			t.Fatal(err)
		}
		got := <-b.reqs
		if got.URL.Path != tc.path || got.URL.RawQuery != tc.query || got.Host != tc.host {
			t.Errorf("GET %s: backend got path %q query %q host %q, want %q %q %q", tc.url, got.URL.Path, got.URL.RawQuery, got.Host, tc.path, tc.query, tc.host)
		}
	}
}

// TestTransport_RingHash: a ring_hash cluster with a header hash policy
// sends the requests of one header value to one endpoint, and spreads
// the values over the endpoints; a cookie policy works the same.
func TestTransport_RingHash(t *testing.T) {
	for _, kind := range []string{"header", "cookie"} {
		t.Run(kind, func(t *testing.T) {
			e := newCliEnv(t)
			bs := []*backend{startBackend(t, "b1", nil), startBackend(t, "b2", nil), startBackend(t, "b3", nil)}
			r := clientResources("svc", bs...)
			r.Clusters[0].LbPolicy = v3clusterpb.Cluster_RING_HASH
			hp := &v3routepb.RouteAction_HashPolicy{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Header_{Header: &v3routepb.RouteAction_HashPolicy_Header{HeaderName: "x-user"}}}
			if kind == "cookie" {
				hp = &v3routepb.RouteAction_HashPolicy{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Cookie_{Cookie: &v3routepb.RouteAction_HashPolicy_Cookie{Name: "user"}}}
			}
			r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().HashPolicy = []*v3routepb.RouteAction_HashPolicy{hp}
			e.update(t, r)
			seen := map[string]bool{}
			for u := range 30 {
				user := "user-" + string(rune('a'+u%26)) + string(rune('a'+u/26))
				var first string
				for i := range 4 {
					req, _ := http.NewRequest("GET", "http://svc/", nil)
					if kind == "header" {
						req.Header.Set("X-User", user)
					} else {
						req.AddCookie(&http.Cookie{Name: "user", Value: user})
					}
					resp, err := e.hc.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					got := resp.Header.Get("X-Backend")
					if i == 0 {
						first = got
					} else if got != first {
						t.Fatalf("user %s: answered by %s then %s, want one endpoint", user, first, got)
					}
				}
				seen[first] = true
			}
			if len(seen) < 2 {
				t.Errorf("30 users all went to %v, want them spread", seen)
			}
		})
	}
}

// TestTransport_DropOverloads: a ClusterLoadAssignment dropping 100 % of
// the requests fails them with ErrDropped, naming the category (gRFC A27).
func TestTransport_DropOverloads(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", nil)
	r := clientResources("svc", b)
	r.Endpoints[0].Policy = &v3endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "throttle", DropPercentage: &v3typepb.FractionalPercent{Numerator: 100, Denominator: v3typepb.FractionalPercent_HUNDRED},
	}}}
	e.update(t, r)
	if _, _, err := e.get(t, "http://svc/"); !errors.Is(err, xdshttp.ErrDropped) || !strings.Contains(err.Error(), "throttle") {
		t.Errorf("GET with a 100%% drop: %v, want ErrDropped naming \"throttle\"", err)
	}
}

// TestTransport_MaxStreamDuration: the route's max_stream_duration caps
// the request as its timeout does.
func TestTransport_MaxStreamDuration(t *testing.T) {
	e := newCliEnv(t)
	release := make(chan struct{})
	defer close(release)
	b := startBackend(t, "slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	r := clientResources("svc", b)
	r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(50 * time.Millisecond)}
	e.update(t, r)
	if _, _, err := e.get(t, "http://svc/"); !errors.Is(err, xdshttp.ErrTimeout) {
		t.Errorf("GET with max_stream_duration 50ms to a backend that does not answer: %v, want ErrTimeout", err)
	}
}

// TestTransport_PriorityLoadEDSHealth: priority 0 with one of its two
// endpoints UNHEALTHY in EDS is 70 % healthy (50 % × 1.4), so priority 1
// takes 30 % of the requests, as Envoy weighs a priority against all of
// its hosts (gRPC would keep every request on priority 0).
func TestTransport_PriorityLoadEDSHealth(t *testing.T) {
	e := newCliEnv(t)
	down, up, p1 := startBackend(t, "down", nil), startBackend(t, "up", nil), startBackend(t, "p1", nil)
	a, b := backendEndpoints("c", down, up), backendEndpoints("c", p1)
	a.Endpoints[0].LbEndpoints[0].HealthStatus = v3corepb.HealthStatus_UNHEALTHY
	b.Endpoints[0].Priority = 1
	b.Endpoints[0].Locality = &v3corepb.Locality{Zone: "z1"}
	a.Endpoints = append(a.Endpoints, b.Endpoints[0])
	r := clientResources("svc")
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{a}
	e.update(t, r)
	got := map[string]int{}
	for range 1000 {
		_, body, err := e.get(t, "http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		got[body]++
	}
	if got["p1"] < 220 || got["p1"] > 380 || got["down"] != 0 {
		t.Errorf("requests = %v, want about 700 up and 300 p1", got)
	}
}
