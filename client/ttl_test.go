// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// The tests of this file run in fake time (testing/synctest) against the
// in-memory management server: TTLs of R-18.

// wrapped returns msg in a SotW Resource wrapper named name, with ttl
// (none when 0); a nil msg makes a heartbeat.
func wrapped(name string, msg proto.Message, ttl time.Duration) *anypb.Any {
	w := &v3discoverypb.Resource{Name: name}
	if msg != nil {
		w.Resource = testutil.MarshalAny(msg)
	}
	if ttl > 0 {
		w.Ttl = durationpb.New(ttl)
	}
	return testutil.MarshalAny(w)
}

// wantNoneNow fails the test if w has an event once every goroutine of the
// bubble is blocked: nothing is pending now, without advancing fake time.
func wantNoneNow[T any](t *testing.T, w *recorder[T]) {
	t.Helper()
	synctest.Wait()
	select {
	case e := <-w.events:
		t.Fatalf("unexpected watcher event %v", e)
	default:
	}
}

// sotwResponse builds a scripted SotW response of already-packed resources.
func sotwResponse(typeURL, version string, rs ...*anypb.Any) *v3discoverypb.DiscoveryResponse {
	return &v3discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Resources: rs}
}

// TestTTL_SotW_HeartbeatThenExpiry checks R-18 over SotW: the client
// advertises xds.config.supports-resource-ttl; a heartbeat (a wrapper
// with a name and no resource) is ACKed, calls no watcher, counts as the
// Cluster being present, and re-arms the TTL; without further heartbeat
// the resource expires exactly one TTL after the response that carried the
// last heartbeat arrived: ResourceError wrapping ErrResourceNotFound and
// DOES_NOT_EXIST in Dump.
func TestTTL_SotW_HeartbeatThenExpiry(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		first := waitForNames(t, ms, resources.ClusterTypeURL, "a")
		if f := first.Req.GetNode().GetClientFeatures(); !slices.Contains(f, "xds.config.supports-resource-ttl") {
			t.Fatalf("client_features = %v, want xds.config.supports-resource-ttl", f)
		}

		const ttl = 30 * time.Second
		if _, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1", wrapped("a", testutil.Cluster("a", ""), ttl))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, changed, nil)

		time.Sleep(20 * time.Second)
		nonce, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "1", wrapped("a", nil, ttl)))
		if err != nil {
			t.Fatal(err)
		}
		if a := waitForNonce(t, ms, nonce).Req; a.GetErrorDetail() != nil {
			t.Fatalf("answer to a heartbeat = %v, want an ACK", a)
		}
		beat := time.Now()
		time.Sleep(ttl - time.Second) // past the first TTL, not the re-armed one
		wantNoneNow(t, w)
		if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED {
			t.Fatalf("a's status after the heartbeat = %v, want ACKED", g.GetClientStatus())
		}

		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(beat); got != ttl {
			t.Fatalf("expired %v after the heartbeat, want %v", got, ttl)
		}
		if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST || g.GetXdsConfig() != nil {
			t.Fatalf("a's dump after expiry = %v, want DOES_NOT_EXIST without a value", g)
		}

		// Sent again, it is delivered; without a ttl it no longer expires.
		if _, err := ms.SendResponse(ctx, sotwResponse(resources.ClusterTypeURL, "2", wrapped("a", testutil.Cluster("a", ""), 0))); err != nil {
			t.Fatal(err)
		}
		w.wantKind(ctx, t, changed, nil)
		time.Sleep(time.Hour)
		wantNoneNow(t, w)
	})
}

// TestTTL_SotW_ResentWithoutTTL checks that a resource resent without a
// ttl no longer expires, and resent with another ttl is timed afresh.
func TestTTL_SotW_ResentWithoutTTL(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		w := newRecorder[*resources.Listener]()
		defer client.Watch(c, resources.ListenerType, "l", w)()
		waitForNames(t, ms, resources.ListenerTypeURL, "l")
		send := func(version string, ttl time.Duration) {
			t.Helper()
			if _, err := ms.SendResponse(ctx, sotwResponse(resources.ListenerTypeURL, version, wrapped("l", testutil.Listener("l", "r"), ttl))); err != nil {
				t.Fatal(err)
			}
		}
		send("1", 10*time.Second)
		w.wantKind(ctx, t, changed, nil)
		time.Sleep(5 * time.Second)
		send("2", 0)
		time.Sleep(time.Minute)
		wantNoneNow(t, w)

		send("3", 2*time.Minute)
		start := time.Now()
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(start); got != 2*time.Minute {
			t.Fatalf("expired after %v, want 2m", got)
		}
	})
}

// TestTTL_Delta_HeartbeatThenExpiry checks R-18 over delta: a body-less
// resource at the cached version re-arms the TTL without a watcher call
// and is ACKed; the resource then expires one TTL after the last
// heartbeat.
func TestTTL_Delta_HeartbeatThenExpiry(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := manualDelta(t, true)
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		wantDeltaRequest(t, ms, true, sub(resources.ClusterTypeURL, "a"))

		const ttl = 30 * time.Second
		withTTL := func(resp *v3discoverypb.DeltaDiscoveryResponse) *v3discoverypb.DeltaDiscoveryResponse {
			resp.Resources[0].Ttl = durationpb.New(ttl)
			return resp
		}
		nonce := sendDelta(t, ms, withTTL(deltaResponse(resources.ClusterTypeURL, nil, deltaResource{name: "a", version: "v1", msg: testutil.Cluster("a", "")})))
		wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
		w.wantKind(ctx, t, changed, nil)

		time.Sleep(25 * time.Second)
		nonce = sendDelta(t, ms, withTTL(deltaResponse(resources.ClusterTypeURL, nil, deltaResource{name: "a", version: "v1"})))
		wantDeltaRequest(t, ms, false, ack(resources.ClusterTypeURL, nonce))
		beat := time.Now()
		w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(beat); got != ttl {
			t.Fatalf("expired %v after the heartbeat, want %v", got, ttl)
		}
		if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
			t.Fatalf("a's status after expiry = %v, want DOES_NOT_EXIST", g.GetClientStatus())
		}
	})
}
