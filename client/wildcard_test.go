// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Tests of WatchAll, the wildcard subscription ("How the client specifies
// what resources to return"), in both protocols.

const lds = resources.ListenerTypeURL

// forEachProtocol runs f with a SotW and with a delta client option set.
func forEachProtocol(t *testing.T, f func(t *testing.T, delta bool, opts ...client.Option)) {
	t.Run("sotw", func(t *testing.T) { f(t, false) })
	t.Run("delta", func(t *testing.T) { f(t, true, client.WithDelta()) })
}

// nextSotW returns the next request, which must be a SotW one.
func nextSotW(t *testing.T, ms *testutil.ManagementServer) *v3discoverypb.DiscoveryRequest {
	t.Helper()
	r, err := ms.NextRequest(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Req == nil {
		t.Fatalf("request %v is not a SotW request", r.Delta)
	}
	return r.Req
}

// TestWildcard_SotW_SeedSequence follows the SotW example of "How the
// client specifies what resources to return", with the client always
// naming "*" explicitly (never the legacy empty list, R-11.5):
//  1. WatchAll: resource_names ["*"].
//  2. Watch A: ["*", "A"]: the wildcard continues, A is added.
//  3. Cancel WatchAll: ["A"]: the wildcard ends, A continues.
//  4. Cancel A: [] — not a wildcard, since it is not the first request.
func TestWildcard_SotW_SeedSequence(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	cancelAll := client.WatchAll(c, resources.ListenerType, newRecorder[*resources.Listener]())
	want := func(names ...string) {
		t.Helper()
		r := nextSotW(t, ms)
		if r.GetTypeUrl() != lds || !slices.Equal(r.GetResourceNames(), names) && !(len(names) == 0 && len(r.GetResourceNames()) == 0) {
			t.Fatalf("request = %v, want LDS with resource_names %q", r, names)
		}
	}
	want("*")
	cancelA := client.Watch(c, resources.ListenerType, "A", newRecorder[*resources.Listener]())
	want("*", "A")
	cancelAll()
	want("A")
	cancelA()
	want()
}

// TestWildcard_Delta_SeedSequence follows the incremental example of "How
// the client specifies what resources to return", with "*" explicit:
//  1. WatchAll: subscribe ["*"].
//  2. Watch A: subscribe ["A"]: the wildcard continues.
//  3. Cancel WatchAll: unsubscribe ["*"]: A continues.
//  4. Cancel A: unsubscribe ["A"].
func TestWildcard_Delta_SeedSequence(t *testing.T) {
	ms, c := manualDelta(t, false)
	cancelAll := client.WatchAll(c, resources.ListenerType, newRecorder[*resources.Listener]())
	wantDeltaRequest(t, ms, true, sub(lds, "*"))
	cancelA := client.Watch(c, resources.ListenerType, "A", newRecorder[*resources.Listener]())
	wantDeltaRequest(t, ms, false, sub(lds, "A"))
	cancelAll()
	wantDeltaRequest(t, ms, false, unsub(lds, "*"))
	cancelA()
	wantDeltaRequest(t, ms, false, unsub(lds, "A"))
}

// TestWildcard_DeliversEveryResourceAndDeletions checks WatchAll end to
// end against the snapshot server, in both protocols: every cluster of the
// snapshot arrives, in response order; one that leaves the snapshot
// reaches the watcher as a ResourceError naming it and wrapping
// ErrResourceNotFound, and leaves the cache; a new one arrives; Dump lists
// what the wildcard received.
func TestWildcard_DeliversEveryResourceAndDeletions(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, _ bool, opts ...client.Option) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
		ms.Update("", testutil.Resources{Clusters: namedClusters("a", "b")})
		c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
		w := newRecorder[*resources.Cluster]()
		defer client.WatchAll(c, resources.ClusterType, w)()
		for _, n := range []string{"a", "b"} {
			if e := w.wantKind(ctx, t, changed, nil); e.value.Name != n {
				t.Fatalf("event = %v, want %s", e, n)
			}
		}
		if g := dumpEntry(c, cds, "b"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED || g.GetXdsConfig() == nil {
			t.Fatalf("CSDS entry of b = %v, want ACKED with its value", g)
		}

		ms.Update("", testutil.Resources{Clusters: namedClusters("a", "c")})
		var got []string
		for range 2 {
			e := w.next(ctx, t)
			var re *client.ResourceError
			switch {
			case e.kind == changed:
				got = append(got, "changed:"+e.value.Name)
			case errors.As(e.err, &re) && errors.Is(e.err, client.ErrResourceNotFound):
				got = append(got, "deleted:"+re.Name)
			default:
				t.Fatalf("unexpected event %v", e)
			}
		}
		if want := []string{"changed:c", "deleted:b"}; !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		if g := dumpEntry(c, cds, "b"); g != nil {
			t.Fatalf("deleted wildcard resource still in CSDS: %v", g)
		}
	})
}

// TestWildcard_SharedCacheEntry checks that a name watched both ways has
// one cache entry: a Watch of a name received through the wildcard gets
// the cached value at once, both watchers hear its changes, cancelling the
// Watch keeps the entry while the wildcard lasts, and cancelling WatchAll
// forgets what no Watch names.
func TestWildcard_SharedCacheEntry(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, _ bool, opts ...client.Option) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
		ms.Update("", testutil.Resources{Clusters: namedClusters("a", "b")})
		c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
		all := newRecorder[*resources.Cluster]()
		cancelAll := client.WatchAll(c, resources.ClusterType, all)
		all.wantKind(ctx, t, changed, nil)
		all.wantKind(ctx, t, changed, nil)

		wa := newRecorder[*resources.Cluster]()
		cancelA := client.Watch(c, resources.ClusterType, "a", wa)
		if e := wa.wantKind(ctx, t, changed, nil); e.value.Name != "a" {
			t.Fatalf("event = %v, want the cached a", e)
		}
		wb := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "b", wb)()
		wb.wantKind(ctx, t, changed, nil)

		res := testutil.Resources{Clusters: namedClusters("a", "b")}
		res.Clusters[0] = testutil.Cluster("a", "a-eds")
		ms.Update("", res)
		wa.wantKind(ctx, t, changed, nil)
		all.wantKind(ctx, t, changed, nil)
		if n := len(c.Dump().GetGenericXdsConfigs()); n != 2 {
			t.Fatalf("CSDS has %d entries, want 2 (one per name)", n)
		}

		cancelA()
		if g := dumpEntry(c, cds, "a"); g.GetXdsConfig() == nil {
			t.Fatalf("CSDS entry of a after its Watch was cancelled = %v, want it kept (wildcard)", g)
		}
		cancelAll()
		if g := dumpEntry(c, cds, "a"); g != nil {
			t.Fatalf("CSDS entry of a after WatchAll was cancelled = %v, want none", g)
		}
		if g := dumpEntry(c, cds, "b"); g.GetXdsConfig() == nil {
			t.Fatalf("CSDS entry of b = %v, want it kept (watched)", g)
		}
		wb.wantNone(t, defaultTestShortTimeout)
	})
}

// TestWildcard_ReconnectNamesStarExplicitly checks that on a new stream
// the wildcard is subscribed again explicitly, alongside the names (SotW:
// ["*", "a"] with the last version; delta: subscribe ["*", "a"] with
// initial_resource_versions of everything cached, wildcard-received
// resources included).
func TestWildcard_ReconnectNamesStarExplicitly(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
		ms.Update("", testutil.Resources{Version: "7", Clusters: namedClusters("a", "b")})
		c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
		all, wa := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.WatchAll(c, resources.ClusterType, all)()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		wa.wantKind(ctx, t, changed, nil)
		all.wantKind(ctx, t, changed, nil)
		all.wantKind(ctx, t, changed, nil)
		va, vb := dumpEntry(c, cds, "a").GetVersionInfo(), dumpEntry(c, cds, "b").GetVersionInfo()

		ms.BreakStreams()
		r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 })
		if err != nil {
			t.Fatal(err)
		}
		if delta {
			d := r.Delta
			if !slices.Equal(d.GetResourceNamesSubscribe(), []string{"*", "a"}) ||
				len(d.GetInitialResourceVersions()) != 2 || d.GetInitialResourceVersions()["a"] != va || d.GetInitialResourceVersions()["b"] != vb {
				t.Fatalf("first delta request on the new stream = %v, want subscribe [* a] and versions of a and b", d)
			}
		} else if !slices.Equal(r.Req.GetResourceNames(), []string{"*", "a"}) || r.Req.GetVersionInfo() != "7" {
			t.Fatalf("first SotW request on the new stream = %v, want [* a] at version 7", r.Req)
		}
		all.wantNone(t, defaultTestShortTimeout)
	})
}

// TestWildcard_NoTimerForStar checks that the wildcard itself has no
// does-not-exist timer: a wildcard nobody answers reports nothing.
func TestWildcard_NoTimerForStar(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, _ bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ms, c := inMemory(t, opts...)
			w := newRecorder[*resources.Cluster]()
			defer client.WatchAll(c, resources.ClusterType, w)()
			if _, err := ms.NextRequest(testContext(t)); err != nil {
				t.Fatal(err)
			}
			w.wantNone(t, time.Minute)
			if n := len(c.Dump().GetGenericXdsConfigs()); n != 0 {
				t.Fatalf("CSDS has %d entries for an unanswered wildcard, want 0", n)
			}
		})
	})
}

// TestWildcard_UnregisteredType checks that WatchAll of a type the client
// does not know gets one ResourceError wrapping ErrUnsupported, naming
// "*".
func TestWildcard_UnregisteredType(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	typ := resources.NewType(resources.TypeConfig[string]{
		TypeURL: "type.googleapis.com/some.Unknown",
		Decode:  func(*anypb.Any) (string, string, error) { return "", "", nil },
	})
	w := newRecorder[string]()
	defer client.WatchAll(c, typ, w)()
	e := w.wantKind(ctx, t, resourceError, client.ErrUnsupported)
	var re *client.ResourceError
	if !errors.As(e.err, &re) || re.Name != "*" {
		t.Fatalf("error = %v, want a ResourceError naming *", e.err)
	}
}

// TestWildcard_InvalidResourceNACKed checks that a resource received
// through the wildcard is validated like a watched one: an invalid one
// makes the response a NACK and reaches the WatchAll watcher as a
// ResourceError wrapping ErrResourceInvalid (no valid version cached).
func TestWildcard_InvalidResourceNACKed(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	defer client.WatchAll(c, resources.ClusterType, w)()
	wantDeltaRequest(t, ms, true, sub(cds, "*"))
	nonce := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")},
		deltaResource{name: "z", version: "1", msg: invalidCluster("z")}))
	wantNACK(t, ms, cds, nonce, `resource "z"`)
	w.wantKind(ctx, t, changed, nil)
	e := w.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
	var re *client.ResourceError
	if !errors.As(e.err, &re) || re.Name != "z" {
		t.Fatalf("error = %v, want a ResourceError naming z", e.err)
	}
}
