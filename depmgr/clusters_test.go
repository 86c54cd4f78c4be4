// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// bubbleTimeout bounds waits inside a synctest bubble, in fake time: longer
// than the client's 15 s watch expiry.
const bubbleTimeout = 10 * time.Minute

// newBubbleEnv is newEnv inside a synctest bubble: the management server
// is in memory, so timers run in fake time. It must be called in the
// bubble.
func newBubbleEnv(t *testing.T, res testutil.Resources, opts ...depmgr.Option) (*env, context.Context) {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	ms.Update("", res)
	c := newClient(t, ms)
	rec := newRecorder()
	m := depmgr.New(c, "svc", rec, opts...)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(t.Context(), bubbleTimeout)
	t.Cleanup(cancel)
	return &env{ms: ms, c: c, m: m, rec: rec}, ctx
}

// TestDepMgr_Clusters_AddedAndRemoved checks that a RouteConfiguration
// change watches the new clusters and cancels the watches of the clusters
// and endpoints no route reaches any more, as the server's recorded
// requests show.
func TestDepMgr_Clusters_AddedAndRemoved(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2", "c3")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2")),
		Clusters:  cs,
		Endpoints: es,
	}
	e := newEnv(t, res)
	cfg := e.rec.waitForChanged(ctx, t, "c1 and c2", func(*depmgr.XDSConfig) bool { return true })
	if got := clusterNames(cfg); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Fatalf("clusters = %q, want [c1 c2]", got)
	}
	waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-c1", "eds-c2")

	res.Routes = routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c3"))
	e.ms.Update("", res)
	cfg = e.rec.waitForChanged(ctx, t, "c1 and c3", func(cfg *depmgr.XDSConfig) bool { return cfg.Cluster("c3") != nil })
	if got, want := describe(cfg), "L=svc RC=route-svc VH=route-svc-vh c1=[127.0.0.1:8000] c3=[127.0.0.1:8002]"; got != want {
		t.Fatalf("config = %s, want %s", got, want)
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "c1", "c3")
	waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-c1", "eds-c3")
}

// TestDepMgr_EDS_ChangeTouchesOneCluster checks that one
// ClusterLoadAssignment change publishes a snapshot in which only that
// cluster's result is new: everything else is shared with the previous
// snapshot (incremental rebuild, R-16.6).
func TestDepMgr_EDS_ChangeTouchesOneCluster(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2", "c3")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2", "c3")),
		Clusters:  cs,
		Endpoints: es,
	}
	e := newEnv(t, res)
	first := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })

	res.Endpoints = endpoints(es[0], testutil.Endpoints("eds-c2", "127.0.0.1", 9001, 9002), es[2])
	e.ms.Update("", res)
	next := e.rec.waitForChanged(ctx, t, "c2's new endpoints", func(*depmgr.XDSConfig) bool { return true })
	if got := addresses(next.Cluster("c2").Config.Endpoints); !slices.Equal(got, []string{"127.0.0.1:9001", "127.0.0.1:9002"}) {
		t.Fatalf("c2 endpoints = %q, want the new ones", got)
	}
	if next.Listener != first.Listener || next.RouteConfig != first.RouteConfig || next.VirtualHost != first.VirtualHost {
		t.Error("the Listener or RouteConfig of the new snapshot is not the previous one")
	}
	if next.Cluster("c1") != first.Cluster("c1") || next.Cluster("c3") != first.Cluster("c3") {
		t.Error("c1 or c3 has a new result, want the previous one")
	}
	if next.Cluster("c2") == first.Cluster("c2") || first.Cluster("c2").Config.Endpoints == next.Cluster("c2").Config.Endpoints {
		t.Error("c2 kept its previous result")
	}
	e.rec.expectNoCall(t)
}

// TestDepMgr_Snapshot_IdenticalNotRepublished checks that what changes
// nothing in the configuration publishes nothing (gRFC A74 leaves this
// open; gRPC Java suppresses equal snapshots too):
//  1. c1 is rejected (NACK: an ambient error of the cluster), then sent
//     valid again, which the client hands over again unchanged, with the
//     new version_info: the snapshot keeps c1 as it was.
//  2. The endpoints of c3, which only the aggregate "loop" reaches before
//     its cycle, change: loop's result is computed again, and is the same
//     error.
//  3. c2's endpoints change: the next ResourceChanged is this one.
func TestDepMgr_Snapshot_IdenticalNotRepublished(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2", "c3")
	res := testutil.Resources{
		Version:   "1",
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2", "loop")),
		Clusters:  append(cs, testutil.AggregateCluster("loop", "c3", "loop")),
		Endpoints: es,
	}
	e := newEnv(t, res)
	first := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
	if err := first.Cluster("loop").Err; !errors.Is(err, depmgr.ErrAggregateCycle) {
		t.Fatalf("loop: %v, want a cycle", err)
	}
	// push applies res as the version v and waits for the client's ACK or
	// NACK of its type typeURL.
	push := func(v, typeURL string) {
		t.Helper()
		res.Version = v
		e.ms.Update("", res)
		if _, err := e.ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
			return r.Req.GetTypeUrl() == typeURL && r.Req.GetResponseNonce() != "" &&
				(r.Req.GetVersionInfo() == v || r.Req.GetErrorDetail() != nil)
		}); err != nil {
			t.Fatal(err)
		}
	}

	bad := testutil.Cluster("c1", "eds-c1")
	bad.LbPolicy = v3clusterpb.Cluster_MAGLEV // rejected by gRPC
	res.Clusters = append(clusters(bad), res.Clusters[1:]...)
	push("nack", resources.ClusterTypeURL)
	res.Clusters = append(cs, testutil.AggregateCluster("loop", "c3", "loop"))
	push("valid-again", resources.ClusterTypeURL)

	res.Endpoints = endpoints(es[0], es[1], testutil.Endpoints("eds-c3", "127.0.0.1", 9003))
	push("c3-changed", resources.EndpointsTypeURL)

	res.Endpoints = endpoints(es[0], testutil.Endpoints("eds-c2", "127.0.0.1", 9002), res.Endpoints[2])
	res.Version = "c2-changed"
	e.ms.Update("", res)
	ev, err := e.rec.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.cfg == nil || !slices.Equal(addresses(ev.cfg.Cluster("c2").Config.Endpoints), []string{"127.0.0.1:9002"}) {
		t.Fatalf("next call = %v, want the ResourceChanged of c2's new endpoints", ev)
	}
	if got := ev.cfg.Cluster("c1"); got != first.Cluster("c1") || got.Config.ClusterVersion != "1" {
		t.Errorf("c1 = %+v, want its first result, of version 1", got.Config)
	}
	if ev.cfg.Cluster("loop") != first.Cluster("loop") {
		t.Error("loop has a new result, want the first one")
	}
}

// TestDepMgr_MissingCluster_ReportedPerCluster checks that a cluster that
// does not exist holds publication back until the client says so (15 s,
// fake time), then is an error of its own while the rest of the config
// is published; an aggregate skips a missing child, and fails when none is
// left.
func TestDepMgr_MissingCluster_ReportedPerCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, es := edsChain("c1")
		e, ctx := newBubbleEnv(t, testutil.Resources{
			Listeners: listeners(testutil.Listener("svc", "route-svc")),
			Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "missing", "agg-partial", "agg-none")),
			Clusters: append(cs,
				testutil.AggregateCluster("agg-partial", "missing", "c1"),
				testutil.AggregateCluster("agg-none", "missing", "missing-too")),
			Endpoints: es,
		})
		start := time.Now()
		cfg := e.rec.waitForChanged(ctx, t, "the config", func(*depmgr.XDSConfig) bool { return true })
		if waited := time.Since(start); waited < client.DefaultWatchExpiryTimeout {
			t.Errorf("published after %v, want after the watch expiry (%v)", waited, client.DefaultWatchExpiryTimeout)
		}
		if got, want := describe(cfg), "L=svc RC=route-svc VH=route-svc-vh agg-none=ERR agg-partial=AGG{c1=[127.0.0.1:8000]} c1=[127.0.0.1:8000] missing=ERR"; got != want {
			t.Fatalf("config = %s, want %s", got, want)
		}
		if err := cfg.Cluster("missing").Err; !errors.Is(err, client.ErrResourceNotFound) {
			t.Errorf("missing: %v, want an error wrapping ErrResourceNotFound", err)
		}
		partial := cfg.Cluster("agg-partial").Config
		if len(partial.Skipped) != 1 || partial.Skipped[0].Name != "missing" || !errors.Is(partial.Skipped[0].Err, client.ErrResourceNotFound) {
			t.Errorf("agg-partial skipped %+v, want missing (not found)", partial.Skipped)
		}
		if partial.Leaves[0] != cfg.Cluster("c1").Config {
			t.Error("c1's config under agg-partial is not the one of the top-level c1")
		}
		if err := cfg.Cluster("agg-none").Err; !errors.Is(err, depmgr.ErrNoLeafClusters) || !errors.Is(err, client.ErrResourceNotFound) {
			t.Errorf("agg-none: %v, want an error wrapping ErrNoLeafClusters and the children's errors", err)
		}
	})
}

// TestDepMgr_Dynamic_Subscription checks SubscribeToCluster: a
// subscribed cluster outside the route table appears once resolved,
// without holding back publication even when it does not exist; it is
// counted, and goes, with its watches, when the last subscription is
// cancelled.
func TestDepMgr_Dynamic_Subscription(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "dyn")
	e := newEnv(t, testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "c1")),
		Clusters:  cs,
		Endpoints: es,
	})
	cancelMissing := e.m.SubscribeToCluster("missing") // never resolves within the test
	defer cancelMissing()
	e.rec.waitForChanged(ctx, t, "the route table's config", func(cfg *depmgr.XDSConfig) bool {
		return slices.Equal(clusterNames(cfg), []string{"c1"})
	})

	cancel1 := e.m.SubscribeToCluster("dyn")
	cancel2 := e.m.SubscribeToCluster("dyn")
	cfg := e.rec.waitForChanged(ctx, t, "dyn", func(cfg *depmgr.XDSConfig) bool { return cfg.Cluster("dyn") != nil })
	if got, want := describe(cfg), "L=svc RC=route-svc VH=route-svc-vh c1=[127.0.0.1:8000] dyn=[127.0.0.1:8001]"; got != want {
		t.Fatalf("config = %s, want %s", got, want)
	}
	cancel1()
	cancel1() // idempotent: must not drop cancel2's reference
	e.rec.expectNoCall(t)
	cancel2()
	cfg = e.rec.waitForChanged(ctx, t, "dyn gone", func(*depmgr.XDSConfig) bool { return true })
	if got := clusterNames(cfg); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("clusters = %q, want [c1]", got)
	}
	waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, "c1", "missing")
	waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-c1")
}

// receive returns the next value of ch, or an error when ctx ends first.
func receive[T any](ctx context.Context, ch <-chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// TestDepMgr_EDS_SharedByClusters checks clusters that name the same
// ClusterLoadAssignment: they share one watch and one value, a change of
// it reaches all of them in the same snapshot, and its watch is cancelled
// only when the last of them is no longer reached, whichever
// cluster bound to it first.
func TestDepMgr_EDS_SharedByClusters(t *testing.T) {
	ctx := testContext(t)
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2", "c3")),
		Clusters: clusters(testutil.Cluster("c1", "eds-shared"), testutil.Cluster("c2", "eds-shared"),
			testutil.Cluster("c3", "eds-shared"), testutil.Cluster("c4", "eds-c4")),
		Endpoints: endpoints(testutil.Endpoints("eds-shared", "127.0.0.1", 8000), testutil.Endpoints("eds-c4", "127.0.0.1", 8004)),
	}
	e := newEnv(t, res)
	shared := func(cfg *depmgr.XDSConfig, port string, names ...string) bool {
		var eps *resources.Endpoints
		for _, name := range names {
			r := cfg.Cluster(name)
			if r == nil || r.Config == nil || (eps != nil && r.Config.Endpoints != eps) {
				return false
			}
			eps = r.Config.Endpoints
		}
		return slices.Equal(addresses(eps), []string{"127.0.0.1:" + port})
	}
	e.rec.waitForChanged(ctx, t, "c1, c2 and c3", func(cfg *depmgr.XDSConfig) bool { return shared(cfg, "8000", "c1", "c2", "c3") })
	waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-shared")

	res.Endpoints[0] = testutil.Endpoints("eds-shared", "127.0.0.1", 9000)
	e.ms.Update("", res)
	cfg := e.rec.waitForChanged(ctx, t, "the new endpoints", func(cfg *depmgr.XDSConfig) bool {
		return !shared(cfg, "8000", "c1")
	})
	if !shared(cfg, "9000", "c1", "c2", "c3") {
		t.Fatalf("the first snapshot with the new endpoints is %s, want them in c1, c2 and c3", describe(cfg))
	}

	for _, keep := range [][]string{{"c2", "c3"}, {"c3"}, {"c4"}} {
		res.Routes = routes(testutil.RouteConfigToClusters("route-svc", "svc", keep...))
		e.ms.Update("", res)
		e.rec.waitForChanged(ctx, t, fmt.Sprint("clusters ", keep), func(cfg *depmgr.XDSConfig) bool {
			return slices.Equal(cfg.ClusterNames(), keep)
		})
		waitForSubscription(ctx, t, e.ms, resources.ClusterTypeURL, keep...)
		if keep[0] != "c4" {
			waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-shared")
		} else {
			waitForSubscription(ctx, t, e.ms, resources.EndpointsTypeURL, "eds-c4")
		}
	}
}

// TestDepMgr_EDS_SharedResourceError checks that a resource error of a
// ClusterLoadAssignment that several clusters name (here its removal over
// delta) reaches each of them as ResolutionNote, and that its return
// clears the note of each.
func TestDepMgr_EDS_SharedResourceError(t *testing.T) {
	ctx := testContext(t)
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2")),
		Clusters:  clusters(testutil.Cluster("c1", "eds-shared"), testutil.Cluster("c2", "eds-shared")),
		Endpoints: endpoints(testutil.Endpoints("eds-shared", "127.0.0.1", 8000)),
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", res)
	rec := newRecorder()
	m := depmgr.New(newClient(t, ms, client.WithDelta()), "svc", rec)
	defer m.Close()
	state := func(cfg *depmgr.XDSConfig) string {
		var out []string
		for _, name := range []string{"c1", "c2"} {
			l := cfg.Cluster(name).Config
			out = append(out, fmt.Sprintf("%s=%v note=%t", name, addresses(l.Endpoints), l.ResolutionNote != nil))
		}
		return strings.Join(out, " ")
	}
	for _, step := range []struct {
		endpoints []*v3endpointpb.ClusterLoadAssignment
		want      string
	}{
		{res.Endpoints, "c1=[127.0.0.1:8000] note=false c2=[127.0.0.1:8000] note=false"},
		{nil, "c1=[] note=true c2=[] note=true"},
		{endpoints(testutil.Endpoints("eds-shared", "127.0.0.1", 8001)), "c1=[127.0.0.1:8001] note=false c2=[127.0.0.1:8001] note=false"},
	} {
		res.Endpoints = step.endpoints
		ms.Update("", res)
		var last string
		ctx, cancel := context.WithTimeout(ctx, defaultTestTimeout)
		for last != step.want {
			ev, err := rec.next(ctx)
			if err != nil {
				t.Fatalf("the last snapshot is %q, want %q: %v", last, step.want, err)
			}
			if ev.cfg != nil && ev.cfg.Cluster("c1") != nil && ev.cfg.Cluster("c2") != nil {
				last = state(ev.cfg)
			}
		}
		cancel()
	}
}
