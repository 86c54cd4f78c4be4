// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"slices"
	"testing"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
)

// TestDepMgr_Close_CancelsEverything checks Close: every watch of the
// Manager is cancelled (the client watches nothing any more), every DNS
// goroutine has returned (the leak check of TestMain), the Watcher is not
// called afterwards, and Close, SubscribeToCluster and ResolveNow are
// harmless after Close.
func TestDepMgr_Close_CancelsEverything(t *testing.T) {
	ctx := testContext(t)
	r := newFakeResolver()
	r.set("dns.example.com", nil, "10.0.0.1")
	cs, es := edsChain("c1")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "agg", "c1")),
		Clusters:  append(cs, testutil.AggregateCluster("agg", "dns", "c1"), testutil.LogicalDNSCluster("dns", "dns.example.com", 53)),
		Endpoints: es,
	}, depmgr.WithDNSResolver(r))
	e.rec.waitForUpdate(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	cancel := e.m.SubscribeToCluster("dyn")

	e.m.Close()
	if got := e.c.Dump().GetGenericXdsConfigs(); len(got) != 0 {
		t.Fatalf("after Close the client still watches %d resources: %v", len(got), got)
	}
	e.m.Close()
	cancel()
	e.m.SubscribeToCluster("other")()
	e.m.ResolveNow()
	e.rec.expectNoCall(t)
}

// TestDepMgr_Versions_InSnapshot checks that every resource of a
// snapshot carries the version_info of the response that delivered its
// value (handed over with it by client.WatchVersioned):
//  1. Everything comes at version v1.
//  2. Only eds-c1 changes, at v2: its version is v2; the others, resent
//     unchanged at v2, keep v1.
func TestDepMgr_Versions_InSnapshot(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	res := testutil.Resources{
		Version:   "v1",
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "agg", "c1")),
		Clusters:  append(cs, testutil.AggregateCluster("agg", "c1")),
		Endpoints: es,
	}
	e := newEnv(t, res)
	check := func(cfg *depmgr.XDSConfig, want ...string) {
		t.Helper()
		c1, agg := cfg.Cluster("c1").Config, cfg.Cluster("agg").Config
		got := []string{cfg.ListenerVersion, cfg.RouteConfigVersion, agg.ClusterVersion, c1.ClusterVersion, c1.EndpointsVersion}
		if !slices.Equal(got, want) {
			t.Errorf("versions of svc, route-svc, agg, c1, eds-c1 = %q, want %q", got, want)
		}
	}
	check(e.rec.waitForUpdate(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true }),
		"v1", "v1", "v1", "v1", "v1")

	res.Version = "v2"
	res.Endpoints = endpoints(testutil.Endpoints("eds-c1", "127.0.0.1", 9000))
	e.ms.Update("", res)
	check(e.rec.waitForUpdate(ctx, t, "the new endpoints", func(*depmgr.XDSConfig) bool { return true }),
		"v1", "v1", "v1", "v1", "v2")
}
