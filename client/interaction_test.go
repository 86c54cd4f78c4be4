// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// The tests of this file cover features of the engine where they meet:
// fallback, channel retirement and the entry lifetime,
// persistence, TTLs, server-reported errors and
// metrics. They run in fake time against in-memory servers.

// interactionPair is fallbackPair (SotW, snapshot mode) with client
// options.
func interactionPair(t *testing.T, primaryDown bool, opts ...client.Option) (primary, fallback *testutil.ManagementServer, c *client.Client) {
	t.Helper()
	return fallbackPairWith(t, testutil.ServerOptions{InMemory: true}, primaryDown, false, opts...)
}

// persisted is a stored Cluster a whose EDS service name is eds.
func persisted(server, name, eds string) client.PersistedResource {
	return client.PersistedResource{ServerURI: server, TypeURL: resources.ClusterTypeURL, Name: name, Version: "old",
		Resource: testutil.MarshalAny(testutil.Cluster(name, eds)), Updated: time.Now()}
}

// TestInteraction_PersistedValueDoesNotBlockFallback checks with
// a value served from persistence is not a value received from a
// server, so it does not stop fallback. The persistence timeout passes
// with nothing watched; a watch of a persisted resource then gets the
// stale value at once, and when the primary turns out to be down, the
// client falls back and the fallback server's value replaces the stale
// one; the watcher hears of no connection error.
func TestInteraction_PersistedValueDoesNotBlockFallback(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := newMemStore()
		store.Save(persisted("primary", "a", "persisted"))
		_, fallback, c := interactionPair(t, true, client.WithStore(store), client.WithPersistenceTimeout(time.Second))
		fallback.Update("", clusters("fallback", "a"))
		time.Sleep(2 * time.Second) // the persistence timeout passes

		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		wantFrom(t, w, "persisted")
		w.wantKind(ctx, t, ambientError, client.ErrStale)
		wantFrom(t, w, "fallback")
		if o, ok := c.ResourceOrigin(resources.ClusterType, "a"); !ok || o.Stale || o.ServerURI != "fallback" {
			t.Fatalf("ResourceOrigin = %+v, %v; want fresh, from fallback", o, ok)
		}
		wantNoneNow(t, w)
	})
}

// TestInteraction_StaleValueDeletedByServer checks with: a
// value served from persistence that the server then deletes (a CDS
// response that leaves it out) is deleted from the store too, so that a
// later start does not serve it again, and Dump shows DOES_NOT_EXIST
// without the stale error_state (ResourceOrigin: nothing cached).
func TestInteraction_StaleValueDeletedByServer(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := newMemStore()
		store.Save(persisted(testutil.InMemoryAddress, "a", "persisted"))
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.RejectStreams(errors.New("down"))
		ms.Update("", clusters("server", "b"))
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithStore(store), client.WithPersistenceTimeout(time.Second))
		wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		defer client.Watch(c, resources.ClusterType, "b", wb)()
		e := skipConnectionErrors(t, wa)
		if e.kind != changed || e.value.EDSServiceName != "persisted" {
			t.Fatalf("event = %v, want the persisted cluster", e)
		}
		wa.wantKind(ctx, t, ambientError, client.ErrStale)

		ms.RejectStreams(nil)
		if e := skipConnectionErrors(t, wa); e.kind != resourceError || !errors.Is(e.err, client.ErrResourceNotFound) {
			t.Fatalf("event = %v, want a deletion", e)
		}
		store.waitFor(t, func(m map[string]client.PersistedResource) bool {
			_, ok := m[memKey(testutil.InMemoryAddress, resources.ClusterTypeURL, "a")]
			return !ok
		})
		g := dumpEntry(c, resources.ClusterTypeURL, "a")
		if g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST || g.GetErrorState() != nil || g.GetXdsConfig() != nil {
			t.Fatalf("Dump entry = %v, want DOES_NOT_EXIST without value or error_state", g)
		}
		if o, ok := c.ResourceOrigin(resources.ClusterType, "a"); ok {
			t.Fatalf("ResourceOrigin = %+v, want nothing cached", o)
		}
	})
}

// TestInteraction_TTLValueNotPersisted checks R-18 with: a value
// sent with a TTL is not persisted, since its server wants it gone once
// the server cannot be reached, which is when a persisted value would be
// served; a heartbeat that removes the TTL makes it persisted, and the
// same bytes resent with a TTL delete the stored copy again.
func TestInteraction_TTLValueNotPersisted(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := newMemStore()
		ms, c := inMemory(t, client.WithStore(store))
		wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		defer client.Watch(c, resources.ClusterType, "b", wb)()
		waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
		send := func(version string, rs ...*anypb.Any) {
			t.Helper()
			if _, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, version, rs...)); err != nil {
				t.Fatal(err)
			}
		}
		stored := func(name string) bool {
			synctest.Wait()
			return store.get(testutil.InMemoryAddress, resources.ClusterTypeURL, name) != nil
		}
		a, b := testutil.Cluster("a", "eds-a"), testutil.Cluster("b", "eds-b")
		send("1", wrapped("a", a, time.Minute), wrapped("b", b, 0))
		wa.wantKind(ctx, t, changed, nil)
		wb.wantKind(ctx, t, changed, nil)
		if !stored("b") || stored("a") {
			t.Fatalf("stored a, b = %v, %v; want only b (a has a TTL)", stored("a"), stored("b"))
		}
		send("2", wrapped("a", nil, 0), wrapped("b", b, 0)) // a heartbeat without TTL
		if !stored("a") {
			t.Fatal("a not stored after a heartbeat removed its TTL")
		}
		send("3", wrapped("a", a, time.Minute), wrapped("b", b, 0)) // same bytes, with a TTL
		if stored("a") {
			t.Fatal("a still stored after it was resent with a TTL")
		}
		wantNoneNow(t, wa)
	})
}

// connectedOf returns the connected gauge of each server with a stream.
func connectedOf(c *client.Client) map[string]bool {
	out := make(map[string]bool)
	for _, sc := range c.Gauges().Connected {
		out[sc.Server] = sc.Connected
	}
	return out
}

// TestInteraction_FallbackRetireRewatch checks R-15 with:
// with the primary down, a watch is served by the fallback server; when
// its last watch is cancelled both channels are retired (no stream left,
// no connected gauge); a watch made again starts over from the primary,
// as a first watch does (grpc-go's authority likewise closes its channels
// and starts again from its first server): with the primary still down
// it falls back at once, silently, without counting another
// server_failure; with the primary back, the primary serves it and the
// fallback server is not asked at all (no config flapping between
// servers).
func TestInteraction_FallbackRetireRewatch(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		m := newFakeMetrics()
		primary, fallback, c := interactionPair(t, true, client.WithMetrics(m))
		primary.Update("", clusters("primary", "a"))
		fallback.Update("", clusters("fallback", "a"))
		cycle := func() (cancel func(), w *recorder[*resources.Cluster]) {
			w = newRecorder[*resources.Cluster]()
			return client.Watch(c, resources.ClusterType, "a", w), w
		}
		retired := func() {
			t.Helper()
			for _, ms := range []*testutil.ManagementServer{primary, fallback} {
				if err := ms.WaitForOpenStreams(ctx, 0); err != nil {
					t.Fatal(err)
				}
			}
			synctest.Wait()
			if g := connectedOf(c); len(g) != 0 {
				t.Fatalf("connected gauges = %v with nothing watched, want none", g)
			}
		}

		cancel, w := cycle()
		wantFrom(t, w, "fallback")
		if g := connectedOf(c); g["primary"] || !g["fallback"] {
			t.Fatalf("connected gauges = %v during fallback, want primary 0, fallback 1", g)
		}
		cancel()
		retired()

		// Again with the primary down: fallback again, no new failure.
		cancel, w = cycle()
		wantFrom(t, w, "fallback")
		wantOrigin(t, c, "a", "fallback")
		wantNoneNow(t, w)
		if n := m.failuresOf(client.DefaultTarget, "primary"); n != 1 {
			t.Fatalf("server_failure{primary} = %d, want 1 (the server stayed down)", n)
		}
		cancel()
		retired()

		// The primary is back: it serves the new watch, alone.
		primary.RejectStreams(nil)
		asked := len(fallback.Requests())
		cancel, w = cycle()
		defer cancel()
		wantFrom(t, w, "primary")
		wantOrigin(t, c, "a", "primary")
		synctest.Wait()
		if n := len(fallback.Requests()); n != asked || fallback.OpenStreams() != 0 {
			t.Fatalf("fallback server got %d more requests and has %d streams after the primary came back, want none", n-asked, fallback.OpenStreams())
		}
		if g := connectedOf(c); !g["primary"] || len(g) != 1 {
			t.Fatalf("connected gauges = %v, want primary 1 only", g)
		}
		if n := m.failuresOf(client.DefaultTarget, "fallback"); n != 0 {
			t.Fatalf("server_failure{fallback} = %d, want 0", n)
		}
		wantNoneNow(t, w)
	})
}

// nowEvent returns the event w has now, once every goroutine of the bubble
// is blocked, without advancing fake time; it fails the test if there is
// none.
func nowEvent[T any](t *testing.T, w *recorder[T]) event[T] {
	t.Helper()
	synctest.Wait()
	select {
	case e := <-w.events:
		return e
	default:
		t.Fatal("no watcher event now, want one at once")
	}
	panic("unreachable")
}

// TestInteraction_TTLExpiresWhileUnsubscribing checks R-18 with:
// a resource whose last watch was cancelled keeps its entry until the
// unsubscription is written, also when its TTL expires meanwhile; a watch
// made again before the unsubscription is written learns at once that it
// does not exist, where a new entry would wait for the server
// (which never heard of the unsubscription and will not resend it) and for
// the does-not-exist timer. A new value later is timed with its own TTL
// only: no timer of the old value fires.
func TestInteraction_TTLExpiresWhileUnsubscribing(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))
		defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
		w := newRecorder[*resources.Cluster]()
		cancel := client.Watch(c, resources.ClusterType, "a", w)
		waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
		if _, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1",
			wrapped("a", testutil.Cluster("a", ""), 30*time.Second), wrapped("b", testutil.Cluster("b", ""), 0))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, changed, nil)
		synctest.Wait() // the ACK is written

		rb.hold()
		cancel()
		<-rb.sending // the unsubscription waits at the gate
		time.Sleep(31 * time.Second)
		w = newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		if e := nowEvent(t, w); e.kind != resourceError || !errors.Is(e.err, client.ErrResourceNotFound) {
			t.Fatalf("re-watch got %v, want at once a ResourceError wrapping ErrResourceNotFound", e)
		}
		rb.release()
		if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
			t.Fatalf("Dump entry of a = %v, want DOES_NOT_EXIST", g)
		}

		waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
		if _, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "2",
			wrapped("a", testutil.Cluster("a", ""), 2*time.Minute), wrapped("b", testutil.Cluster("b", ""), 0))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, changed, nil)
		start := time.Now()
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if d := time.Since(start); d != 2*time.Minute {
			t.Fatalf("new value expired after %v, want its own TTL of 2m", d)
		}
	})
}

// gatedStore is a memStore whose Save waits for gate while gate is open.
type gatedStore struct {
	*memStore
	gate   chan struct{} // closed to let Saves through
	saving chan struct{} // receives a value when a Save starts waiting
}

func (s *gatedStore) Save(r client.PersistedResource) error {
	s.saving <- struct{}{}
	<-s.gate
	return s.memStore.Save(r)
}

// TestInteraction_CloseDuringFallbackPersistAndTTL checks Close where the
// features meet: during fallback (the primary's stream being retried),
// with a TTL timer pending and a persistence write in progress. Close
// waits for the write (R-10.5: it writes what is pending), returns, and
// leaves nothing behind: no watcher call afterwards, even when the TTL
// would have expired, and the bubble ends with no goroutine left.
func TestInteraction_CloseDuringFallbackPersistAndTTL(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := &gatedStore{memStore: newMemStore(), gate: make(chan struct{}), saving: make(chan struct{}, 10)}
		_, fallback, c := fallbackPairWith(t, testutil.ServerOptions{InMemory: true, Manual: true}, true, false, client.WithStore(store))
		wa, wt := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		defer client.Watch(c, resources.ClusterType, "t", wt)()
		waitForNames(t, fallback, resources.ClusterTypeURL, "a", "t")
		if _, err := fallback.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1",
			wrapped("a", testutil.Cluster("a", "fallback"), 0), wrapped("t", testutil.Cluster("t", "fallback"), time.Minute))); err != nil {
			t.Fatal(err)
		}
		wantFrom(t, wa, "fallback")
		wantFrom(t, wt, "fallback")
		<-store.saving // the writer waits in Save of a

		closed := make(chan struct{})
		go func() {
			c.Close()
			close(closed)
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a persistence write was in progress")
		default:
		}
		close(store.gate)
		<-closed
		if r := store.get("fallback", resources.ClusterTypeURL, "a"); r == nil {
			t.Fatal("the pending write was not done by Close")
		}
		time.Sleep(time.Hour) // past the TTL of t and many retries of the primary
		wantNoneNow(t, wa)
		wantNoneNow(t, wt)
		w := newRecorder[*resources.Cluster]()
		client.WatchAll(c, resources.ClusterType, w)
		w.wantKind(ctx, t, resourceError, client.ErrClosed)
	})
}

// TestInteraction_ServerErrorWhileUnsubscribing checks R-19 with
// and: the server reports an error for a resource whose last watch
// was cancelled, the unsubscription not written yet (the server still
// thinks it is wanted); a watch made again before the unsubscription is
// written learns it at once: the cached value and the error as an
// AmbientError, or, with fail_on_data_errors and NOT_FOUND, a
// ResourceError wrapping ErrResourceNotFound and no value, as Dump says.
func TestInteraction_ServerErrorWhileUnsubscribing(t *testing.T) {
	for _, failOnDataErrors := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail_on_data_errors=%v", failOnDataErrors), func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ctx := testContext(t)
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
				rb := newRecordingBuilder(ms.TransportBuilder())
				var bopts testutil.BootstrapOptions
				if failOnDataErrors {
					bopts.ServerFeatures = []string{"fail_on_data_errors"}
				}
				c := newClient(t, ms, bopts, client.WithTransportBuilder(rb))
				defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
				w := newRecorder[*resources.Cluster]()
				cancel := client.Watch(c, resources.ClusterType, "a", w)
				waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
				a, b := testutil.MarshalAny(testutil.Cluster("a", "")), testutil.MarshalAny(testutil.Cluster("b", ""))
				if _, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1", a, b)); err != nil {
					t.Fatal(err)
				}
				w.wantKind(ctx, t, changed, nil)
				synctest.Wait()

				rb.hold()
				cancel()
				<-rb.sending // the unsubscription waits at the gate
				resp := sotwResponse(resources.ClusterTypeURL, "2", b)
				resp.ResourceErrors = []*v3discoverypb.ResourceError{resourceErr("a", codes.NotFound, "gone for now")}
				if _, err := ms.SendResponse(ctx, resp); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				w = newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, "a", w)()
				g := dumpEntry(c, resources.ClusterTypeURL, "a")
				if failOnDataErrors {
					if e := nowEvent(t, w); e.kind != resourceError || !errors.Is(e.err, client.ErrResourceNotFound) {
						t.Fatalf("re-watch got %v, want a ResourceError wrapping ErrResourceNotFound", e)
					}
					if g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST || g.GetXdsConfig() != nil {
						t.Fatalf("Dump entry of a = %v, want DOES_NOT_EXIST without a value", g)
					}
				} else {
					if e := nowEvent(t, w); e.kind != changed {
						t.Fatalf("re-watch got %v, want the cached value", e)
					}
					e := nowEvent(t, w)
					if e.kind != ambientError {
						t.Fatalf("re-watch got %v, want the server's error as an AmbientError", e)
					}
					wantServerError(t, e.err, codes.NotFound)
					if g.GetClientStatus() != v3adminpb.ClientResourceStatus_RECEIVED_ERROR || g.GetXdsConfig() == nil {
						t.Fatalf("Dump entry of a = %v, want RECEIVED_ERROR with the value", g)
					}
				}
				rb.release()
				wantNoneNow(t, w)
			})
		})
	}
}

// TestInteraction_PersistenceWithFallback checks with R-15: with
// both servers of the list down, the persisted value is served, stale,
// once the persistence timeout passed (and only then); the fallback
// server, once up, replaces it; the primary, once up, takes over (revert).
// ResourceOrigin and Dump follow what the watcher was given at each step;
// each server's failure counted once, and only the primary has a stream
// in the end.
func TestInteraction_PersistenceWithFallback(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := newMemStore()
		store.Save(persisted("primary", "a", "persisted"))
		m := newFakeMetrics()
		primary, fallback, c := interactionPair(t, true, client.WithStore(store), client.WithPersistenceTimeout(3*time.Second), client.WithMetrics(m))
		fallback.RejectStreams(errors.New("fallback down"))
		primary.Update("", clusters("primary", "a"))
		fallback.Update("", clusters("fallback", "a"))
		start := time.Now()
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		e := skipConnectionErrors(t, w)
		if e.kind != changed || e.value.EDSServiceName != "persisted" || time.Since(start) != 3*time.Second {
			t.Fatalf("event = %v after %v, want the persisted cluster after 3s", e, time.Since(start))
		}
		w.wantKind(ctx, t, ambientError, client.ErrStale)
		if o, ok := c.ResourceOrigin(resources.ClusterType, "a"); !ok || !o.Stale || o.ServerURI != "primary" {
			t.Fatalf("ResourceOrigin = %+v, %v; want stale, from primary", o, ok)
		}

		fallback.RejectStreams(nil)
		if e := skipConnectionErrors(t, w); e.kind != changed || e.value.EDSServiceName != "fallback" {
			t.Fatalf("event = %v, want the fallback server's cluster", e)
		}
		if o, _ := c.ResourceOrigin(resources.ClusterType, "a"); o.Stale || o.ServerURI != "fallback" {
			t.Fatalf("ResourceOrigin = %+v, want fresh, from fallback", o)
		}
		if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetErrorState() != nil || g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED {
			t.Fatalf("Dump entry = %v, want ACKED without error_state", g)
		}

		primary.RejectStreams(nil)
		if e := skipConnectionErrors(t, w); e.kind != changed || e.value.EDSServiceName != "primary" {
			t.Fatalf("event = %v, want the primary's cluster", e)
		}
		wantOrigin(t, c, "a", "primary")
		if err := fallback.WaitForOpenStreams(ctx, 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if g := connectedOf(c); len(g) != 1 || !g["primary"] {
			t.Fatalf("connected gauges = %v after the revert, want primary 1 only (R-21.2)", g)
		}
		if n := m.failuresOf(client.DefaultTarget, "primary"); n != 1 {
			t.Fatalf("server_failure{primary} = %d, want 1", n)
		}
		if n := m.failuresOf(client.DefaultTarget, "fallback"); n != 1 {
			t.Fatalf("server_failure{fallback} = %d, want 1", n)
		}
		wantNoneNow(t, w)
	})
}

// TestInteraction_WatchAllDuringFallbackThenRevert checks WatchAll with
// the wildcard is a subscription of the authority of the top-level
// servers, so it follows the authority's fallback and revert: it
// is subscribed on the fallback server while that one is active, and on
// the primary after the revert, whose answer is the whole truth: a
// resource the fallback server had and the primary has not is deleted. A
// resource also watched by name shares its cache entry with the wildcard
// its WatchAll watchers hear of it as its Watch watcher does.
func TestInteraction_WatchAllDuringFallbackThenRevert(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		primary, fallback, c := interactionPair(t, true)
		primary.Update("", clusters("primary", "a"))
		fallback.Update("", clusters("fallback", "a", "b"))
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		wantFrom(t, w, "fallback")
		wall := newRecorder[*resources.Cluster]()
		defer client.WatchAll(c, resources.ClusterType, wall)()
		got := map[string]string{}
		for range 2 {
			e := wall.wantKind(ctx, t, changed, nil)
			got[e.value.Name] = e.value.EDSServiceName
		}
		if got["a"] != "fallback" || got["b"] != "fallback" {
			t.Fatalf("WatchAll got %v, want a and b from the fallback server", got)
		}

		primary.RejectStreams(nil)
		wantFrom(t, w, "primary")
		wantFrom(t, wall, "primary")
		if e := wall.wantKind(ctx, t, resourceError, client.ErrResourceNotFound); !strings.Contains(e.err.Error(), `"b"`) {
			t.Fatalf("WatchAll: %v, want b deleted: the primary has no b", e)
		}
		wantOrigin(t, c, "a", "primary")
		if err := fallback.WaitForOpenStreams(ctx, 0); err != nil {
			t.Fatal(err)
		}

		primary.Update("", clusters("primary", "other"))
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if e := wall.wantKind(ctx, t, changed, nil); e.value.Name != "other" {
			t.Fatalf("WatchAll: %v, want other", e)
		}
		if e := wall.wantKind(ctx, t, resourceError, client.ErrResourceNotFound); !strings.Contains(e.err.Error(), `"a"`) {
			t.Fatalf("WatchAll: %v, want a deleted", e)
		}
		wantNoneNow(t, wall)
	})
}

// TestInteraction_TTLExpiryDuringOutageFallsBack checks R-18 with:
// a resource the primary sent with a TTL stays in use while the primary
// is down (cached: no fallback, gRFC A71), until its TTL runs out; it is
// then no longer cached, as the TTL's server wanted, and the next failure
// of the primary falls back to the next server, which serves it.
func TestInteraction_TTLExpiryDuringOutageFallsBack(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		primary, fallback, c := fallbackPairWith(t, testutil.ServerOptions{InMemory: true, Manual: true}, false, false)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		waitForNames(t, primary, resources.ClusterTypeURL, "a")
		if _, err := primary.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1", wrapped("a", testutil.Cluster("a", "primary"), time.Minute))); err != nil {
			t.Fatal(err)
		}
		wantFrom(t, w, "primary")
		primary.RejectStreams(errors.New("primary down"))
		primary.BreakStreams()
		e := skipConnectionErrors(t, w)
		if e.kind != resourceError || !errors.Is(e.err, client.ErrResourceNotFound) || !strings.Contains(e.err.Error(), "TTL") {
			t.Fatalf("event = %v, want the TTL expiry", e)
		}
		if n := len(fallback.Requests()); n != 0 {
			t.Fatalf("fallback server got %d requests while a was cached, want none", n)
		}
		waitForNames(t, fallback, resources.ClusterTypeURL, "a")
		if _, err := fallback.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1", testutil.MarshalAny(testutil.Cluster("a", "fallback")))); err != nil {
			t.Fatal(err)
		}
		if e := skipConnectionErrors(t, w); e.kind != changed || e.value.EDSServiceName != "fallback" {
			t.Fatalf("event = %v, want the fallback server's cluster", e)
		}
		wantOrigin(t, c, "a", "fallback")
	})
}

// TestInteraction_FailOnDataErrorsWithIgnoreDeletion checks with
// over SotW, with both server features: an
// omission keeps the cached value (the deletion is ignored, gauge
// does_not_exist_but_cached); a NACK then drops it (ResourceError, gauge
// nacked); another omission changes nothing; a server-reported NOT_FOUND
// makes it not exist; a valid version brings it back. Dump, the gauge and
// the watcher agree at each step.
func TestInteraction_FailOnDataErrorsWithIgnoreDeletion(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: []string{bootstrap.FeatureFailOnDataErrors, bootstrap.FeatureIgnoreResourceDeletion}})
		defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
		send := func(resp *v3discoverypb.DiscoveryResponse) {
			t.Helper()
			if _, err := ms.SendResponse(ctx, resp); err != nil {
				t.Fatal(err)
			}
		}
		step := func(name, state string, status v3adminpb.ClientResourceStatus, value bool) {
			t.Helper()
			synctest.Wait()
			got := ""
			for _, rc := range c.Gauges().Resources {
				if rc.Count == 1 && rc.CacheState != client.CacheStateACKed {
					got = rc.CacheState
				}
			}
			if state != client.CacheStateACKed && got != state {
				t.Fatalf("%s: cache state of a = %q, want %q (%v)", name, got, state, c.Gauges().Resources)
			}
			if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != status || (g.GetXdsConfig() != nil) != value {
				t.Fatalf("%s: Dump entry of a = %v, want %v with value %v", name, g, status, value)
			}
		}
		b := testutil.Cluster("b", "")
		send(discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""), b))
		w.wantKind(ctx, t, changed, nil)
		step("valid", client.CacheStateACKed, v3adminpb.ClientResourceStatus_ACKED, true)

		send(discoveryResponse(resources.ClusterTypeURL, "2", b))
		wantNoneNow(t, w)
		step("omitted", client.CacheStateDoesNotExistButCached, v3adminpb.ClientResourceStatus_ACKED, true)

		send(discoveryResponse(resources.ClusterTypeURL, "3", invalidCluster("a"), b))
		w.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
		step("NACKed", client.CacheStateNACKed, v3adminpb.ClientResourceStatus_NACKED, false)

		send(discoveryResponse(resources.ClusterTypeURL, "4", b))
		wantNoneNow(t, w)
		step("omitted again", client.CacheStateNACKed, v3adminpb.ClientResourceStatus_NACKED, false)

		resp := discoveryResponse(resources.ClusterTypeURL, "5", b)
		resp.ResourceErrors = []*v3discoverypb.ResourceError{resourceErr("a", codes.NotFound, "gone")}
		send(resp)
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		step("NOT_FOUND", client.CacheStateDoesNotExist, v3adminpb.ClientResourceStatus_DOES_NOT_EXIST, false)

		send(discoveryResponse(resources.ClusterTypeURL, "6", testutil.Cluster("a", ""), b))
		w.wantKind(ctx, t, changed, nil)
		step("back", client.CacheStateACKed, v3adminpb.ClientResourceStatus_ACKED, true)
		wantNoneNow(t, w)
	})
}

// TestInteraction_GlobRetireRewatch checks xdstp glob collections
// with, over delta: a member also watched by name stays
// when the glob is cancelled; when its watch goes too, nothing is watched
// on the server and the stream closes; a glob watched again opens a new
// stream that subscribes to it afresh (no initial_resource_versions: the
// cache of the old stream was dropped) and delivers every member again.
func TestInteraction_GlobRetireRewatch(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		c := newClient(t, ms, testutil.BootstrapOptions{Authorities: map[string]string{"auth": ""}}, client.WithDelta())
		const (
			glob = "xdstp://auth/envoy.config.cluster.v3.Cluster/pool/*"
			c1   = "xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c1"
			c2   = "xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c2"
		)
		members := func() *v3discoverypb.DeltaDiscoveryResponse {
			return deltaResponse(resources.ClusterTypeURL, nil,
				deltaResource{name: c1, version: "1", msg: testutil.Cluster(c1, "eds")},
				deltaResource{name: c2, version: "1", msg: testutil.Cluster(c2, "eds")})
		}
		wantMembers := func(w *recorder[*resources.Cluster]) {
			t.Helper()
			for _, want := range []string{c1, c2} {
				if e := w.wantKind(ctx, t, changed, nil); e.value.Name != want {
					t.Fatalf("glob watcher got %v, want %s", e, want)
				}
			}
		}
		w := newRecorder[*resources.Cluster]()
		cancelGlob := client.Watch(c, resources.ClusterType, glob, w)
		wantDeltaRequest(t, ms, true, sub(resources.ClusterTypeURL, glob))
		nonce := sendDelta(t, ms, members())
		wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
		wantMembers(w)

		w1 := newRecorder[*resources.Cluster]()
		cancel1 := client.Watch(c, resources.ClusterType, c1, w1)
		w1.wantKind(ctx, t, changed, nil) // from the cache
		wantDeltaRequest(t, ms, false, sub(resources.ClusterTypeURL, c1))
		cancelGlob()
		wantDeltaRequest(t, ms, false, unsub(resources.ClusterTypeURL, glob))
		synctest.Wait()
		if dumpEntry(c, resources.ClusterTypeURL, c2) != nil || dumpEntry(c, resources.ClusterTypeURL, c1) == nil {
			t.Fatalf("Dump = %v, want c1 only", c.Dump())
		}
		cancel1()
		if err := ms.WaitForOpenStreams(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if g := c.Dump().GetGenericXdsConfigs(); len(g) != 0 {
			t.Fatalf("Dump = %v with nothing watched, want empty", g)
		}

		w = newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, glob, w)()
		wantDeltaRequest(t, ms, true, sub(resources.ClusterTypeURL, glob))
		nonce = sendDelta(t, ms, members())
		wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
		wantMembers(w)
		wantNoneNow(t, w)
	})
}

// TestInteraction_DeltaRemovalWhileUnsubscribing is the delta case of
// TestInteraction_TTLExpiresWhileUnsubscribing for a deletion (R-6.2,
// removed_resources names a resource whose unsubscription is not
// written yet; a watch made again before it is learns at once that the
// resource does not exist.
func TestInteraction_DeltaRemovalWhileUnsubscribing(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithDelta(), client.WithTransportBuilder(rb))
		defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
		w := newRecorder[*resources.Cluster]()
		cancel := client.Watch(c, resources.ClusterType, "a", w)
		// One request or two, as the stream's goroutine is scheduled.
		for subscribed := map[string]bool{}; !subscribed["a"] || !subscribed["b"]; {
			r, err := ms.NextRequest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range r.Delta.GetResourceNamesSubscribe() {
				subscribed[n] = true
			}
		}
		nonce := sendDelta(t, ms, deltaResponse(resources.ClusterTypeURL, nil,
			deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")},
			deltaResource{name: "b", version: "1", msg: testutil.Cluster("b", "")}))
		wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
		w.wantKind(ctx, t, changed, nil)

		rb.hold()
		cancel()
		<-rb.sending // the unsubscription waits at the gate
		sendDelta(t, ms, deltaResponse(resources.ClusterTypeURL, []string{"a"}))
		synctest.Wait()
		w = newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		if e := nowEvent(t, w); e.kind != resourceError || !errors.Is(e.err, client.ErrResourceNotFound) {
			t.Fatalf("re-watch got %v, want at once a ResourceError wrapping ErrResourceNotFound", e)
		}
		rb.release()
		wantNoneNow(t, w)
	})
}

// TestInteraction_FallbackRetireRewatch_GRPC is
// TestInteraction_FallbackRetireRewatch over real gRPC:
// two management servers on loopback, the primary refusing streams; the
// watch is served by the fallback; once cancelled, both streams close (the
// connections stay until Close); with the primary back, a new watch is
// served by the primary and the fallback server opens no stream. Bounds
// are generous real time for a loaded machine.
func TestInteraction_FallbackRetireRewatch_GRPC(t *testing.T) {
	ctx := testContext(t)
	primary := testutil.NewManagementServer(t, testutil.ServerOptions{})
	fallback := testutil.NewManagementServer(t, testutil.ServerOptions{})
	primary.RejectStreams(errors.New("primary down"))
	primary.Update("", clusters("primary", "a"))
	fallback.Update("", clusters("fallback", "a"))
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{
		"xds_servers": [
			{"server_uri": %q, "channel_creds": [{"type": "insecure"}]},
			{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}
		],
		"node": {"id": "test-node"}
	}`, primary.Address(), fallback.Address())))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	from := func(w *recorder[*resources.Cluster], want string) {
		t.Helper()
		e := w.wantKind(ctx, t, changed, nil)
		if e.value.EDSServiceName != want {
			t.Fatalf("cluster came from %q, want %q", e.value.EDSServiceName, want)
		}
	}

	w := newRecorder[*resources.Cluster]()
	cancel := client.Watch(c, resources.ClusterType, "a", w)
	from(w, "fallback")
	cancel()
	for _, ms := range []*testutil.ManagementServer{primary, fallback} {
		if err := ms.WaitForOpenStreams(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}

	primary.RejectStreams(nil)
	asked := len(fallback.Requests())
	w = newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	from(w, "primary")
	if o, ok := c.ResourceOrigin(resources.ClusterType, "a"); !ok || o.ServerURI != primary.Address() {
		t.Fatalf("ResourceOrigin = %+v, %v; want the primary", o, ok)
	}
	w.wantNone(t, defaultTestShortTimeout)
	if n := len(fallback.Requests()); n != asked || fallback.OpenStreams() != 0 {
		t.Fatalf("fallback server got %d more requests after the primary came back, want none", n-asked)
	}
}

// TestInteraction_WildcardEntryWatchedByNameReverts checks for a
// resource first received through a WatchAll made during fallback, then
// watched by name, its WatchAll cancelled: the named watch belongs to the
// resource's server list, so the revert moves it to the primary, and the
// fallback server, left with nothing, has its stream closed.
func TestInteraction_WildcardEntryWatchedByNameReverts(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		primary, fallback, c := interactionPair(t, true)
		primary.Update("", clusters("primary", "a", "x"))
		fallback.Update("", clusters("fallback", "a", "x"))
		wx := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "x", wx)()
		wantFrom(t, wx, "fallback")
		wall := newRecorder[*resources.Cluster]()
		cancelAll := client.WatchAll(c, resources.ClusterType, wall)
		wall.wantKind(ctx, t, changed, nil)
		wall.wantKind(ctx, t, changed, nil)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		wantFrom(t, w, "fallback") // from the cache
		cancelAll()

		primary.RejectStreams(nil)
		wantFrom(t, wx, "primary")
		wantFrom(t, w, "primary")
		wantOrigin(t, c, "a", "primary")
		if err := fallback.WaitForOpenStreams(ctx, 0); err != nil {
			t.Fatal(err)
		}
		wantNoneNow(t, w)
	})
}

// TestInteraction_FallbackServerSharedRewatch is
// TestInteraction_FallbackRetireRewatch with the fallback server kept busy
// by an authority whose only server it is: its
// stream stays, the unsubscription of the top-level resource is written
// on it, and the top-level list, left with nothing watched, starts over
// from its primary: once the primary is back, a new watch is served by it
// and the fallback server is not asked for the resource.
func TestInteraction_FallbackServerSharedRewatch(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		primary := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		fallback := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		primary.RejectStreams(errors.New("primary down"))
		const b = "xdstp://auth/envoy.config.cluster.v3.Cluster/b"
		primary.Update("", clusters("primary", "a"))
		fallback.Update("", clusters("fallback", "a", b))
		cfg, err := bootstrap.Parse([]byte(`{
			"xds_servers": [
				{"server_uri": "primary", "channel_creds": [{"type": "insecure"}]},
				{"server_uri": "fallback", "channel_creds": [{"type": "insecure"}]}
			],
			"authorities": {"auth": {"xds_servers": [{"server_uri": "fallback", "channel_creds": [{"type": "insecure"}]}]}},
			"node": {"id": "test-node"}
		}`))
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg, client.WithTransportBuilder(uriBuilder{
			"primary":  primary.TransportBuilder(),
			"fallback": fallback.TransportBuilder(),
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wb := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, b, wb)()
		wantFrom(t, wb, "fallback")
		w := newRecorder[*resources.Cluster]()
		cancel := client.Watch(c, resources.ClusterType, "a", w)
		wantFrom(t, w, "fallback")
		cancel()
		waitForNames(t, fallback, resources.ClusterTypeURL, b) // the unsubscription is written
		synctest.Wait()

		primary.RejectStreams(nil)
		asked := len(fallback.Requests())
		w = newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		wantFrom(t, w, "primary")
		wantOrigin(t, c, "a", "primary")
		synctest.Wait()
		for _, r := range fallback.Requests()[asked:] {
			if slices.Contains(r.Req.GetResourceNames(), "a") {
				t.Fatalf("fallback server asked for a after the primary came back: %v", r.Req)
			}
		}
		wantNoneNow(t, w)
		wantNoneNow(t, wb)
	})
}
