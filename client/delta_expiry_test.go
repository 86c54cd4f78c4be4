// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"testing"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// The does-not-exist timer under delta, in testing/synctest bubbles
// against the in-memory scripted server: the server's removed_resources
// answers quickly, and the timer still guards names the server never
// answers ("Knowing When a Requested Resource Does Not Exist",
// incremental; R-9).

// TestDelta_WatchExpiry_FiresAfter15s checks under
// delta: a subscribed name that no response mentions is reported as not
// found exactly 15 s after the request subscribing to it was sent.
func TestDelta_WatchExpiry_FiresAfter15s(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := manualDelta(t, true)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "missing", w)()
		wantDeltaRequest(t, ms, true, sub(cds, "missing"))
		sent := time.Now()
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 15*time.Second {
			t.Fatalf("does-not-exist reported %v after the request, want 15s", got)
		}
		if g := dumpEntry(c, cds, "missing"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
			t.Fatalf("CSDS status = %v, want DOES_NOT_EXIST", g.GetClientStatus())
		}
	})
}

// TestDelta_WatchExpiry_RemovedAnswersAtOnce checks that a requested name
// the server lists in removed_resources is reported as not found at once,
// and that its timer is stopped: nothing more comes later.
func TestDelta_WatchExpiry_RemovedAnswersAtOnce(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := manualDelta(t, true)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "missing", w)()
		nextDelta(t, ms)
		time.Sleep(5 * time.Second)
		sent := time.Now()
		nonce := sendDelta(t, ms, deltaResponse(cds, []string{"missing"}))
		wantDeltaRequest(t, ms, false, ack(cds, nonce))
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 0 {
			t.Fatalf("not-found reported %v after the response, want at once", got)
		}
		w.wantNone(t, time.Minute)
	})
}

// TestDelta_WatchExpiry_RestartsAfterStreamFailure checks under
// delta: the stream breaks 10 s after the request; on the new stream the
// name is subscribed again and gets a fresh 15 s.
func TestDelta_WatchExpiry_RestartsAfterStreamFailure(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms, c := manualDelta(t, true)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()
		nextDelta(t, ms)
		time.Sleep(10 * time.Second)
		ms.BreakStreams()
		r := wantDeltaRequest(t, ms, true, sub(cds, "c"))
		if r.StreamID != 2 {
			t.Fatalf("re-subscribed on stream %d, want 2", r.StreamID)
		}
		sent := time.Now()
		e := skipConnectionErrors(t, w)
		if e.kind != resourceError || time.Since(sent) != 15*time.Second {
			t.Fatalf("got %v %v after the re-subscription, want not-found after 15s", e, time.Since(sent))
		}
	})
}

// TestDelta_WatchExpiry_CachedResourceNotTimed checks under delta:
// after a reconnect, a cached resource (claimed in
// initial_resource_versions) the server does not resend is not reported
// missing.
func TestDelta_WatchExpiry_CachedResourceNotTimed(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := manualDelta(t, true)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()
		nextDelta(t, ms)
		nonce := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "c", version: "1", msg: testutil.Cluster("c", "")}))
		wantDeltaRequest(t, ms, false, ack(cds, nonce))
		w.wantKind(ctx, t, changed, nil)
		ms.BreakStreams()
		nextDelta(t, ms)
		w.wantNone(t, time.Minute)
	})
}
