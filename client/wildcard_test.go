// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// Tests of WatchAll, the wildcard subscription ("How the client specifies
// what resources to return"), in both protocols.

const lds = resources.ListenerTypeURL

// forEachProtocol runs f with a SotW and with a delta client option set.
func forEachProtocol(t *testing.T, f func(t *testing.T, delta bool, opts ...client.Option)) {
	t.Run("sotw", func(t *testing.T) { f(t, false) })
	t.Run("delta", func(t *testing.T) { f(t, true, client.WithDelta()) })
}

// TestWildcard_SotW_SeedSequence follows the SotW example of "How the
// client specifies what resources to return" (R-6.2, R-11.5):
//  1. WatchAll: the type's first request on the stream is the legacy
//     wildcard, an empty list (old servers take "*" for a name).
//  2. Watch A: still [] — the legacy wildcard covers A.
//  3. Cancel WatchAll: an empty list cannot unsubscribe from a legacy
//     wildcard, so the stream restarts and its first request is ["A"].
//  4. Watch B and WatchAll again: ["A", "B"], then ["*", "A", "B"]: "*"
//     explicit, as the type was named on this stream.
//  5. Cancel WatchAll: ["A", "B"]; cancel A: ["B"].
//  6. Cancel B, the last watch: the stream closes, no request.
func TestWildcard_SotW_SeedSequence(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	cancelAll := client.WatchAll(c, resources.ListenerType, newRecorder[*resources.Listener]())
	want := func(stream int64, names ...string) {
		t.Helper()
		r, err := ms.NextRequest(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if r.StreamID != stream || r.Req.GetTypeUrl() != lds || !slices.Equal(r.Req.GetResourceNames(), names) && !(len(names) == 0 && len(r.Req.GetResourceNames()) == 0) {
			t.Fatalf("request on stream %d = %v, want LDS on stream %d with resource_names %q", r.StreamID, r.Req, stream, names)
		}
	}
	want(1)
	cancelA := client.Watch(c, resources.ListenerType, "A", newRecorder[*resources.Listener]())
	want(1)
	cancelAll()
	want(2, "A")
	cancelB := client.Watch(c, resources.ListenerType, "B", newRecorder[*resources.Listener]())
	want(2, "A", "B")
	cancelAll = client.Watch(c, resources.ListenerType, "*", newRecorder[*resources.Listener]())
	want(2, "*", "A", "B")
	cancelAll()
	want(2, "A", "B")
	cancelA()
	want(2, "B")
	cancelB()
	wantNoRequest(t, ms)
}

// TestWildcard_Delta_SeedSequence follows the incremental example of "How
// the client specifies what resources to return":
//  1. WatchAll: subscribe [] (the legacy wildcard, R-6.2).
//  2. Watch A: subscribe ["*", "A"]: naming A ends the legacy form, so
//     the wildcard goes on explicitly.
//  3. Cancel WatchAll: unsubscribe ["*"]: A continues.
//  4. Watch B, cancel A: subscribe ["B"], unsubscribe ["A"].
//  5. Cancel B, the last watch: the stream closes.
func TestWildcard_Delta_SeedSequence(t *testing.T) {
	ms, c := manualDelta(t, false)
	cancelAll := client.WatchAll(c, resources.ListenerType, newRecorder[*resources.Listener]())
	wantDeltaRequest(t, ms, true, sub(lds))
	cancelA := client.Watch(c, resources.ListenerType, "A", newRecorder[*resources.Listener]())
	wantDeltaRequest(t, ms, false, sub(lds, "*", "A"))
	cancelAll()
	wantDeltaRequest(t, ms, false, unsub(lds, "*"))
	cancelB := client.Watch(c, resources.ListenerType, "B", newRecorder[*resources.Listener]())
	wantDeltaRequest(t, ms, false, sub(lds, "B"))
	cancelA()
	wantDeltaRequest(t, ms, false, unsub(lds, "A"))
	cancelB()
	wantNoRequest(t, ms)
}

// TestWildcard_LegacyCancelRestartsStream checks what cancelling the last
// WatchAll of a type does when its wildcard went out in the legacy form
// an empty list would still mean the wildcard, so the
// stream restarts at once, without backoff, and asks for what is still
// watched (here a Listener), with the versions ACKed; the
// resources received only through the wildcard are forgotten. SotW and
// delta.
func TestWildcard_LegacyCancelRestartsStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
			ms.Update("", testutil.Resources{Version: "1", Listeners: []*v3listenerpb.Listener{testutil.Listener("l", "r")}, Clusters: namedClusters("a", "b")})
			c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
			wl := newRecorder[*resources.Listener]()
			defer client.Watch(c, resources.ListenerType, "l", wl)()
			wl.wantKind(ctx, t, changed, nil)
			all := newRecorder[*resources.Cluster]()
			cancelAll := client.WatchAll(c, resources.ClusterType, all)
			all.wantKind(ctx, t, changed, nil)
			all.wantKind(ctx, t, changed, nil)
			synctest.Wait()
			before := time.Now()
			cancelAll()
			r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 })
			if err != nil {
				t.Fatal(err)
			}
			if time.Since(before) != 0 {
				t.Errorf("the stream restarted after %v, want at once", time.Since(before))
			}
			if delta {
				if got := r.Delta.GetResourceNamesSubscribe(); r.Delta.GetTypeUrl() != lds || !slices.Equal(got, []string{"l"}) {
					t.Fatalf("first request of the new stream = %v, want LDS [l]", r.Delta)
				}
			} else if r.Req.GetTypeUrl() != lds || !slices.Equal(r.Req.GetResourceNames(), []string{"l"}) || r.Req.GetVersionInfo() != "1" {
				t.Fatalf("first request of the new stream = %v, want LDS [l] at version 1", r.Req)
			}
			synctest.Wait()
			for _, r := range ms.Requests() {
				if r.StreamID == 2 && (r.Req.GetTypeUrl() == cds || r.Delta.GetTypeUrl() == cds) {
					t.Fatalf("the new stream asked for clusters: %v", r)
				}
			}
			if g := dumpEntry(c, cds, "a"); g != nil {
				t.Fatalf("CSDS entry of a wildcard-only cluster after the WatchAll was cancelled = %v, want none", g)
			}
			all.wantNone(t, time.Second)
			wl.wantNone(t, time.Second)
		})
	})
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
		synctestTest(t, func(t *testing.T) { testWildcardSharedCacheEntry(t, opts...) })
	})
}

func testWildcardSharedCacheEntry(t *testing.T, opts ...client.Option) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
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
	// The entry goes once the unsubscription is written.
	synctest.Wait()
	if g := dumpEntry(c, cds, "a"); g != nil {
		t.Fatalf("CSDS entry of a after WatchAll was cancelled = %v, want none", g)
	}
	if g := dumpEntry(c, cds, "b"); g.GetXdsConfig() == nil {
		t.Fatalf("CSDS entry of b = %v, want it kept (watched)", g)
	}
	wb.wantNone(t, defaultTestShortTimeout)
}

// TestWildcard_ReconnectNamesStarExplicitly checks what a new stream asks
// for when the wildcard and a name are subscribed: in SotW the legacy
// wildcard [] (it covers the name) with the last version;
// in delta subscribe ["*", "a"] with initial_resource_versions of
// everything cached, wildcard-received resources included.
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
		} else if len(r.Req.GetResourceNames()) != 0 || r.Req.GetVersionInfo() != "7" {
			t.Fatalf("first SotW request on the new stream = %v, want the legacy wildcard [] (covering a) at version 7", r.Req)
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
	wantDeltaRequest(t, ms, true, sub(cds))
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

// TestWildcard_WatchStarIsWatchAll checks that Watch of the name "*" is no
// trap: it is WatchAll (every resource of the type arrives, each under its
// own name), and the wildcard is subscribed as WatchAll subscribes it.
func TestWildcard_WatchStarIsWatchAll(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, _ bool, opts ...client.Option) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
		ms.Update("", testutil.Resources{Clusters: namedClusters("a", "b")})
		c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "*", w)()
		got := map[string]bool{}
		for range 2 {
			got[w.wantKind(ctx, t, changed, nil).value.Name] = true
		}
		if !got["a"] || !got["b"] {
			t.Fatalf("Watch of \"*\" got %v, want a and b", got)
		}
		if g := dumpEntry(c, cds, "*"); g != nil {
			t.Fatalf("CSDS has an entry named \"*\": %v", g)
		}
	})
}

// wantNoRequest fails the test if the server gets a request within
// defaultTestShortTimeout: after the last watch is cancelled, the stream
// closes without one.
func wantNoRequest(t *testing.T, ms *testutil.ManagementServer) {
	t.Helper()
	ctx, cancel := contextWithTimeout(t, defaultTestShortTimeout)
	defer cancel()
	if r, err := ms.NextRequest(ctx); err == nil {
		t.Fatalf("request %v %v after the last watch was cancelled, want the stream closed", r.Req, r.Delta)
	}
}

// TestWildcard_EveryType checks the wildcard's form for every built-in
// type in both variants (xDS protocol, "How the client specifies what
// resources to return"; R-11.5): the legacy form, an empty list, only for
// Listener and Cluster, where the protocol defines it; "*" for
// RouteConfiguration and ClusterLoadAssignment. Against testutil's server,
// which gives the legacy form to Listener and Cluster only (as the
// protocol says), every type's WatchAll receives the type's resources. On
// the old engine the RouteConfiguration and ClusterLoadAssignment
// wildcards went out as empty lists, and in delta got nothing.
func TestWildcard_EveryType(t *testing.T) {
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	for _, tc := range []struct {
		name   string
		url    string
		legacy bool
		watch  func(c *client.Client, got chan<- string) func()
	}{
		{"Listener", resources.ListenerTypeURL, true, func(c *client.Client, got chan<- string) func() {
			return client.WatchAll(c, resources.ListenerType, namesOf(got, func(l *resources.Listener) string { return l.Name }))
		}},
		{"RouteConfiguration", resources.RouteConfigTypeURL, false, func(c *client.Client, got chan<- string) func() {
			return client.WatchAll(c, resources.RouteConfigType, namesOf(got, func(r *resources.RouteConfig) string { return r.Name }))
		}},
		{"Cluster", resources.ClusterTypeURL, true, func(c *client.Client, got chan<- string) func() {
			return client.WatchAll(c, resources.ClusterType, namesOf(got, func(c *resources.Cluster) string { return c.Name }))
		}},
		{"ClusterLoadAssignment", resources.EndpointsTypeURL, false, func(c *client.Client, got chan<- string) func() {
			return client.WatchAll(c, resources.EndpointsType, namesOf(got, func(e *resources.Endpoints) string { return e.ClusterName }))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
				ctx := testContext(t)
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
				if err := ms.Update("", chain); err != nil {
					t.Fatal(err)
				}
				c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
				got := make(chan string, 10)
				defer tc.watch(c, got)()
				r, err := ms.NextRequest(ctx)
				if err != nil {
					t.Fatal(err)
				}
				names := r.Req.GetResourceNames()
				if delta {
					names = r.Delta.GetResourceNamesSubscribe()
				}
				if tc.legacy && len(names) != 0 || !tc.legacy && !slices.Equal(names, []string{"*"}) {
					t.Fatalf("first request subscribes %q, want the legacy form %v", names, tc.legacy)
				}
				select {
				case n := <-got:
					t.Logf("WatchAll got %q", n)
				case <-ctx.Done():
					t.Fatal("WatchAll got nothing")
				}
			})
		})
	}
}

// namesOf returns a watcher that sends the name of each value to got.
func namesOf[T any](got chan<- string, name func(T) string) watcher.Funcs[T] {
	return watcher.Funcs[T]{OnChanged: func(v T) { got <- name(v) }}
}
