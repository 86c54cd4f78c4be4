// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestInMemory_Synctest runs the in-memory server and a raw client in a
// synctest bubble:
//  1. A request is answered; with nothing to do, every goroutine is
//     durably blocked (synctest.Wait returns) and an hour of fake time
//     passes without a response.
//  2. Update pushes; BreakStreams ends the stream with Unavailable.
//  3. Cancelling a stream's context ends its server side.
//  4. The bubble ends with no goroutine left (cleanup stops the server).
func TestInMemory_Synctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Chain(testutil.ChainOptions{}))
		s := newRawStream(t, ms, true)
		s.request(ldsURL, "", "", "svc")
		r := s.recv(ctx)
		wantResponse(t, r, ldsURL, "1", "svc")
		s.ack(r, "svc")
		synctest.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()
		if len(s.resps) != 0 {
			t.Fatalf("unexpected response %v", <-s.resps)
		}
		ctx = testContext(t) // the first one expired during the hour

		ms.Update("", testutil.Chain(testutil.ChainOptions{Ports: []uint32{9090}}))
		wantResponse(t, s.recv(ctx), ldsURL, "2", "svc")
		ms.BreakStreams()
		if err := s.endErr(ctx); status.Code(err) != codes.Unavailable {
			t.Fatalf("stream ended with %v, want Unavailable", err)
		}

		s2 := newRawStream(t, ms, true)
		s2.request(ldsURL, "", "", "svc")
		s2.recv(ctx)
		if n := ms.OpenStreams(); n != 1 {
			t.Fatalf("OpenStreams() = %d, want 1", n)
		}
		s2.cancel()
		if err := s2.endErr(ctx); status.Code(err) != codes.Canceled {
			t.Fatalf("stream ended with %v, want Canceled", err)
		}
		synctest.Wait()
		if n := ms.OpenStreams(); n != 0 {
			t.Fatalf("OpenStreams() after the client cancelled = %d, want 0", n)
		}
	})
}

// TestInMemory_Transport checks the transport contract of the in-memory
// transport: serialized messages both ways, unknown methods fail, delta
// streams are served (a garbage request ends one with Internal), Close
// ends the streams, and NewStream fails after Close or Stop.
func TestInMemory_Transport(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	ms.Update("", clusters("v1", "a"))
	// The ServerConfig is ignored.
	tr, err := ms.Dialer().Dial(&bootstrap.ServerConfig{ServerURI: "elsewhere:1"}, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()

	if _, err := tr.NewStream(ctx, "/unknown.Service/Method"); err == nil {
		t.Fatal("NewStream() of an unknown method succeeded")
	}

	delta, err := tr.NewStream(ctx, transport.DeltaADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := delta.Send([]byte{0xff}); err != nil {
		t.Fatal(err)
	}
	if _, err := delta.Recv(); status.Code(err) != codes.Internal {
		t.Fatalf("delta Recv() after a garbage request = %v, want Internal", err)
	}

	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := proto.Marshal(&v3discoverypb.DiscoveryRequest{TypeUrl: cdsURL, ResourceNames: []string{"a"}})
	if err := st.Send(req); err != nil {
		t.Fatal(err)
	}
	clear(req) // Send must not retain it
	b, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	resp := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(b, resp); err != nil {
		t.Fatal(err)
	}
	wantResponse(t, resp, cdsURL, "v1", "a")

	tr.Close()
	if _, err := st.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("Recv() after Close = %v, want an error", err)
	}
	if _, err := tr.NewStream(ctx, transport.ADSMethod); err == nil {
		t.Fatal("NewStream() after Close succeeded")
	}

	tr2, err := ms.Dialer().Dial(nil, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	ms.Stop()
	if _, err := tr2.NewStream(ctx, transport.ADSMethod); status.Code(err) != codes.Unavailable {
		t.Fatalf("NewStream() after Stop = %v, want Unavailable", err)
	}
}

// TestInMemory_BadRequestEndsStream checks that bytes that are not a
// DiscoveryRequest end the stream with Internal, as a gRPC server would.
func TestInMemory_BadRequestEndsStream(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	tr, err := ms.Dialer().Dial(nil, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := tr.NewStream(sctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send([]byte{0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); status.Code(err) != codes.Internal {
		t.Fatalf("Recv() = %v, want Internal", err)
	}
}
