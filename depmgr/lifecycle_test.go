// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// TestDepMgr_Close_CancelsEverything checks Close: every watch of the
// Manager is cancelled (the client watches nothing any more), every DNS
// goroutine has returned (the leak check of TestMain), the watcher is not
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
	e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
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
	check(e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true }),
		"v1", "v1", "v1", "v1", "v1")

	res.Version = "v2"
	res.Endpoints = endpoints(testutil.Endpoints("eds-c1", "127.0.0.1", 9000))
	e.ms.Update("", res)
	check(e.rec.waitForChanged(ctx, t, "the new endpoints", func(*depmgr.XDSConfig) bool { return true }),
		"v1", "v1", "v1", "v1", "v2")
}

// TestDepMgr_CloseRecreateCycles checks through the Manager: a
// Manager of a target closed and a new one made at once (a component
// restarted in place), 20 times in a row, publishes the complete
// configuration each time within 1 s. Alone on the client (the stream
// closes and reopens, R-10.2) and beside another watch of the Listener
// (the stream stays; the RouteConfiguration, Cluster and
// ClusterLoadAssignment are unwatched and watched again). SotW and delta,
// in memory in a testing/synctest bubble and over gRPC. On the old code
// SotW lost the resources.
func TestDepMgr_CloseRecreateCycles(t *testing.T) {
	cs, es := edsChain("c1")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1")),
		Clusters:  cs,
		Endpoints: es,
	}
	// Each cycle must publish within deadline: 1 s of fake time in a
	// synctest bubble (the target), 5 s of real time over gRPC, where a
	// loaded CI machine can stall a round trip.
	run := func(t *testing.T, ms *testutil.ManagementServer, keep bool, deadline time.Duration, opts ...client.Option) {
		ms.Update("", res)
		c := newClient(t, ms, opts...)
		if keep {
			defer client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{})()
		}
		for i := range 20 {
			rec := newRecorder()
			m := depmgr.New(c, "svc", rec)
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			cfg := rec.waitForChanged(ctx, t, fmt.Sprintf("cycle %d", i), func(*depmgr.XDSConfig) bool { return true })
			cancel()
			if got := addresses(cfg.Cluster("c1").Config.Endpoints); len(got) != 1 {
				t.Fatalf("cycle %d: endpoints of c1 = %v", i, got)
			}
			m.Close()
		}
	}
	for _, keep := range []bool{false, true} {
		for _, proto := range []string{"sotw", "delta"} {
			var opts []client.Option
			if proto == "delta" {
				opts = append(opts, client.WithDelta())
			}
			name := fmt.Sprintf("keep-listener=%v/%s", keep, proto)
			t.Run(name+"/in-memory", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					run(t, testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true}), keep, time.Second, opts...)
				})
			})
			t.Run(name+"/grpc", func(t *testing.T) {
				run(t, testutil.NewManagementServer(t, testutil.ServerOptions{}), keep, 5*time.Second, opts...)
			})
		}
	}
}

// TestDepMgr_NewAfterClientClose checks that a Manager made on a closed
// client is not silent: its watcher gets ResourceError wrapping
// client.ErrClosed within a second.
func TestDepMgr_NewAfterClientClose(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	c := newClient(t, ms)
	c.Close()
	rec := newRecorder()
	m := depmgr.New(c, "svc", rec)
	defer m.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := rec.waitForResourceError(ctx, t); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("ResourceError(%v), want an error wrapping client.ErrClosed", err)
	}
}

// TestDepMgr_EndpointsResourceErrorDropsStaleEndpoints checks: when
// a cluster's ClusterLoadAssignment gets a resource error (here removed
// over delta, R-6.2), the cluster's endpoints are no longer the stale
// ones: the snapshot has an empty endpoint set, no endpoints version and
// the error as ResolutionNote.
func TestDepMgr_EndpointsResourceErrorDropsStaleEndpoints(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1")),
		Clusters:  cs,
		Endpoints: es,
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", res)
	c := newClient(t, ms, client.WithDelta())
	rec := newRecorder()
	m := depmgr.New(c, "svc", rec)
	defer m.Close()
	rec.waitForChanged(ctx, t, "the endpoints", func(cfg *depmgr.XDSConfig) bool {
		return len(addresses(cfg.Cluster("c1").Config.Endpoints)) == 1
	})
	res.Endpoints = nil
	ms.Update("", res)
	cfg := rec.waitForChanged(ctx, t, "the endpoints gone", func(cfg *depmgr.XDSConfig) bool {
		return cfg.Cluster("c1").Config.ResolutionNote != nil
	})
	leaf := cfg.Cluster("c1").Config
	if got := addresses(leaf.Endpoints); len(got) != 0 || leaf.EndpointsVersion != "" || !errors.Is(leaf.ResolutionNote, client.ErrResourceNotFound) {
		t.Fatalf("c1 = endpoints %v, version %q, note %v; want none, \"\", not found", got, leaf.EndpointsVersion, leaf.ResolutionNote)
	}
}
