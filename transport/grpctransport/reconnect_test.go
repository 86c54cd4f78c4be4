// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// restartableEchoServer is an echo server that can be stopped and started
// again on the same address, like a management server that restarts.
type restartableEchoServer struct {
	t    *testing.T
	addr string
	stop func() // stops the running server; nil when stopped
}

func newRestartableEchoServer(t *testing.T) *restartableEchoServer {
	s := &restartableEchoServer{t: t, addr: "127.0.0.1:0"}
	s.start()
	t.Cleanup(func() {
		if s.stop != nil {
			s.stop()
		}
	})
	return s
}

func (s *restartableEchoServer) start() {
	s.t.Helper()
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("net.Listen(%q): %v", s.addr, err)
	}
	s.addr = lis.Addr().String()
	srv := grpc.NewServer(grpc.ForceServerCodecV2(serverCodec{}), grpc.UnknownServiceHandler(echoHandler))
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis)
	}()
	s.stop = func() {
		srv.Stop()
		<-done
		s.stop = nil
	}
}

// TestNewStream_ReconnectsOnCallersSchedule checks gRFC A57 / R-11.1 "one
// backoff": after an outage, NewStream gets a stream at the caller's next
// attempt once the server is back, however long gRPC's own reconnect
// backoff has grown.
//
//  1. A stream works; the server stops (same address kept).
//  2. The caller retries NewStream every 100 ms for 1.5 s: each fails with
//     Unavailable. gRPC's own reconnect backoff is 10 s in the "long gRPC
//     backoff" case (as after many failed attempts), 1 s × 1.6ⁿ by default.
//  3. The server restarts on the same address: the next NewStream (at most
//     100 ms later) connects, within 100 ms + the 1 s reconnect timeout,
//     instead of waiting for gRPC's own next attempt.
func TestNewStream_ReconnectsOnCallersSchedule(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []grpctransport.Option
	}{
		{name: "default"},
		{name: "long gRPC backoff", opts: []grpctransport.Option{grpctransport.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 10 * time.Second, Multiplier: 1, MaxDelay: 10 * time.Second},
			MinConnectTimeout: 20 * time.Second,
		}))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			srv := newRestartableEchoServer(t)
			tr := build(t, grpctransport.NewBuilder(tc.opts...), insecureConfig(srv.addr))

			// Step 1.
			sctx, scancel := context.WithCancel(ctx)
			st, err := tr.NewStream(sctx, transport.ADSMethod)
			if err != nil {
				t.Fatalf("NewStream: %v", err)
			}
			if err := verifyEcho(st, []byte("before")); err != nil {
				t.Fatal(err)
			}
			srv.stop()
			if _, err := st.Recv(); err == nil {
				t.Fatal("Recv after the server stopped succeeded")
			}
			scancel()

			// Step 2.
			const step = 100 * time.Millisecond
			for outage := time.Now(); time.Since(outage) < 1500*time.Millisecond; {
				if _, err := tr.NewStream(ctx, transport.ADSMethod); status.Code(err) != codes.Unavailable {
					t.Fatalf("NewStream during the outage: error %v, want code Unavailable", err)
				}
				sleepCtx(ctx, step)
			}
			if s := grpctransport.ConnState(tr); s != connectivity.TransientFailure {
				t.Fatalf("conn state after the outage = %v, want TRANSIENT_FAILURE", s)
			}

			// Step 3.
			srv.start()
			back := time.Now()
			for {
				if err := verifyNewStreamEcho(ctx, tr); err == nil {
					break
				} else if ctx.Err() != nil {
					t.Fatalf("no stream %v after the server came back: %v", time.Since(back), err)
				}
				sleepCtx(ctx, step)
			}
			if d, limit := time.Since(back), step+grpctransport.DefaultReconnectTimeout+500*time.Millisecond; d > limit {
				t.Fatalf("stream re-established %v after the server came back, want <= %v (the caller's next attempt)", d, limit)
			}
		})
	}
}

// TestNewStream_ReconnectTimeoutBoundsWait checks that on a channel in
// TRANSIENT_FAILURE whose retry fails, NewStream fails with Unavailable and
// the connection error after about the reconnect timeout, not later.
func TestNewStream_ReconnectTimeoutBoundsWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	addr := lis.Addr().String()
	lis.Close() // the port now refuses connections

	const timeout = 200 * time.Millisecond
	tr := build(t, grpctransport.NewBuilder(grpctransport.WithReconnectTimeout(timeout)), insecureConfig(addr))
	if _, err := tr.NewStream(ctx, transport.ADSMethod); status.Code(err) != codes.Unavailable {
		t.Fatalf("first NewStream: error %v, want code Unavailable", err)
	}
	// The first failure may be reported while the channel is still on its
	// way to TRANSIENT_FAILURE (it publishes its state asynchronously).
	if err := waitFor(ctx, func() bool { return grpctransport.ConnState(tr) == connectivity.TransientFailure }); err != nil {
		t.Fatalf("conn state = %v, want TRANSIENT_FAILURE", grpctransport.ConnState(tr))
	}
	start := time.Now()
	_, err := tr.NewStream(ctx, transport.ADSMethod)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("NewStream in TRANSIENT_FAILURE: error %v, want code Unavailable", err)
	}
	if d := time.Since(start); d < timeout || d > timeout+2*time.Second {
		t.Fatalf("NewStream in TRANSIENT_FAILURE failed after %v, want about %v", d, timeout)
	}
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
