// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// The tests of this file run in a testing/synctest bubble against the
// in-memory management server: time is fake, so 15 s timers fire at once
// and elapsed times are exact.

// inMemory starts a manual in-memory management server and a client of it
// inside the current bubble.
func inMemory(t *testing.T, opts ...client.Option) (*testutil.ManagementServer, *client.Client) {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
	return ms, newClient(t, ms, testutil.BootstrapOptions{}, opts...)
}

// skipConnectionErrors returns the next event that is not a connection
// error (those come with every failed stream attempt, R-11.3).
func skipConnectionErrors[T any](t *testing.T, r *recorder[T]) event[T] {
	t.Helper()
	ctx := testContext(t)
	for {
		e := r.next(ctx, t)
		if !errors.Is(e.err, client.ErrConnection) {
			return e
		}
	}
}

// TestWatchExpiry_FiresAfter15s checks: a resource that no
// response names is reported as not found exactly 15 s after the request
// was sent, its status becomes DOES_NOT_EXIST, a new watcher learns it at
// once, and it is not timed again. It runs in fake time.
func TestWatchExpiry_FiresAfter15s(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "missing", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "missing")
		sent := time.Now()

		e := w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 15*time.Second {
			t.Fatalf("does-not-exist reported %v after the request, want 15s", got)
		}
		var re *client.ResourceError
		if !errors.As(e.err, &re) || re.Name != "missing" || re.TypeURL != resources.ClusterTypeURL {
			t.Fatalf("error = %v, want a ResourceError naming the cluster", e.err)
		}
		if g := dumpEntry(c, resources.ClusterTypeURL, "missing"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
			t.Fatalf("CSDS status = %v, want DOES_NOT_EXIST", g.GetClientStatus())
		}
		w2 := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "missing", w2)()
		w2.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)

		// Not timed again; delivered normally if it shows up later.
		time.Sleep(time.Minute)
		w.wantNone(t, time.Second)
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("missing", ""))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, changed, nil)
		w2.wantKind(ctx, t, changed, nil)
	})
}

// TestWatchExpiry_Configurable checks WithWatchExpiryTimeout.
func TestWatchExpiry_Configurable(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t, client.WithWatchExpiryTimeout(3*time.Second))
		w := newRecorder[*resources.Listener]()
		defer client.Watch(c, resources.ListenerType, "missing", w)()
		waitForNames(t, ms, resources.ListenerTypeURL, "missing")
		sent := time.Now()
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 3*time.Second {
			t.Fatalf("does-not-exist reported after %v, want 3s", got)
		}
	})
}

// TestWatchExpiry_NotBeforeConnected checks and R-9.9(a): while no
// stream can be created nothing is requested, so nothing is timed, however
// long it takes; the timer starts when the request is sent.
func TestWatchExpiry_NotBeforeConnected(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms, c := inMemory(t)
		ms.RejectStreams(errors.New("management server not ready"))
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()

		time.Sleep(20 * time.Second)
		for len(w.events) > 0 {
			if e := <-w.events; !errors.Is(e.err, client.ErrConnection) {
				t.Fatalf("event %v while the server was unreachable, want only connection errors", e)
			}
		}
		ms.RejectStreams(nil)
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		sent := time.Now()
		skipConnectionErrors(t, w)
		if got := time.Since(sent); got != 15*time.Second {
			t.Fatalf("does-not-exist reported %v after the request, want 15s", got)
		}
	})
}

// TestWatchExpiry_RestartsAfterStreamFailure checks and R-9.9(b):
// the stream breaks 10 s after the request; the timer stops, and the
// resource gets a fresh 15 s from the request on the next stream.
func TestWatchExpiry_RestartsAfterStreamFailure(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms, c := inMemory(t)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "c")

		time.Sleep(10 * time.Second)
		ms.BreakStreams()
		second := waitForNames(t, ms, resources.ClusterTypeURL, "c")
		if second.StreamID != 2 {
			t.Fatalf("re-request on stream %d, want 2", second.StreamID)
		}
		sent := time.Now()
		e := skipConnectionErrors(t, w)
		if !errors.Is(e.err, client.ErrResourceNotFound) || time.Since(sent) != 15*time.Second {
			t.Fatalf("got %v %v after the re-request, want not-found after 15s", e, time.Since(sent))
		}
	})
}

// TestWatchExpiry_InvalidResourceCancelsTimer checks and R-9.9(c): a
// resource received invalid was seen, so it is never reported missing.
func TestWatchExpiry_InvalidResourceCancelsTimer(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		time.Sleep(5 * time.Second)
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", invalidCluster("c"))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
		w.wantNone(t, time.Minute)
	})
}

// TestWatchExpiry_CachedResourceNotTimed checks and R-9.9(d): after a
// reconnect, a cached resource the server does not send again is not
// reported missing.
func TestWatchExpiry_CachedResourceNotTimed(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("c", "")))
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
		w.wantKind(ctx, t, changed, nil)

		ms.BreakStreams()
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		w.wantNone(t, time.Minute)
	})
}

// TestWatchExpiry_PartialResponseIsNotDeletion checks: a Listener
// response that leaves out a requested but never received listener does
// not delete it; the timer decides.
func TestWatchExpiry_PartialResponseIsNotDeletion(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		wa, wb := newRecorder[*resources.Listener](), newRecorder[*resources.Listener]()
		defer client.Watch(c, resources.ListenerType, "a", wa)()
		defer client.Watch(c, resources.ListenerType, "b", wb)()
		waitForNames(t, ms, resources.ListenerTypeURL, "a", "b")
		sent := time.Now()
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ListenerTypeURL, "1", testutil.Listener("a", "r"))); err != nil {
			t.Fatal(err)
		}
		wa.wantKind(ctx, t, changed, nil)
		wb.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 15*time.Second {
			t.Fatalf("b reported missing after %v, want 15s (the timer, not the response)", got)
		}
	})
}

// TestWatchExpiry_UnsubscribeStopsTimer checks: cancelling the last
// watch stops the timer; watching again later starts a new one.
func TestWatchExpiry_UnsubscribeStopsTimer(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		// Another watch keeps the stream, so the unsubscription
		// is a request.
		defer client.Watch(c, resources.ListenerType, "l", newRecorder[*resources.Listener]())()
		w := newRecorder[*resources.Cluster]()
		cancel := client.Watch(c, resources.ClusterType, "c", w)
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		time.Sleep(10 * time.Second)
		cancel()
		waitForNames(t, ms, resources.ClusterTypeURL)
		time.Sleep(10 * time.Second)
		w.wantNone(t, time.Second)

		w2 := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w2)()
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		sent := time.Now()
		w2.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 15*time.Second {
			t.Fatalf("reported missing after %v, want a fresh 15s", got)
		}
	})
}

// TestWatchExpiry_SharedTimers checks with the names of one request
// sharing a timer: a and b are requested together; a arrives after 5 s, and
// c is requested then; at 8 s, b's watch is cancelled and b watched again
// before the unsubscription can be written (the Send is held), so b stays
// timed from the first request. At 15 s b, and only b, is reported
// missing; c at 20 s, 15 s after its own request; a never.
func TestWatchExpiry_SharedTimers(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))
		wa, wb, wc := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		cancelB := client.Watch(c, resources.ClusterType, "b", wb)
		waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
		start := time.Now()

		time.Sleep(5 * time.Second)
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""))); err != nil {
			t.Fatal(err)
		}
		wa.wantKind(ctx, t, changed, nil)
		defer client.Watch(c, resources.ClusterType, "c", wc)()
		waitForNames(t, ms, resources.ClusterTypeURL, "a", "b", "c")

		time.Sleep(3 * time.Second)
		rb.hold()
		cancelB()
		wb2 := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "b", wb2)()
		rb.release()

		wb2.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(start); got != 15*time.Second {
			t.Fatalf("b reported missing %v after its request, want 15s", got)
		}
		wc.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(start); got != 20*time.Second {
			t.Fatalf("c reported missing %v after a and b were requested, want 20s (15s after its own request)", got)
		}
		wa.wantNone(t, time.Minute)
		wb.wantNone(t, time.Second)
		if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED {
			t.Fatalf("a: CSDS status = %v, want ACKED", g.GetClientStatus())
		}
	})
}

// TestWatchExpiry_TransientWithServerFeature checks R-2.5 (gRFC A88): from
// a server with resource_timer_is_transient_error, which reports missing
// resources itself, the timer runs twice the watch expiry timeout (30 s)
// and its expiry is a transient error: a ResourceError wrapping
// ErrTimeout, not ErrResourceNotFound; Dump shows TIMEOUT and the gauge
// "timeout"; a new watcher learns it at once; and the resource is
// delivered when it comes after all. On the old client the feature was
// parsed and ignored: DOES_NOT_EXIST after 15 s.
func TestWatchExpiry_TransientWithServerFeature(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: []string{bootstrap.FeatureResourceTimerIsTransientError}})
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "late", w)()
		waitForNames(t, ms, resources.ClusterTypeURL, "late")
		sent := time.Now()

		e := w.wantKind(ctx, t, resourceError, client.ErrTimeout)
		if got := time.Since(sent); got != 30*time.Second {
			t.Fatalf("timeout reported %v after the request, want 30s", got)
		}
		if errors.Is(e.err, client.ErrResourceNotFound) {
			t.Fatalf("error %v wraps ErrResourceNotFound, want a transient error only", e.err)
		}
		if g := dumpEntry(c, resources.ClusterTypeURL, "late"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_TIMEOUT {
			t.Fatalf("Dump status %v, want TIMEOUT", g.GetClientStatus())
		}
		if rs := c.Gauges().Resources; len(rs) != 1 || rs[0].CacheState != client.CacheStateTimeout {
			t.Fatalf("resources gauge %+v, want one resource in state %q", rs, client.CacheStateTimeout)
		}
		w2 := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "late", w2)()
		w2.wantKind(ctx, t, resourceError, client.ErrTimeout)

		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("late", ""))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, changed, nil)
	})
}
