// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestDepMgr_RDS_CompleteTree checks the first snapshot of a Listener
// that fetches its RouteConfiguration with RDS (R-16.1, R-16.3, R-16.4,
//
//  1. The server has svc → route-svc (routes to c1, and weighted to c1
//     and c2) → EDS clusters c1, c2 → their ClusterLoadAssignments.
//  2. One ResourceChanged arrives, holding the Listener, the
//     RouteConfiguration, the virtual host and both clusters with their
//     endpoints; nothing is published before the tree is complete.
func TestDepMgr_RDS_CompleteTree(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2")
	rc := testutil.RouteConfigWithVirtualHosts("route-svc",
		testutil.VirtualHost("other", []string{"other.example.com"}, testutil.ClusterRoute("", "c-other")),
		testutil.VirtualHost("svc-vh", []string{"svc"},
			testutil.ClusterRoute("/a/", "c1"),
			testutil.WeightedClustersRoute("", testutil.ClusterWeight{Name: "c1", Weight: 1}, testutil.ClusterWeight{Name: "c2", Weight: 3}),
		),
	)
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(rc),
		Clusters:  cs,
		Endpoints: es,
	})

	ev, err := e.rec.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.cfg == nil {
		t.Fatalf("first call = %v, want ResourceChanged", ev)
	}
	cfg := ev.cfg
	if cfg.Listener.Name != "svc" || cfg.RouteConfig.Name != "route-svc" || cfg.VirtualHost.Name != "svc-vh" {
		t.Errorf("config = %s, want svc, route-svc, svc-vh", describe(cfg))
	}
	if cfg.VirtualHost != &cfg.RouteConfig.VirtualHosts[1] {
		t.Error("VirtualHost does not point into RouteConfig.VirtualHosts")
	}
	if got, want := describe(cfg), "L=svc RC=route-svc VH=svc-vh c1=[127.0.0.1:8000] c2=[127.0.0.1:8001]"; got != want {
		t.Errorf("config = %s, want %s", got, want)
	}
	c1 := cfg.Cluster("c1").Config
	if c1.Cluster.Name != "c1" || c1.Cluster.EDSServiceName != "eds-c1" || c1.Endpoints.ClusterName != "eds-c1" || c1.Leaves != nil {
		t.Errorf("c1 = %+v, want EDS cluster c1 with the endpoints of eds-c1", c1)
	}
	// c-other belongs to another virtual host: never watched.
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "c1", "c2")
	e.rec.expectNoCall(t)
}

// TestDepMgr_Inline_NoRDSWatch checks a Listener with an inline
// RouteConfiguration: the snapshot holds the inline config, and
// the client never subscribes to any RouteConfiguration.
func TestDepMgr_Inline_NoRDSWatch(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.ListenerInline("svc", testutil.RouteConfig("inline", "*", "c1"))),
		Clusters:  cs,
		Endpoints: es,
	})
	cfg := e.rec.waitForChanged(ctx, t, "the inline config", func(*depmgr.XDSConfig) bool { return true })
	if cfg.RouteConfig != cfg.Listener.InlineRouteConfig || cfg.RouteConfigVersion != "" {
		t.Errorf("RouteConfig = %p, version %q; want the Listener's inline config %p, no version", cfg.RouteConfig, cfg.RouteConfigVersion, cfg.Listener.InlineRouteConfig)
	}
	if got, want := describe(cfg), "L=svc RC=inline VH=inline-vh c1=[127.0.0.1:8000]"; got != want {
		t.Errorf("config = %s, want %s", got, want)
	}
	for _, r := range e.ms.Requests() {
		if r.Req.GetTypeUrl() == resources.RouteConfigTypeURL {
			t.Fatalf("the client sent an RDS request %v", r.Req)
		}
	}
}

// TestDepMgr_Inline_SwitchFromRDS checks that a Listener that switches
// from RDS to an inline RouteConfiguration cancels its RDS watch (R-16.1,
//
//  1. svc → route-svc → c1 is published.
//  2. The Listener inlines a route config to c2: published at once, and
//     the client no longer subscribes to route-svc.
//  3. route-svc changes on the server: nothing is published.
func TestDepMgr_Inline_SwitchFromRDS(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "c1")),
		Clusters:  cs,
		Endpoints: es,
	}
	e := newEnv(t, res)
	e.rec.waitForChanged(ctx, t, "route-svc", func(*depmgr.XDSConfig) bool { return true })

	res.Listeners = listeners(testutil.ListenerInline("svc", testutil.RouteConfig("inline", "svc", "c2")))
	e.ms.Update("", res)
	cfg := e.rec.waitForChanged(ctx, t, "the inline config", func(*depmgr.XDSConfig) bool { return true })
	if got, want := describe(cfg), "L=svc RC=inline VH=inline-vh c2=[127.0.0.1:8001]"; got != want {
		t.Fatalf("config = %s, want %s", got, want)
	}
	waitForSubscription(ctx, t, e.ms, resources.RouteConfigTypeURL)

	if _, err := e.ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{
		VersionInfo: "scripted",
		TypeUrl:     resources.RouteConfigTypeURL,
		Resources:   []*anypb.Any{testutil.MarshalAny(testutil.RouteConfig("route-svc", "svc", "c1"))},
	}); err != nil {
		t.Fatal(err)
	}
	e.rec.expectNoCall(t)
}

// TestDepMgr_RDS_NameChange checks that, when the Listener names another
// RouteConfiguration, the old one keeps serving, with the Listener that
// named it, until the new one arrives, and that the old RDS watch is
// cancelled at once:
//  1. svc → route-1 → c1 is published.
//  2. The Listener switches to route-2, which the server does not have
//     yet, and c1's endpoints change. The client subscribes to route-2
//     only. The next snapshot has the new endpoints with the old Listener
//     and route-1: never the new Listener with the old routes.
//  3. route-2 (to c2) appears: the snapshot has the new Listener, route-2
//     and c2 only.
func TestDepMgr_RDS_NameChange(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-1")),
		Routes:    routes(testutil.RouteConfig("route-1", "svc", "c1")),
		Clusters:  cs,
		Endpoints: es,
	}
	e := newEnv(t, res)
	e.rec.waitForChanged(ctx, t, "route-1", func(cfg *depmgr.XDSConfig) bool { return cfg.RouteConfig.Name == "route-1" })

	res.Listeners = listeners(testutil.Listener("svc", "route-2"))
	res.Endpoints = endpoints(testutil.Endpoints("eds-c1", "127.0.0.1", 9000), es[1])
	e.ms.Update("", res)
	waitForSubscription(ctx, t, e.ms, resources.RouteConfigTypeURL, "route-2")
	cfg := e.rec.waitForChanged(ctx, t, "new endpoints", func(cfg *depmgr.XDSConfig) bool {
		return slices.Equal(addresses(cfg.Cluster("c1").Config.Endpoints), []string{"127.0.0.1:9000"})
	})
	if cfg.Listener.RouteConfigName != "route-1" || cfg.RouteConfig.Name != "route-1" {
		t.Fatalf("during the switch: Listener routes via %q, RouteConfig %q; want the old pair, route-1 and route-1",
			cfg.Listener.RouteConfigName, cfg.RouteConfig.Name)
	}

	res.Routes = routes(testutil.RouteConfig("route-2", "svc", "c2"))
	e.ms.Update("", res)
	cfg = e.rec.waitForChanged(ctx, t, "route-2", func(cfg *depmgr.XDSConfig) bool { return cfg.RouteConfig.Name == "route-2" })
	if got, want := describe(cfg), "L=svc RC=route-2 VH=route-2-vh c2=[127.0.0.1:8001]"; got != want || cfg.Listener.RouteConfigName != "route-2" {
		t.Fatalf("config = %s (Listener routes via %q), want %s via route-2", got, cfg.Listener.RouteConfigName, want)
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "c2")
}

// TestDepMgr_WholeConfig_Errors checks the errors that make the whole
// configuration unusable, and the recovery:
//  1. The RouteConfiguration has no virtual host for "svc": ResourceError
//     wraps ErrNoVirtualHost.
//  2. It gets one: ResourceChanged.
//  3. The Listener is removed: ResourceError wraps
//     client.ErrResourceNotFound, and nothing it led to stays watched.
//  4. It comes back: ResourceChanged with the same tree.
func TestDepMgr_WholeConfig_Errors(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "other.example.com", "c1")),
		Clusters:  cs,
		Endpoints: es,
	}
	e := newEnv(t, res)
	err := e.rec.waitForResourceError(ctx, t)
	if !errors.Is(err, depmgr.ErrNoVirtualHost) || !strings.Contains(err.Error(), `"svc"`) || !strings.Contains(err.Error(), "depmgr-test") {
		t.Fatalf("ResourceError(%v), want one wrapping ErrNoVirtualHost naming the authority and the node", err)
	}

	res.Routes = routes(testutil.RouteConfig("route-svc", "*", "c1"))
	e.ms.Update("", res)
	e.rec.waitForChanged(ctx, t, "a matching virtual host", func(*depmgr.XDSConfig) bool { return true })

	res.Listeners = nil
	e.ms.Update("", res)
	err = e.rec.waitForResourceError(ctx, t)
	var re *client.ResourceError
	if !errors.Is(err, client.ErrResourceNotFound) || !errors.As(err, &re) || re.Name != "svc" {
		t.Fatalf("ResourceError(%v), want the Listener's resource error", err)
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL)
	waitForSubscription(ctx, t, e.ms, resources.RouteConfigTypeURL)

	res.Listeners = listeners(testutil.Listener("svc", "route-svc"))
	e.ms.Update("", res)
	cfg := e.rec.waitForChanged(ctx, t, "the Listener back", func(*depmgr.XDSConfig) bool { return true })
	if got, want := describe(cfg), "L=svc RC=route-svc VH=route-svc-vh c1=[127.0.0.1:8000]"; got != want {
		t.Fatalf("config = %s, want %s", got, want)
	}
}

// TestDepMgr_ServerListener checks that a server-side Listener (no
// api_listener; gRFC A36) is a whole-config error at once, wrapping
// ErrServerListener and naming the Listener, and that nothing more is
// watched; on the old code the Manager watched RouteConfiguration "" and
// failed only when its does-not-exist timer fired, 15 s later.
func TestDepMgr_ServerListener(t *testing.T) {
	ctx := testContext(t)
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.ServerListener("svc", "127.0.0.1:8080", testutil.ServerFilterChain(testutil.FilterChainOptions{}))),
	})
	err := e.rec.waitForResourceError(ctx, t)
	if !errors.Is(err, depmgr.ErrServerListener) || !strings.Contains(err.Error(), `"svc"`) {
		t.Fatalf("ResourceError(%v), want one wrapping ErrServerListener naming the Listener", err)
	}
	for _, r := range e.ms.Requests() {
		if r.Req.GetTypeUrl() == resources.RouteConfigTypeURL && len(r.Req.GetResourceNames()) > 0 {
			t.Fatalf("RouteConfiguration requested: %v", r.Req)
		}
	}
}

// TestDepMgr_AmbientError_KeepsConfig checks that a rejected update of the
// Listener is an ambient error: the watcher gets AmbientError and no
// ResourceError or ResourceChanged, and the configuration stays.
func TestDepMgr_AmbientError_KeepsConfig(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "c1")),
		Clusters:  cs,
		Endpoints: es,
	}
	e := newEnv(t, res)
	e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })

	res.Listeners = listeners(testutil.Listener("svc", "")) // invalid: empty route_config_name
	e.ms.Update("", res)
	ev, err := e.rec.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ambient == nil || !errors.Is(ev.ambient, client.ErrResourceInvalid) {
		t.Fatalf("call = %v, want AmbientError wrapping ErrResourceInvalid", ev)
	}
	e.rec.expectNoCall(t)
}

// TestDepMgr_DataPlaneAuthority checks that WithDataPlaneAuthority selects
// the virtual host instead of the Listener name.
func TestDepMgr_DataPlaneAuthority(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2")
	rc := testutil.RouteConfigWithVirtualHosts("route-svc",
		testutil.VirtualHost("by-listener", []string{"svc"}, testutil.ClusterRoute("", "c1")),
		testutil.VirtualHost("by-authority", []string{"*.example.com"}, testutil.ClusterRoute("", "c2")),
	)
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(rc),
		Clusters:  cs,
		Endpoints: es,
	}, depmgr.WithDataPlaneAuthority("api.EXAMPLE.com"))
	cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	if cfg.VirtualHost.Name != "by-authority" || !slices.Equal(clusterNames(cfg), []string{"c2"}) {
		t.Fatalf("config = %s, want virtual host by-authority with c2", describe(cfg))
	}
}
