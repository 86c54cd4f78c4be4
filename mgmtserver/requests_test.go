// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/proxyless/xds/testutil"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestRequests_FIFO checks the request log: Requests returns everything
// without consuming; NextRequest consumes in arrival order; WaitForRequest
// consumes up to and including the first match; both fail with the
// context's error when nothing comes.
func TestRequests_FIFO(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{Manual: true}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, true)
		s.requestWith(&v3discoverypb.DiscoveryRequest{TypeUrl: ldsURL, ResourceNames: []string{"l"}, Node: &v3corepb.Node{Id: "n1"}})
		s.request(cdsURL, "", "", "c")
		s.request(rdsURL, "", "", "r")
		s.request(edsURL, "", "", "e")

		// NextRequest blocks until the first one arrives.
		first, err := ms.NextRequest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first.Req.GetTypeUrl() != ldsURL || first.StreamID != 1 || first.Node.GetId() != "n1" {
			t.Fatalf("first request = %+v, want LDS on stream 1 from node n1", first)
		}
		eds, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Req.GetTypeUrl() == edsURL })
		if err != nil {
			t.Fatal(err)
		}
		if eds.Node.GetId() != "n1" || eds.Req.GetNode() != nil {
			t.Fatalf("EDS request = %+v, want the stream's node n1 recorded, and the request as sent (no node)", eds)
		}
		// CDS and RDS were consumed by WaitForRequest.
		shortCtx, cancel := context.WithTimeout(ctx, defaultTestShortTimeout)
		defer cancel()
		if r, err := ms.NextRequest(shortCtx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("NextRequest() = %v, %v; want the context's error, the FIFO being empty", r, err)
		}
		if _, err := ms.WaitForRequest(shortCtx, func(*testutil.Request) bool { return true }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForRequest() = %v, want the context's error", err)
		}

		all := ms.Requests()
		var types []string
		for _, r := range all {
			types = append(types, r.Req.GetTypeUrl())
		}
		if len(all) != 4 || types[0] != ldsURL || types[1] != cdsURL || types[2] != rdsURL || types[3] != edsURL {
			t.Fatalf("Requests() types = %v, want LDS, CDS, RDS, EDS", types)
		}
		all[0] = nil // a copy: the log is unchanged
		if ms.Requests()[0] == nil {
			t.Fatal("Requests() returned the server's own slice")
		}

		// A later request is next in the FIFO.
		s.request(cdsURL, "", "", "c2")
		if r, err := ms.NextRequest(ctx); err != nil || r.Req.GetResourceNames()[0] != "c2" {
			t.Fatalf("NextRequest() = %v, %v; want the c2 request", r, err)
		}
	})
}

// TestRequests_OnRequest checks ServerOptions.OnRequest: every request is
// given to it, in order, and none is kept in the log.
func TestRequests_OnRequest(t *testing.T) {
	got := make(chan *testutil.Request, 10)
	opts := testutil.ServerOptions{Manual: true, OnRequest: func(r *testutil.Request) { got <- r }}
	forEachPath(t, opts, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "c")
		s.request(edsURL, "", "", "e")
		for _, want := range []string{cdsURL, edsURL} {
			select {
			case r := <-got:
				if r.Req.GetTypeUrl() != want || r.StreamID == 0 {
					t.Fatalf("OnRequest got %+v, want a %s request with its stream ID", r, want)
				}
			case <-ctx.Done():
				t.Fatalf("OnRequest was not called for the %s request", want)
			}
		}
		if all := ms.Requests(); len(all) != 0 {
			t.Fatalf("Requests() = %d requests, want none: OnRequest replaces the log", len(all))
		}
	})
}

// TestSendResponse_Nonces checks SendResponse: it waits for a stream to
// open, assigns a fresh nonce unless one is given, returns the nonce sent,
// does not modify its argument, and uses the newest stream.
func TestSendResponse_Nonces(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{Manual: true}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)

		// No stream: SendResponse waits until ctx ends.
		shortCtx, cancel := context.WithTimeout(ctx, defaultTestShortTimeout)
		defer cancel()
		if _, err := ms.SendResponse(shortCtx, &v3discoverypb.DiscoveryResponse{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("SendResponse() without a stream = %v, want the context's error", err)
		}

		// SendResponse waiting for a stream gets it once opened.
		type result struct {
			nonce string
			err   error
		}
		res := make(chan result, 1)
		resp := &v3discoverypb.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: "1"}
		go func() {
			n, err := ms.SendResponse(ctx, resp)
			res <- result{n, err}
		}()
		s1 := newRawStream(t, ms, true)
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := s1.recv(ctx); got.GetNonce() != r.nonce || r.nonce == "" {
			t.Fatalf("response nonce = %q, SendResponse returned %q; want equal and not empty", got.GetNonce(), r.nonce)
		}
		if resp.GetNonce() != "" {
			t.Fatalf("SendResponse modified its argument: nonce %q", resp.GetNonce())
		}

		seen := map[string]bool{r.nonce: true}
		for range 10 {
			n, err := ms.SendResponse(ctx, resp)
			if err != nil {
				t.Fatal(err)
			}
			if seen[n] {
				t.Fatalf("nonce %q handed out twice", n)
			}
			seen[n] = true
			if got := s1.recv(ctx).GetNonce(); got != n {
				t.Fatalf("response nonce = %q, want %q", got, n)
			}
		}

		// A given nonce is kept; the newest stream gets the response.
		s2 := newRawStream(t, ms, true)
		s2.request(cdsURL, "", "", "a")
		if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 }); err != nil {
			t.Fatal(err)
		}
		n, err := ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{TypeUrl: cdsURL, Nonce: "mine"})
		if err != nil || n != "mine" {
			t.Fatalf("SendResponse() = %q, %v; want the given nonce", n, err)
		}
		if got := s2.recv(ctx).GetNonce(); got != "mine" {
			t.Fatalf("newest stream got nonce %q, want mine", got)
		}
		s1.wantNone(defaultTestShortTimeout)
	})
}

// TestSendResponse_DoesNotChangeSnapshotState checks that a scripted
// response on a snapshot-serving server does not count as the snapshot
// sent: the real one still comes.
func TestSendResponse_DoesNotChangeSnapshotState(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "a")
		if _, err := ms.NextRequest(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: "scripted"}); err != nil {
			t.Fatal(err)
		}
		if got := s.recv(ctx).GetVersionInfo(); got != "scripted" {
			t.Fatalf("version = %q, want scripted", got)
		}
		ms.Update("", clusters("v1", "a"))
		wantResponse(t, s.recv(ctx), cdsURL, "v1", "a")
	})
}
