// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// End-to-end delta tests against the testutil management server answering
// from snapshots, over gRPC and in memory.

// forEachTransport runs f over gRPC and in memory, with a snapshot server.
func forEachTransport(t *testing.T, f func(t *testing.T, ms *testutil.ManagementServer)) {
	for _, inMemory := range []bool{false, true} {
		name := map[bool]string{false: "grpc", true: "in-memory"}[inMemory]
		t.Run(name, func(t *testing.T) {
			f(t, testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: inMemory}))
		})
	}
}

// TestDelta_E2E_ChainAndOneChange checks the whole chain over delta, and
// that a change of one cluster among several reaches only its watcher
// ("Incremental xDS": only the resource that changed is delivered).
func TestDelta_E2E_ChainAndOneChange(t *testing.T) {
	forEachTransport(t, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		res := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
		res.Clusters = append(res.Clusters, testutil.Cluster("other", ""))
		ms.Update("", res)
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithDelta())
		lw, rw := newRecorder[*resources.Listener](), newRecorder[*resources.RouteConfig]()
		cw, ow, ew := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster](), newRecorder[*resources.Endpoints]()
		defer client.Watch(c, resources.ListenerType, "svc", lw)()
		defer client.Watch(c, resources.RouteConfigType, "route-svc", rw)()
		defer client.Watch(c, resources.ClusterType, "cluster-svc", cw)()
		defer client.Watch(c, resources.ClusterType, "other", ow)()
		defer client.Watch(c, resources.EndpointsType, "eds-svc", ew)()
		lw.wantKind(ctx, t, changed, nil)
		rw.wantKind(ctx, t, changed, nil)
		cw.wantKind(ctx, t, changed, nil)
		ow.wantKind(ctx, t, changed, nil)
		ew.wantKind(ctx, t, changed, nil)

		res.Clusters[1] = testutil.Cluster("other", "other-eds")
		ms.Update("", res)
		if got := ow.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "other-eds" {
			t.Fatalf("other = %+v, want the update", got)
		}
		cw.wantNone(t, defaultTestShortTimeout)
		lw.wantNone(t, 0)
		for _, r := range ms.Requests() {
			if r.Delta == nil {
				t.Fatalf("SotW request %v from a delta client", r.Req)
			}
		}
	})
}

// TestDelta_E2E_ReconnectResendsNothingUnchanged checks the reconnect of
// "Incremental xDS" end to end: the client claims its cached versions in
// initial_resource_versions, the server resends nothing, and watchers hear
// nothing; a later change is still delivered.
func TestDelta_E2E_ReconnectResendsNothingUnchanged(t *testing.T) {
	forEachTransport(t, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		res := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
		ms.Update("", res)
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithDelta())
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "cluster-svc", w)()
		w.wantKind(ctx, t, changed, nil)
		version := dumpEntry(c, cds, "cluster-svc").GetVersionInfo()
		if version == "" {
			t.Fatal("CSDS version_info of a delta resource is empty, want its per-resource version")
		}

		ms.BreakStreams()
		r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 })
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Delta.GetInitialResourceVersions(); len(got) != 1 || got["cluster-svc"] != version {
			t.Fatalf("initial_resource_versions = %v, want {cluster-svc: %s}", got, version)
		}
		w.wantNone(t, defaultTestShortTimeout)

		res.Clusters[0] = testutil.Cluster("cluster-svc", "other-eds")
		ms.Update("", res)
		w.wantKind(ctx, t, changed, nil)
	})
}

// TestDelta_E2E_RemovedFromSnapshot checks that a resource the server
// drops reaches its watcher as ResourceError wrapping ErrResourceNotFound,
// for a type (RouteConfiguration) that SotW could never delete.
func TestDelta_E2E_RemovedFromSnapshot(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	ms.Update("", res)
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithDelta())
	w := newRecorder[*resources.RouteConfig]()
	defer client.Watch(c, resources.RouteConfigType, "route-svc", w)()
	w.wantKind(ctx, t, changed, nil)
	res.Routes = nil
	ms.Update("", res)
	w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	if g := dumpEntry(c, resources.RouteConfigTypeURL, "route-svc"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
		t.Fatalf("CSDS status = %v, want DOES_NOT_EXIST", g.GetClientStatus())
	}
}

// TestDelta_Bootstrap_FeatureSelectsDelta checks that the server feature
// "delta_ads" selects delta for that server without the client option, and
// that without both the client speaks SotW (default).
func TestDelta_Bootstrap_FeatureSelectsDelta(t *testing.T) {
	for _, tt := range []struct {
		name      string
		features  []string
		opts      []client.Option
		wantDelta bool
	}{
		{name: "default SotW"},
		{name: "feature", features: []string{bootstrap.FeatureDeltaADS}, wantDelta: true},
		{name: "option", opts: []client.Option{client.WithDelta()}, wantDelta: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
			ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
			c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: tt.features}, tt.opts...)
			w := newRecorder[*resources.Listener]()
			defer client.Watch(c, resources.ListenerType, "svc", w)()
			w.wantKind(ctx, t, changed, nil)
			r, err := ms.NextRequest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Delta != nil; got != tt.wantDelta {
				t.Fatalf("first request is delta: %t, want %t", got, tt.wantDelta)
			}
		})
	}
}

// TestDelta_Bootstrap_SeparateStreamsPerProtocol checks that two bootstrap
// entries for one server that differ only by "delta_ads" get two streams,
// one of each protocol (bootstrap.ServerConfig.Key, R-1.5): an authority
// whose server speaks delta next to top-level SotW.
func TestDelta_Bootstrap_SeparateStreamsPerProtocol(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{Clusters: namedClusters("plain", "xdstp://auth/envoy.config.cluster.v3.Cluster/c")})
	b := ms.Bootstrap(testutil.BootstrapOptions{Authorities: map[string]string{"auth": ""}})
	cfg, err := bootstrap.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Authorities["auth"].Servers[0].ServerFeatures = []string{bootstrap.FeatureDeltaADS}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w1, w2 := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "plain", w1)()
	defer client.Watch(c, resources.ClusterType, "xdstp://auth/envoy.config.cluster.v3.Cluster/c", w2)()
	w1.wantKind(ctx, t, changed, nil)
	w2.wantKind(ctx, t, changed, nil)
	var sotw, delta bool
	for _, r := range ms.Requests() {
		sotw = sotw || r.Req != nil
		delta = delta || r.Delta != nil
	}
	if !sotw || !delta || ms.OpenStreams() != 2 {
		t.Fatalf("SotW requests: %t, delta requests: %t, open streams: %d; want both and 2", sotw, delta, ms.OpenStreams())
	}
}

// namedClusters returns Clusters with the given names.
func namedClusters(names ...string) []*v3clusterpb.Cluster {
	var out []*v3clusterpb.Cluster
	for _, n := range names {
		out = append(out, testutil.Cluster(n, "eds"))
	}
	return out
}
