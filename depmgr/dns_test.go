// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestDepMgr_LogicalDNS_Resolved checks a LOGICAL_DNS cluster resolved by
// the DNSResolver given (R-16.4, gRFC A61): one locality of priority 0
// and weight 1 holding one endpoint with every address, IPv6 bracketed.
func TestDepMgr_LogicalDNS_Resolved(t *testing.T) {
	ctx := testContext(t)
	r := newFakeResolver()
	r.set("dns.example.com", nil, "10.0.0.1", "2001:db8::1")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "dns")),
		Clusters:  clusters(testutil.LogicalDNSCluster("dns", "dns.example.com", 443)),
	}, depmgr.WithDNSResolver(r))
	cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	c := cfg.Cluster("dns").Config
	if c == nil || c.ResolutionNote != nil || c.EndpointsVersion != "" || c.Endpoints.Raw() != nil {
		t.Fatalf("dns = %+v, want endpoints without note, version or raw resource", cfg.Cluster("dns"))
	}
	want := []resources.Locality{{Priority: 0, Weight: 1, Endpoints: []resources.Endpoint{{
		Addresses: []string{"10.0.0.1:443", "[2001:db8::1]:443"}, Weight: 1, HealthStatus: resources.HealthStatusUnknown,
	}}}}
	if got := c.Endpoints.Localities; len(got) != 1 || got[0].Priority != 0 || got[0].Weight != 1 || len(got[0].Endpoints) != 1 ||
		!slices.Equal(got[0].Endpoints[0].Addresses, want[0].Endpoints[0].Addresses) || got[0].Endpoints[0].Weight != 1 {
		t.Fatalf("dns localities = %+v, want %+v", got, want)
	}
}

// TestDepMgr_LogicalDNS_FailuresAndRefresh checks the lookups of a
// LOGICAL_DNS host in fake time (R-16.6; the package doc's policy):
//  1. The first lookup fails: the cluster is published with an empty
//     endpoint set and a ResolutionNote.
//  2. The next lookup, 1 s (± 20 %) later, finds an address: published.
//  3. The one after, one refresh interval later, fails: logged only, the
//     address stays, nothing is published.
//  4. ResolveNow looks the host up at once and publishes a new address.
//  5. The cluster leaves the route table: the lookups stop.
func TestDepMgr_LogicalDNS_FailuresAndRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const refresh = time.Minute
		r := newFakeResolver()
		r.set("dns.example.com", errors.New("SERVFAIL"))
		res := testutil.Resources{
			Listeners: listeners(testutil.Listener("svc", "route-svc")),
			Routes:    routes(testutil.RouteConfig("route-svc", "svc", "dns")),
			Clusters:  clusters(testutil.LogicalDNSCluster("dns", "dns.example.com", 443)),
		}
		e, ctx := newBubbleEnv(t, res, depmgr.WithDNSResolver(r), depmgr.WithDNSRefreshInterval(refresh))

		cfg := e.rec.waitForChanged(ctx, t, "the failed lookup", func(*depmgr.XDSConfig) bool { return true })
		c := cfg.Cluster("dns").Config
		if c.ResolutionNote == nil || len(c.Endpoints.Localities) != 0 {
			t.Fatalf("dns = %s (note %v), want no endpoints and a note", describeLeaf(c), c.ResolutionNote)
		}
		failed := time.Now()

		r.set("dns.example.com", nil, "10.0.0.1")
		cfg = e.rec.waitForChanged(ctx, t, "the address", func(*depmgr.XDSConfig) bool { return true })
		if got := describeLeaf(cfg.Cluster("dns").Config); got != "[10.0.0.1:443]" {
			t.Fatalf("dns = %s, want [10.0.0.1:443]", got)
		}
		if d := time.Since(failed); d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Errorf("retried %v after the failure, want 1s ± 20%%", d)
		}
		found := time.Now()

		r.set("dns.example.com", errors.New("SERVFAIL"))
		drain(r.lookups)
		if _, err := receive(ctx, r.lookups); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(found); d != refresh {
			t.Errorf("looked up again %v after success, want the refresh interval %v", d, refresh)
		}
		synctest.Wait() // the failure is handled
		if len(e.rec.events) > 0 {
			t.Fatalf("a failure after success was published: %v", <-e.rec.events)
		}

		r.set("dns.example.com", nil, "10.0.0.2")
		e.m.ResolveNow()
		before := time.Now()
		cfg = e.rec.waitForChanged(ctx, t, "the new address", func(*depmgr.XDSConfig) bool { return true })
		if got := describeLeaf(cfg.Cluster("dns").Config); got != "[10.0.0.2:443]" || time.Since(before) != 0 {
			t.Fatalf("dns = %s after %v, want [10.0.0.2:443] at once", got, time.Since(before))
		}

		cs, es := edsChain("c1")
		res.Routes = routes(testutil.RouteConfig("route-svc", "svc", "c1"))
		res.Clusters, res.Endpoints = cs, es
		e.ms.Update("", res)
		e.rec.waitForChanged(ctx, t, "c1", func(cfg *depmgr.XDSConfig) bool { return cfg.Cluster("c1") != nil })
		synctest.Wait()
		drain(r.lookups)
		time.Sleep(10 * refresh) // fake time: ten refresh intervals pass
		synctest.Wait()
		if len(r.lookups) > 0 {
			t.Fatalf("the host was looked up after its cluster went away")
		}
	})
}

// TestDepMgr_LogicalDNS_RetryBackoff pins, in fake time, the delays
// between the lookups of a LOGICAL_DNS host that keeps failing (the
// package doc's policy): 1 s, then 1.6 times longer each time, each
// within ± 20 %, at most the refresh interval; with a refresh interval
// under a second, every retry waits the refresh interval.
func TestDepMgr_LogicalDNS_RetryBackoff(t *testing.T) {
	for _, tc := range []struct {
		refresh time.Duration
		nominal []time.Duration // of the first retries; the last one repeats
	}{
		{10 * time.Second, []time.Duration{time.Second, 1600 * time.Millisecond, 2560 * time.Millisecond, 4096 * time.Millisecond, 6553600 * time.Microsecond, 10 * time.Second}},
		{500 * time.Millisecond, []time.Duration{500 * time.Millisecond}},
	} {
		t.Run(tc.refresh.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newFakeResolver()
				r.set("dns.example.com", errors.New("SERVFAIL"))
				_, ctx := newBubbleEnv(t, testutil.Resources{
					Listeners: listeners(testutil.Listener("svc", "route-svc")),
					Routes:    routes(testutil.RouteConfig("route-svc", "svc", "dns")),
					Clusters:  clusters(testutil.LogicalDNSCluster("dns", "dns.example.com", 443)),
				}, depmgr.WithDNSResolver(r), depmgr.WithDNSRefreshInterval(tc.refresh))
				if _, err := receive(ctx, r.lookups); err != nil {
					t.Fatal(err)
				}
				last := time.Now()
				for i := range len(tc.nominal) + 3 {
					if _, err := receive(ctx, r.lookups); err != nil {
						t.Fatal(err)
					}
					nominal := tc.nominal[min(i, len(tc.nominal)-1)]
					lo, hi := nominal*4/5, nominal*6/5+1
					if got := time.Since(last); got < lo || got > hi {
						t.Errorf("retry %d came %v after the previous lookup, want %v ± 20%%", i, got, nominal)
					}
					last = time.Now()
				}
			})
		})
	}
}

// drain empties ch.
func drain[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
