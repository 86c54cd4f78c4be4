// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// leafNames returns the names of the leaves of an aggregate's config.
func leafNames(c *depmgr.ClusterConfig) []string {
	var out []string
	for _, l := range c.Leaves {
		out = append(out, l.Name)
	}
	return out
}

// TestDepMgr_Aggregate_OfAggregates checks the flattening of an aggregate
// of aggregates: leaves in priority order, depth first, each at
// its first position only, EDS and LOGICAL_DNS alike; clusters only under
// the aggregate have no top-level entry (gRFC A74), and a leaf that is
// also top-level shares its config.
//
//	top → [mid, dns, c3]; mid → [c1, c3, c2]; a route also names c1
//	leaves of top: c1, c3, c2, dns
func TestDepMgr_Aggregate_OfAggregates(t *testing.T) {
	ctx := testContext(t)
	r := newFakeResolver()
	r.set("dns.example.com", nil, "10.0.0.1")
	cs, es := edsChain("c1", "c2", "c3")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "top", "c1")),
		Clusters: append(cs,
			testutil.AggregateCluster("top", "mid", "dns", "c3"),
			testutil.AggregateCluster("mid", "c1", "c3", "c2"),
			testutil.LogicalDNSCluster("dns", "dns.example.com", 443)),
		Endpoints: es,
	}, depmgr.WithDNSResolver(r))
	cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	if got := clusterNames(cfg); !slices.Equal(got, []string{"c1", "top"}) {
		t.Fatalf("top-level clusters = %q, want [c1 top]", got)
	}
	top := cfg.Cluster("top").Config
	if top == nil || !top.IsAggregate() || top.Endpoints != nil || top.Skipped != nil {
		t.Fatalf("top = %+v, want an aggregate config without endpoints or skipped clusters", cfg.Cluster("top"))
	}
	if got, want := leafNames(top), []string{"c1", "c3", "c2", "dns"}; !slices.Equal(got, want) {
		t.Errorf("leaves of top = %q, want %q", got, want)
	}
	if top.Leaves[0] != cfg.Cluster("c1").Config {
		t.Error("the c1 leaf of top is not the top-level c1's config")
	}
	if got := addresses(top.Leaves[3].Endpoints); !slices.Equal(got, []string{"10.0.0.1:443"}) {
		t.Errorf("dns leaf endpoints = %q, want [10.0.0.1:443]", got)
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "top", "mid", "dns", "c1", "c2", "c3")
}

// aggregateChain returns clusters prefix+"0" → prefix+"1" → … → the EDS
// leaf prefix+"leaf": levels clusters in all, the leaf at level levels-1.
func aggregateChain(prefix string, levels int) []*v3clusterpb.Cluster {
	var out []*v3clusterpb.Cluster
	for i := range levels - 1 {
		child := fmt.Sprint(prefix, i+1)
		if i == levels-2 {
			child = prefix + "leaf"
		}
		out = append(out, testutil.AggregateCluster(fmt.Sprint(prefix, i), child))
	}
	return append(out, testutil.Cluster(prefix+"leaf", ""))
}

// TestDepMgr_Aggregate_MaxDepth checks the depth limit: a graph
// of 16 levels (the top-level cluster is level 0, the leaf level 15) is
// fine; one of 17 is an error of its own top-level cluster, wrapping
// ErrMaxDepthExceeded and naming the path, and its leaf is never watched;
// the rest of the config is published.
func TestDepMgr_Aggregate_MaxDepth(t *testing.T) {
	ctx := testContext(t)
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "ok0", "bad0")),
		Clusters:  append(aggregateChain("ok", 16), aggregateChain("bad", 17)...),
		Endpoints: endpoints(testutil.Endpoints("okleaf", "127.0.0.1", 80), testutil.Endpoints("badleaf", "127.0.0.1", 81)),
	}
	e := newEnv(t, res)
	cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	if ok := cfg.Cluster("ok0"); ok.Err != nil || !slices.Equal(leafNames(ok.Config), []string{"okleaf"}) {
		t.Errorf("ok0 = %+v (%v), want the leaf okleaf", ok.Config, ok.Err)
	}
	err := cfg.Cluster("bad0").Err
	if !errors.Is(err, depmgr.ErrMaxDepthExceeded) {
		t.Fatalf("bad0: %v, want an error wrapping ErrMaxDepthExceeded", err)
	}
	if want := "bad0 -> bad1 -> bad2 -> bad3 -> bad4 -> bad5 -> bad6 -> bad7 -> bad8 -> bad9 -> bad10 -> bad11 -> bad12 -> bad13 -> bad14 -> bad15 -> badleaf"; !strings.Contains(err.Error(), want) {
		t.Errorf("bad0: %v, want it to name the path %s", err, want)
	}
	for _, r := range e.ms.Requests() {
		if r.Req.GetTypeUrl() == resources.ClusterTypeURL && slices.Contains(r.Req.GetResourceNames(), "badleaf") {
			t.Fatalf("the client subscribed to badleaf, below the depth limit: %v", r.Req.GetResourceNames())
		}
	}
}

// TestDepMgr_Aggregate_Cycle checks that a cycle is an error of the
// top-level cluster that names the cycle (R-16.5, BEAT: gRPC Go reports
// "no leaf clusters"), also for a cluster that is its own child, while the
// rest of the config is published.
func TestDepMgr_Aggregate_Cycle(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "a", "self", "c1")),
		Clusters: append(cs,
			testutil.AggregateCluster("a", "c1", "b"),
			testutil.AggregateCluster("b", "c", "c1"),
			testutil.AggregateCluster("c", "a"),
			testutil.AggregateCluster("self", "self")),
		Endpoints: es,
	})
	cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	for name, want := range map[string]string{
		"a":    "aggregate cluster cycle: a -> b -> c -> a",
		"self": "aggregate cluster cycle: self -> self",
	} {
		err := cfg.Cluster(name).Err
		if !errors.Is(err, depmgr.ErrAggregateCycle) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error wrapping ErrAggregateCycle containing %q", name, err, want)
		}
	}
	if got := describeResult(cfg.Cluster("c1")); got != "[127.0.0.1:8000]" {
		t.Errorf("c1 = %s, want its endpoints", got)
	}
}

// TestDepMgr_Aggregate_Diamond checks that a cluster reached twice
// without a cycle is not a cycle, and is listed once, at its first
// position.
//
//	a → [b, c]; b → [d]; c → [d, c1]; d → [c2]: leaves c2, c1
func TestDepMgr_Aggregate_Diamond(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "a")),
		Clusters: append(cs,
			testutil.AggregateCluster("a", "b", "c"),
			testutil.AggregateCluster("b", "d"),
			testutil.AggregateCluster("c", "d", "c1"),
			testutil.AggregateCluster("d", "c2")),
		Endpoints: es,
	})
	cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	a := cfg.Cluster("a")
	if a.Err != nil || !slices.Equal(leafNames(a.Config), []string{"c2", "c1"}) {
		t.Fatalf("a = %v %v, want leaves [c2 c1]", describeResult(a), a.Err)
	}
}

// TestDepMgr_Aggregate_ChildMovesToRouteTable checks that a cluster that
// moves from under an aggregate to the route table, in one
// RouteConfiguration change, keeps its watches: the client never
// unsubscribes from it or its endpoints (R-16.8 applies to unreachable
// resources only), and the new config needs no new Cluster response.
//  1. svc → route-svc → agg → c1 is published.
//  2. A scripted RDS response (the server pushes nothing else) routes to
//     c1 directly: the config with c1 is published.
//  3. No CDS or EDS request ever left c1 or eds-c1 out after naming it.
func TestDepMgr_Aggregate_ChildMovesToRouteTable(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "agg")),
		Clusters:  append(cs, testutil.AggregateCluster("agg", "c1")),
		Endpoints: es,
	}
	e := newEnv(t, res)
	e.rec.waitForChanged(ctx, t, "agg", func(*depmgr.XDSConfig) bool { return true })
	if _, err := e.ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{
		VersionInfo: "scripted",
		TypeUrl:     resources.RouteConfigTypeURL,
		Resources:   []*anypb.Any{testutil.MarshalAny(testutil.RouteConfig("route-svc", "svc", "c1"))},
	}); err != nil {
		t.Fatal(err)
	}
	e.rec.waitForChanged(ctx, t, "c1", func(cfg *depmgr.XDSConfig) bool { return cfg.Cluster("c1") != nil })
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "c1")
	// Once subscribed, every later request of the type names it.
	subscribed := map[string]bool{}
	for _, r := range e.ms.Requests() {
		for typeURL, name := range map[string]string{resources.ClusterTypeURL: "c1", resources.EndpointsTypeURL: "eds-c1"} {
			if r.Req.GetTypeUrl() != typeURL {
				continue
			}
			has := slices.Contains(r.Req.GetResourceNames(), name)
			if subscribed[name] && !has {
				t.Fatalf("the client unsubscribed from %s: %v", name, r.Req.GetResourceNames())
			}
			subscribed[name] = subscribed[name] || has
		}
	}
}

// TestDepMgr_Aggregate_RootBecomesChildOnly checks a cluster that is both
// a top-level cluster and a child of an aggregate: when the route table
// stops naming it, it leaves the top-level clusters but stays watched and
// among the aggregate's leaves with the same config; when the route table
// names it again alone, the aggregate and its other child are no longer
// watched and its config is still the same.
//
//	routes: agg, c1 → agg → routes: c1
//	agg → [c1, c2]
func TestDepMgr_Aggregate_RootBecomesChildOnly(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "agg", "c1")),
		Clusters:  append(cs, testutil.AggregateCluster("agg", "c1", "c2")),
		Endpoints: es,
	}
	e := newEnv(t, res)
	first := e.rec.waitForChanged(ctx, t, "agg and c1", func(*depmgr.XDSConfig) bool { return true })
	c1 := first.Cluster("c1").Config
	if got := leafNames(first.Cluster("agg").Config); !slices.Equal(got, []string{"c1", "c2"}) || first.Cluster("agg").Config.Leaves[0] != c1 {
		t.Fatalf("agg's leaves = %q, want [c1 c2], c1's config shared", got)
	}

	res.Routes = routes(testutil.RouteConfigToClusters("route-svc", "svc", "agg"))
	e.ms.Update("", res)
	cfg := e.rec.waitForChanged(ctx, t, "agg only", func(cfg *depmgr.XDSConfig) bool { return cfg.Cluster("c1") == nil })
	if got := cfg.ClusterNames(); !slices.Equal(got, []string{"agg"}) || cfg.Cluster("agg") != first.Cluster("agg") {
		t.Fatalf("clusters = %q, agg's result new: %t; want [agg], the same result", got, cfg.Cluster("agg") != first.Cluster("agg"))
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "agg", "c1", "c2")

	res.Routes = routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1"))
	e.ms.Update("", res)
	cfg = e.rec.waitForChanged(ctx, t, "c1 only", func(cfg *depmgr.XDSConfig) bool { return cfg.Cluster("agg") == nil })
	if got := cfg.ClusterNames(); !slices.Equal(got, []string{"c1"}) || cfg.Cluster("c1").Config != c1 {
		t.Fatalf("clusters = %q, c1's config new: %t; want [c1], the same config", got, cfg.Cluster("c1").Config != c1)
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "c1")
	waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-c1")
	e.rec.expectNoCall(t)
}
