// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestServer_BreakStreams checks that BreakStreams ends open streams with
// Unavailable, takes them out of OpenStreams at once, and that the next
// stream gets the next StreamID.
func TestServer_BreakStreams(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		s1 := newRawStream(t, ms, true)
		s1.request(cdsURL, "", "", "a")
		s1.recv(ctx)
		if n := ms.OpenStreams(); n != 1 {
			t.Fatalf("OpenStreams() = %d, want 1", n)
		}
		ms.BreakStreams()
		if n := ms.OpenStreams(); n != 0 {
			t.Fatalf("OpenStreams() after BreakStreams = %d, want 0", n)
		}
		if err := s1.endErr(ctx); status.Code(err) != codes.Unavailable {
			t.Fatalf("stream ended with %v, want Unavailable", err)
		}

		s2 := newRawStream(t, ms, true)
		s2.request(cdsURL, "", "", "a")
		wantResponse(t, s2.recv(ctx), cdsURL, "v1", "a")
		reqs := ms.Requests()
		if got := reqs[len(reqs)-1].StreamID; got != 2 {
			t.Fatalf("StreamID of the second stream = %d, want 2", got)
		}
	})
}

// TestServer_RejectStreams checks that while RejectStreams is set, new
// streams end with Unavailable and its message before any response, get no
// StreamID and have no requests recorded; open streams go on; nil accepts
// again.
func TestServer_RejectStreams(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		open := newRawStream(t, ms, true)
		open.request(cdsURL, "", "", "a")
		r := open.recv(ctx)

		ms.RejectStreams(errors.New("maintenance"))
		rejected := newRawStream(t, ms, true)
		// The request may or may not make it before the stream ends.
		_ = rejected.send(&v3discoverypb.DiscoveryRequest{TypeUrl: cdsURL, ResourceNames: []string{"a"}})
		err := rejected.endErr(ctx)
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "maintenance") {
			t.Fatalf("rejected stream ended with %v, want Unavailable with the message", err)
		}
		if len(rejected.resps) != 0 {
			t.Fatalf("a rejected stream got a response")
		}

		// The open stream still works.
		ms.Update("", clusters("v2", "a"))
		open.ack(r, "a")
		wantResponse(t, open.recv(ctx), cdsURL, "v2", "a")

		ms.RejectStreams(nil)
		again := newRawStream(t, ms, true)
		again.request(cdsURL, "", "", "a")
		wantResponse(t, again.recv(ctx), cdsURL, "v2", "a")
		for _, r := range ms.Requests() {
			if r.StreamID != 1 && r.StreamID != 2 {
				t.Fatalf("request on stream %d, want only streams 1 and 2 (the rejected one has no ID)", r.StreamID)
			}
		}
	})
}

// TestServer_StopEndsStreams checks that Stop ends open streams with
// Unavailable, is idempotent, and that SendResponse then fails.
func TestServer_StopEndsStreams(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "a")
		if _, err := ms.NextRequest(ctx); err != nil {
			t.Fatal(err)
		}
		ms.Stop()
		ms.Stop()
		if err := s.endErr(ctx); status.Code(err) != codes.Unavailable {
			t.Fatalf("stream ended with %v, want Unavailable", err)
		}
		if _, err := ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{}); err == nil {
			t.Fatal("SendResponse after Stop succeeded")
		}
		if n := ms.OpenStreams(); n != 0 {
			t.Fatalf("OpenStreams() after Stop = %d, want 0", n)
		}
	})
}

// TestServer_StopWithClientNotReading checks that neither Update,
// SendResponse nor Stop block on a client that stopped reading, even once
// the flow-control windows are full. Leaked goroutines fail TestMain.
func TestServer_StopWithClientNotReading(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, false)
		s.request(cdsURL, "", "", "big")
		if _, err := ms.NextRequest(ctx); err != nil {
			t.Fatal(err)
		}
		big := &anypb.Any{TypeUrl: cdsURL, Value: make([]byte, 1<<20)}
		for range 32 { // 32 MiB: past gRPC's windows, even grown by BDP estimation (16 MiB)
			if _, err := ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{TypeUrl: cdsURL, Resources: []*anypb.Any{big}}); err != nil {
				t.Fatal(err)
			}
			ms.Update("", clusters("", "big"))
		}
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			ms.Stop()
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			t.Fatal("Stop blocked on a client that does not read")
		}
	})
}

// TestServer_ResponsesInOrder checks that responses on a stream go out in
// the order they were queued.
func TestServer_ResponsesInOrder(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{Manual: true}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "a")
		var nonces []string
		for range 100 {
			n, err := ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{TypeUrl: cdsURL})
			if err != nil {
				t.Fatal(err)
			}
			nonces = append(nonces, n)
		}
		for i, want := range nonces {
			if got := s.recv(ctx).GetNonce(); got != want {
				t.Fatalf("response %d has nonce %q, want %q", i, got, want)
			}
		}
	})
}

// TestServer_Address checks the address forms.
func TestServer_Address(t *testing.T) {
	if got := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true}).Address(); got != "in-memory" {
		t.Errorf("in-memory Address() = %q, want in-memory", got)
	}
	if got := testutil.NewManagementServer(t, testutil.ServerOptions{}).Address(); !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("Address() = %q, want 127.0.0.1:PORT", got)
	}
}

// TestServer_Start checks Start, which needs no testing.TB: it listens
// on Options.ListenAddress and serves; an address it cannot listen on is
// an error that names it.
func TestServer_Start(t *testing.T) {
	if _, err := mgmtserver.Start(mgmtserver.Options{ListenAddress: "256.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "256.0.0.1:0") {
		t.Errorf("Start(ListenAddress 256.0.0.1:0) = %v, want an error naming the address", err)
	}
	ms, err := mgmtserver.Start(mgmtserver.Options{ListenAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Stop()
	ctx := testContext(t)
	if err := ms.Update("", clusters("v1", "a")); err != nil {
		t.Fatal(err)
	}
	s := newRawStream(t, &testutil.ManagementServer{Server: ms}, true)
	s.request(cdsURL, "", "", "a")
	wantResponse(t, s.recv(ctx), cdsURL, "v1", "a")
}
