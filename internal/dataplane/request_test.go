// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// httpHeaders is the routing.HeaderSource of an http.Request, as a data
// path for net/http would give it.
type httpHeaders struct{ r *http.Request }

func (h httpHeaders) Header(name string) (string, bool) {
	vs := h.r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return strings.Join(vs, ","), true
}

// TestConfig_HTTPRequest follows an HTTP request through a Config, as an
// http.RoundTripper would: the route by path and headers (from the
// request, through a HeaderSource), the weighted cluster, its priority,
// drops and the circuit breaker, a locality, an endpoint; and the route's
// hash from a header.
func TestConfig_HTTPRequest(t *testing.T) {
	h := resources.HealthStatusHealthy
	api := leaf("api", roundRobin, locality("z0", 0, 1, endpoint("10.0.0.1:80", h, 1)), locality("z1", 1, 1, endpoint("10.0.1.1:80", h, 1)))
	web := leaf("web", roundRobin, locality("z0", 0, 1, endpoint("10.0.2.1:80", h, 1)))
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []resources.Route{
		{
			Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/api/", CaseSensitive: true, Headers: []resources.HeaderMatcher{
				{Name: "x-user", Kind: resources.HeaderMatchPresent, Present: true},
			}},
			Action: resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: "api", HashPolicies: []resources.HashPolicy{{Kind: resources.HashPolicyHeader, HeaderName: "x-user"}}},
		},
		{Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true}, Action: resources.RouteAction{Kind: resources.RouteActionWeightedClusters, WeightedClusters: []resources.WeightedCluster{{Name: "web", Weight: 1}, {Name: "api", Weight: 0}}}},
	}}}}
	byName := map[string]*depmgr.ClusterConfig{"api": api, "web": web}
	cfg, err := Build(Snapshot{RouteConfig: rc, VirtualHost: &rc.VirtualHosts[0], Cluster: func(n string) *depmgr.ClusterResult {
		return &depmgr.ClusterResult{Name: n, Config: byName[n]}
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var breakers Breakers
	send := func(req *http.Request) (cluster, addr string, hash uint64, hashed bool) {
		t.Helper()
		hs := &routing.Headers{Source: httpHeaders{req}}
		rt := cfg.Route(req.URL.Path, hs)
		if rt == nil || !rt.Forwards() {
			t.Fatalf("%s: no forwarding route", req.URL)
		}
		tg := rt.PickTarget()
		c := cfg.Clusters[tg.Cluster]
		if c.Err != nil {
			t.Fatalf("%s: cluster %s: %v", req.URL, tg.Cluster, c.Err)
		}
		p := c.Priorities[0]
		if _, drop := p.PickDrop(); drop {
			t.Fatalf("%s: dropped", req.URL)
		}
		counter := breakers.Counter(p.BreakerKey())
		if !Acquire(counter, p.MaxRequests) {
			t.Fatalf("%s: circuit breaker open", req.URL)
		}
		defer counter.Add(-1)
		hash, hashed = rt.RequestHash(hs, 7)
		return tg.Cluster, p.Localities[0].Endpoints[0].Addresses[0], hash, hashed
	}
	req, _ := http.NewRequest("GET", "http://svc/api/users?x=1", nil)
	req.Header.Set("X-User", "alice")
	if c, a, _, hashed := send(req); c != "api" || a != "10.0.0.1:80" || !hashed {
		t.Errorf("/api/users with x-user: %s, %s, hashed %v; want api, 10.0.0.1:80, hashed", c, a, hashed)
	}
	req.Header.Del("X-User")
	if c, a, _, hashed := send(req); c != "web" || a != "10.0.2.1:80" || hashed {
		t.Errorf("/api/users without x-user: %s, %s, hashed %v; want web, 10.0.2.1:80, not hashed", c, a, hashed)
	}
}

// TestBreakers checks that the counters of one key are shared and that
// Acquire refuses the request over the limit without counting it.
func TestBreakers(t *testing.T) {
	var b Breakers
	c := b.Counter("c\x00eds")
	if b.Counter("c\x00eds") != c || b.Counter("d\x00eds") == c {
		t.Fatal("Counter: one counter per key, shared")
	}
	var got []bool
	for range 3 {
		got = append(got, Acquire(c, 2))
	}
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("Acquire with max_requests 2, three times: %v; want two, then refused", got)
	}
	if c.Load() != 2 {
		t.Fatalf("count %d after a refusal; want 2", c.Load())
	}
}

// TestPriority_PickDrop checks the drop categories in order: 100 %
// drops everything in the first category that has it, 0 % nothing.
func TestPriority_PickDrop(t *testing.T) {
	p := &Priority{Drops: []resources.DropOverload{{Category: "none", PerMillion: 0}, {Category: "all", PerMillion: 1_000_000}}}
	for range 100 {
		if i, drop := p.PickDrop(); !drop || i != 1 {
			t.Fatalf("PickDrop = %d, %v; want 1, true", i, drop)
		}
	}
	if _, drop := (&Priority{}).PickDrop(); drop {
		t.Fatal("no drop category: dropped")
	}
}

// TestInjectFault checks fault injection (gRFC A33): header matchers, a
// fixed delay that ends with the context, aborts of a fixed status and
// from headers (a gRPC status OK aborts nothing), percentages from
// headers capped by the config, and max_active_faults counting the
// faults in progress.
func TestInjectFault(t *testing.T) {
	hdrs := func(kv ...string) *routing.Headers {
		m := mapSource{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &routing.Headers{Source: m}
	}
	all := resources.FaultPercentage{PerMillion: 1_000_000, Unit: 10_000}
	none := resources.FaultPercentage{Unit: 10_000}
	ctx := context.Background()

	abort, release, err := InjectFault(ctx, &resources.HTTPFault{Abort: &resources.FaultAbort{Kind: resources.FaultAbortHTTPStatus, Status: 503, Percentage: all}}, hdrs())
	if err != nil || abort == nil || abort.GRPC || abort.Code != 503 || ActiveFaults() != 1 {
		t.Fatalf("http_status 503 at 100 %%: %+v, %v, %d active; want an HTTP 503 abort, 1 active", abort, err, ActiveFaults())
	}
	release()
	if ActiveFaults() != 0 {
		t.Fatalf("after release: %d active", ActiveFaults())
	}
	withHeaders := &resources.HTTPFault{
		Headers: []resources.HeaderMatcher{{Name: "x-fault", Kind: resources.HeaderMatchExact, Value: "on"}},
		Abort:   &resources.FaultAbort{Kind: resources.FaultAbortGRPCStatus, Status: 14, Percentage: all},
	}
	if abort, release, _ := InjectFault(ctx, withHeaders, hdrs()); abort != nil {
		t.Errorf("header matcher not matched: abort %+v", abort)
	} else {
		release()
	}
	if abort, release, _ := InjectFault(ctx, withHeaders, hdrs("x-fault", "on")); abort == nil || !abort.GRPC || abort.Code != 14 {
		t.Errorf("header matcher matched: abort %+v; want gRPC 14", abort)
	} else {
		release()
	}
	fromHeader := &resources.HTTPFault{Abort: &resources.FaultAbort{Kind: resources.FaultAbortFromHeader, Percentage: all}}
	for _, tc := range []struct {
		kv   []string
		want *Abort
	}{
		{nil, nil},
		{[]string{"x-envoy-fault-abort-grpc-request", "0"}, nil},
		{[]string{"x-envoy-fault-abort-grpc-request", "8"}, &Abort{GRPC: true, Code: 8}},
		{[]string{"x-envoy-fault-abort-request", "429"}, &Abort{Code: 429}},
		{[]string{"x-envoy-fault-abort-request", "429", "x-envoy-fault-abort-request-percentage", "0"}, nil},
		{[]string{"x-envoy-fault-abort-request", "nope"}, nil},
	} {
		abort, release, _ := InjectFault(ctx, fromHeader, hdrs(tc.kv...))
		release()
		if (abort == nil) != (tc.want == nil) || abort != nil && *abort != *tc.want {
			t.Errorf("header abort with %q: %+v; want %+v", tc.kv, abort, tc.want)
		}
	}
	// A percentage from a header never exceeds the config's.
	capped := &resources.HTTPFault{Abort: &resources.FaultAbort{Kind: resources.FaultAbortFromHeader, Percentage: none}}
	if abort, release, _ := InjectFault(ctx, capped, hdrs("x-envoy-fault-abort-request", "503", "x-envoy-fault-abort-request-percentage", "100")); abort != nil {
		t.Errorf("header percentage over a 0 %% config: abort %+v", abort)
	} else {
		release()
	}

	// A delay ends with the context, and counts as an active fault until
	// released; max_active_faults 1 lets no second fault in meanwhile.
	// The other delay runs its whole hour, of the bubble's fake clock.
	synctest.Test(t, func(t *testing.T) {
		one := uint32(1)
		delay := &resources.HTTPFault{MaxActiveFaults: &one, Delay: &resources.FaultDelay{Fixed: time.Hour, Percentage: all}}
		dctx, cancel := context.WithCancel(ctx)
		type result struct {
			release func()
			err     error
		}
		res := make(chan result, 1)
		go func() {
			_, release, err := InjectFault(dctx, delay, hdrs())
			res <- result{release, err}
		}()
		synctest.Wait()
		if ActiveFaults() != 1 {
			t.Fatalf("during a delay: %d active faults; want 1", ActiveFaults())
		}
		if abort, release, _ := InjectFault(ctx, &resources.HTTPFault{MaxActiveFaults: &one, Abort: &resources.FaultAbort{Kind: resources.FaultAbortHTTPStatus, Status: 500, Percentage: all}}, hdrs()); abort != nil {
			t.Errorf("second fault with max_active_faults 1: abort %+v; want none", abort)
		} else {
			release()
		}
		cancel()
		r := <-res
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("delay ended by the context: %v; want context.Canceled", r.err)
		}
		r.release()
		start := time.Now()
		_, release, err := InjectFault(ctx, delay, hdrs())
		release()
		if err != nil || time.Since(start) != time.Hour {
			t.Errorf("delay: %v after %v; want none after 1h", err, time.Since(start))
		}
	})
	if ActiveFaults() != 0 {
		t.Errorf("after release: %d active", ActiveFaults())
	}
}

// mapSource is a routing.HeaderSource of fixed headers.
type mapSource map[string]string

func (m mapSource) Header(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// TestSession checks the cookie of a session (gRFC A55, A60): its value
// and cluster, invalid addresses left out, the cookie's cluster chosen
// when the route has it, the set-cookie only when the pick differs, and
// the cookie path rules.
func TestSession(t *testing.T) {
	cfg := &resources.CookieSession{Name: "s", Path: "/pkg.Svc", TTL: 90 * time.Second}
	rt := &Route{Targets: []Target{{Cluster: "a"}, {Cluster: "b"}}}
	enc := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }

	s, target := NewSession(cfg, []string{"other=1; s=" + enc("10.0.0.1:80,bad,[::1]:81;b")}, rt, &rt.Targets[0])
	if target != &rt.Targets[1] || len(s.Override) != 2 || s.Override[0] != "10.0.0.1:80" || s.Override[1] != "[::1]:81" {
		t.Fatalf("NewSession: target %+v, override %q; want b, the two valid addresses", target, s.Override)
	}
	if _, ok := s.SetCookie(); ok {
		t.Error("SetCookie before a pick: want none")
	}
	s.Picked("10.0.0.1:80,bad,[::1]:81", "b")
	if v, ok := s.SetCookie(); ok {
		t.Errorf("SetCookie for the cookie's endpoint and cluster: %q; want none", v)
	}
	s.Picked("10.0.0.2:80", "b")
	if v, ok := s.SetCookie(); !ok || v != "s="+enc("10.0.0.2:80;b")+"; HttpOnly; Path=/pkg.Svc; Max-Age=90" {
		t.Errorf("SetCookie for another endpoint: %q, %v", v, ok)
	}
	if s, target := NewSession(cfg, nil, rt, &rt.Targets[0]); target != &rt.Targets[0] || s.Override != nil {
		t.Errorf("no cookie: target %+v, override %q; want the given target, none", target, s.Override)
	}

	for _, tc := range []struct {
		cookie, path string
		want         bool
	}{
		{"", "/a/b", true}, {"/a", "/a/b", true}, {"/a", "/a", true}, {"/a/", "/a/b", true}, {"/a", "/ab", false}, {"/b", "/a", false},
	} {
		if got := CookiePathMatches(tc.cookie, tc.path); got != tc.want {
			t.Errorf("CookiePathMatches(%q, %q) = %v; want %v", tc.cookie, tc.path, got, tc.want)
		}
	}
}

// TestSessionTable checks that an update keeps the connection of the
// addresses that stay, and says which are DRAINING and allowed.
func TestSessionTable(t *testing.T) {
	type conn struct{ id int }
	tab := NewSessionTable[conn]()
	tab.Update([]SessionHost{{Addr: "a", Addrs: "a", Health: resources.HealthStatusHealthy, Allowed: true}, {Addr: "b", Addrs: "b", Health: resources.HealthStatusHealthy, Allowed: true}})
	c := &conn{1}
	tab.Entry("a").Conn.Store(c)
	m := tab.Update([]SessionHost{{Addr: "a", Addrs: "a", Health: resources.HealthStatusDraining, Allowed: true}, {Addr: "c", Addrs: "c", Health: resources.HealthStatusUnknown}})
	if e := tab.Entry("a"); e != m["a"] || e.Conn.Load() != c || !e.Draining {
		t.Errorf("entry a after the update: %+v; want its connection kept, draining", e)
	}
	if tab.Entry("b") != nil || tab.Entry("c").Allowed {
		t.Errorf("entries b (%+v), c (%+v): want b gone, c not allowed", tab.Entry("b"), tab.Entry("c"))
	}
}
