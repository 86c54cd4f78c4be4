// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// TestStream_EchoBytes checks that bytes go through unchanged:
//  1. Build a Transport to a raw echo server and open an ADS stream.
//  2. Send small, empty and large (pooled-buffer sized) messages; each
//     comes back unchanged.
//  3. Overwrite a sent slice right after Send returns: the server still
//     gets the original bytes (Send does not retain msg; -race also catches
//     a retained slice).
//  4. Recv returns a fresh slice each time: a later Recv does not change an
//     earlier result.
func TestStream_EchoBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	tr := build(t, grpctransport.NewBuilder(), insecureConfig(lis.Addr().String()))
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}

	large := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for _, msg := range [][]byte{[]byte("hello"), nil, large} {
		if err := verifyEcho(st, msg); err != nil {
			t.Fatal(err)
		}
	}

	// Step 3.
	buf := bytes.Repeat([]byte{'a'}, 64<<10)
	if err := st.Send(buf); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for i := range buf {
		buf[i] = 'b'
	}
	got, err := st.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if want := bytes.Repeat([]byte{'a'}, 64<<10); !bytes.Equal(got, want) {
		t.Fatalf("Recv after overwriting the sent slice returned different bytes (first byte %q, want 'a')", got[0])
	}

	// Step 4.
	if err := st.Send([]byte("first")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if err := verifyEcho(st, []byte("SECOND")); err != nil {
		t.Fatal(err)
	}
	if string(first) != "first" {
		t.Fatalf("first Recv result changed to %q after a later Recv", first)
	}
}

// adsServer answers every ADS request with a response echoing its type URL
// and version, on both the SotW and the delta stream.
type adsServer struct {
	v3discoverypb.UnimplementedAggregatedDiscoveryServiceServer
}

func (adsServer) StreamAggregatedResources(s v3discoverypb.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return nil
		}
		if err := s.Send(&v3discoverypb.DiscoveryResponse{
			VersionInfo: req.GetVersionInfo() + "+1",
			TypeUrl:     req.GetTypeUrl(),
			Nonce:       "nonce-" + req.GetNode().GetId(),
		}); err != nil {
			return err
		}
	}
}

func (adsServer) DeltaAggregatedResources(s v3discoverypb.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return nil
		}
		if err := s.Send(&v3discoverypb.DeltaDiscoveryResponse{
			TypeUrl: req.GetTypeUrl(),
			Nonce:   "delta-" + req.GetNode().GetId(),
		}); err != nil {
			return err
		}
	}
}

// TestStream_ADSProtoServer checks wire compatibility with a server using
// the generated ADS stubs and the standard proto codec, on both method
// names:
//  1. Send a marshalled DiscoveryRequest on transport.ADSMethod and
//     unmarshal the reply as a DiscoveryResponse.
//  2. The same with DeltaDiscoveryRequest on transport.DeltaADSMethod.
func TestStream_ADSProtoServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startServer(t, func(s *grpc.Server) {
		v3discoverypb.RegisterAggregatedDiscoveryServiceServer(s, adsServer{})
	})
	tr := build(t, grpctransport.NewBuilder(), insecureConfig(lis.Addr().String()))

	const typeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	tests := []struct {
		method string
		req    proto.Message
		resp   proto.Message // empty message to unmarshal into
		want   proto.Message
	}{{
		method: transport.ADSMethod,
		req:    &v3discoverypb.DiscoveryRequest{VersionInfo: "1", TypeUrl: typeURL, Node: nodeWithID("n")},
		resp:   &v3discoverypb.DiscoveryResponse{},
		want:   &v3discoverypb.DiscoveryResponse{VersionInfo: "1+1", TypeUrl: typeURL, Nonce: "nonce-n"},
	}, {
		method: transport.DeltaADSMethod,
		req:    &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, Node: nodeWithID("d")},
		resp:   &v3discoverypb.DeltaDiscoveryResponse{},
		want:   &v3discoverypb.DeltaDiscoveryResponse{TypeUrl: typeURL, Nonce: "delta-d"},
	}}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			sctx, scancel := context.WithCancel(ctx)
			defer scancel()
			st, err := tr.NewStream(sctx, tc.method)
			if err != nil {
				t.Fatalf("NewStream: %v", err)
			}
			b, err := proto.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Send(b); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got, err := st.Recv()
			if err != nil {
				t.Fatalf("Recv: %v", err)
			}
			if err := proto.Unmarshal(got, tc.resp); err != nil {
				t.Fatalf("proto.Unmarshal: %v", err)
			}
			if diff := cmp.Diff(tc.resp, tc.want, protocmp.Transform()); diff != "" {
				t.Fatalf("response (-got, +want):\n%s", diff)
			}
		})
	}
}

// TestStream_ServerRejectsRPC checks that an RPC the server rejects is
// reported by Recv with the server's status: NewStream returns without
// waiting for the server's headers.
func TestStream_ServerRejectsRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	tr := build(t, grpctransport.NewBuilder(), insecureConfig(lis.Addr().String()))
	st, err := tr.NewStream(ctx, failMethod)
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}
	if _, err := st.Recv(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Recv error = %v, want code PermissionDenied", err)
	}
}

// TestStream_ContextCancelEndsStream checks that cancelling the stream's
// context ends it:
//  1. Open a stream and check one echo.
//  2. Block in Recv on a goroutine, cancel ctx: Recv returns Canceled.
//  3. Send fails afterwards. TestMain's leak check verifies that no
//     goroutine outlives the stream.
func TestStream_ContextCancelEndsStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	tr := build(t, grpctransport.NewBuilder(), insecureConfig(lis.Addr().String()))

	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	st, err := tr.NewStream(sctx, transport.ADSMethod)
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}
	if err := verifyEcho(st, []byte("x")); err != nil {
		t.Fatal(err)
	}

	errc := make(chan error, 1)
	go func() {
		_, err := st.Recv()
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("Recv returned %v before ctx was cancelled", err)
	case <-time.After(defaultTestShortTimeout):
	}
	scancel()
	select {
	case err := <-errc:
		if status.Code(err) != codes.Canceled {
			t.Fatalf("Recv error = %v, want code Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("Recv did not return after ctx was cancelled")
	}
	if err := st.Send([]byte("y")); err == nil {
		t.Fatal("Send on a cancelled stream succeeded")
	}
}

// TestNewStream_UnreachableServerFailsFast checks that NewStream does not
// wait for the server (no wait-for-ready): against a closed port it fails
// with Unavailable long before the test timeout.
func TestNewStream_UnreachableServerFailsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	addr := lis.Addr().String()
	lis.Close() // the port now refuses connections

	tr := build(t, grpctransport.NewBuilder(), insecureConfig(addr))
	start := time.Now()
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err == nil {
		// Not expected with gRPC's fail-fast RPCs, but the contract allows
		// the first Recv to report it.
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("NewStream/Recv error = %v, want code Unavailable", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("failure took %v, until the test deadline", time.Since(start))
	}
}

// TestNewStream_AfterClose checks that NewStream fails with ErrClosed once
// the Transport is closed, and that Close is idempotent.
func TestNewStream_AfterClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	tr := build(t, grpctransport.NewBuilder(), insecureConfig(lis.Addr().String()))
	tr.Close()
	tr.Close()
	if _, err := tr.NewStream(ctx, transport.ADSMethod); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("NewStream after Close: error = %v, want ErrClosed", err)
	}
}

func nodeWithID(id string) *v3corepb.Node { return &v3corepb.Node{Id: id} }
