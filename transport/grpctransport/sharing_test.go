// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// TestBuilder_SharesConnForEqualServers checks ref-counted sharing (R-1.5,
//
//  1. Build twice from two distinct but equal ServerConfig values: the
//     Transports share one conn, and the server accepts one connection
//     although both have a working stream.
//  2. Close the first Transport (twice, to check idempotence): its stream
//     ends and NewStream fails with ErrClosed, while the second Transport's
//     open stream and new streams keep working on the same connection.
//  3. Close the second: the conn shuts down and the server sees its
//     connection closed.
func TestBuilder_SharesConnForEqualServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	b := grpctransport.NewBuilder()
	addr := lis.Addr().String()
	tr1 := build(t, b, insecureConfig(addr))
	tr2 := build(t, b, insecureConfig(addr))
	if !grpctransport.SharesConn(tr1, tr2) {
		t.Fatal("Transports built for equal ServerConfigs do not share a conn")
	}
	if got := grpctransport.NumConns(b); got != 1 {
		t.Fatalf("NumConns = %d, want 1", got)
	}

	st1, err := tr1.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatalf("NewStream(tr1): %v", err)
	}
	st2, err := tr2.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatalf("NewStream(tr2): %v", err)
	}
	for _, st := range []transport.Stream{st1, st2} {
		if err := verifyEcho(st, []byte("shared")); err != nil {
			t.Fatal(err)
		}
	}
	if got := lis.accepted.Load(); got != 1 {
		t.Fatalf("server accepted %d connections, want 1", got)
	}

	// Step 2.
	tr1.Close()
	tr1.Close()
	if _, err := st1.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv on a stream of a closed Transport: error = %v, want code Canceled", err)
	}
	if _, err := tr1.NewStream(ctx, transport.ADSMethod); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("NewStream on a closed Transport: error = %v, want ErrClosed", err)
	}
	if err := verifyEcho(st2, []byte("still open")); err != nil {
		t.Fatalf("stream of the remaining Transport: %v", err)
	}
	if err := verifyNewStreamEcho(ctx, tr2); err != nil {
		t.Fatalf("new stream on the remaining Transport: %v", err)
	}
	// The ClientConn publishes its state asynchronously: READY may lag
	// the stream that just succeeded by a moment under load.
	if err := waitFor(ctx, func() bool { return grpctransport.ConnState(tr2) == connectivity.Ready }); err != nil {
		t.Fatalf("conn state = %v, want READY", grpctransport.ConnState(tr2))
	}
	if got := lis.accepted.Load(); got != 1 {
		t.Fatalf("server accepted %d connections, want 1", got)
	}

	// Step 3.
	tr2.Close()
	if got := grpctransport.ConnState(tr2); got != connectivity.Shutdown {
		t.Fatalf("conn state after closing every Transport = %v, want SHUTDOWN", got)
	}
	if got := grpctransport.NumConns(b); got != 0 {
		t.Fatalf("NumConns = %d, want 0", got)
	}
	if err := waitFor(ctx, func() bool { return lis.open.Load() == 0 }); err != nil {
		t.Fatalf("server still has %d open connections after every Transport closed", lis.open.Load())
	}

	// A new Build after that creates a fresh conn.
	tr3 := build(t, b, insecureConfig(addr))
	if err := verifyNewStreamEcho(ctx, tr3); err != nil {
		t.Fatal(err)
	}
	if got := lis.accepted.Load(); got != 2 {
		t.Fatalf("server accepted %d connections, want 2", got)
	}
}

// TestBuilder_DifferentServersDoNotShare checks that ServerConfigs that
// differ in channel credentials or in a known server feature get their own
// conns, and that Builders do not share conns with each other.
func TestBuilder_DifferentServersDoNotShare(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	addr := func(l net.Listener) string { return l.Addr().String() }

	t.Run("creds", func(t *testing.T) {
		lis := startEchoServer(t)
		b := grpctransport.NewBuilder()
		trInsecure := build(t, b, insecureConfig(addr(lis)))
		trTLS := build(t, b, &bootstrap.ServerConfig{
			ServerURI:    addr(lis),
			ChannelCreds: bootstrap.ChannelCreds{Type: "tls"},
		})
		if grpctransport.SharesConn(trInsecure, trTLS) {
			t.Fatal("insecure and tls Transports share a conn")
		}
		if err := verifyNewStreamEcho(ctx, trInsecure); err != nil {
			t.Fatal(err)
		}
		// The plaintext server fails the TLS handshake, but the second
		// conn did connect on its own.
		if _, err := trTLS.NewStream(ctx, transport.ADSMethod); status.Code(err) != codes.Unavailable {
			t.Fatalf("tls NewStream to a plaintext server: error = %v, want code Unavailable", err)
		}
		if got := lis.accepted.Load(); got != 2 {
			t.Fatalf("server accepted %d connections, want 2", got)
		}
	})

	t.Run("server features", func(t *testing.T) {
		lis := startEchoServer(t)
		b := grpctransport.NewBuilder()
		sc := insecureConfig(addr(lis))
		sc.ServerFeatures = []string{"ignore_resource_deletion"}
		tr1 := build(t, b, insecureConfig(addr(lis)))
		tr2 := build(t, b, sc)
		if grpctransport.SharesConn(tr1, tr2) {
			t.Fatal("Transports for servers with different features share a conn")
		}
		for _, tr := range []transport.Transport{tr1, tr2} {
			if err := verifyNewStreamEcho(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
		if got := lis.accepted.Load(); got != 2 {
			t.Fatalf("server accepted %d connections, want 2", got)
		}
	})

	t.Run("builders", func(t *testing.T) {
		lis := startEchoServer(t)
		tr1 := build(t, grpctransport.NewBuilder(), insecureConfig(addr(lis)))
		tr2 := build(t, grpctransport.NewBuilder(), insecureConfig(addr(lis)))
		if grpctransport.SharesConn(tr1, tr2) {
			t.Fatal("Transports of different Builders share a conn")
		}
	})
}

// TestBuilder_ConcurrentBuildAndClose builds and closes Transports of one
// server from many goroutines (run with -race): every Transport works while
// open, and the Builder holds no conn at the end.
func TestBuilder_ConcurrentBuildAndClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	b := grpctransport.NewBuilder()
	const n = 16
	errc := make(chan error, n)
	for range n {
		go func() {
			tr, err := b.Dial(insecureConfig(lis.Addr().String()), transport.BuildOptions{})
			if err != nil {
				errc <- err
				return
			}
			err = verifyNewStreamEcho(ctx, tr)
			tr.Close()
			errc <- err
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	if got := grpctransport.NumConns(b); got != 0 {
		t.Fatalf("NumConns = %d after every Transport closed, want 0", got)
	}
}

// TestWithDialOptions checks that dial options are used and come after the
// defaults: a context dialer reaches the server under a fake target, and
// insecure credentials override the bootstrap's "tls".
func TestWithDialOptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lis := startEchoServer(t)
	var dials atomic.Int32
	b := grpctransport.NewBuilder(
		grpctransport.WithDialOptions(grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", lis.Addr().String())
		})),
		grpctransport.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials())),
	)
	tr := build(t, b, &bootstrap.ServerConfig{
		ServerURI:    "passthrough:///management-server.invalid:443",
		ChannelCreds: bootstrap.ChannelCreds{Type: "tls"},
	})
	if err := verifyNewStreamEcho(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if dials.Load() == 0 {
		t.Fatal("the custom dialer was not used")
	}
}

// TestBuild_Errors checks Build's argument errors.
func TestBuild_Errors(t *testing.T) {
	tests := []struct {
		name    string
		sc      *bootstrap.ServerConfig
		wantErr string
	}{
		{name: "nil", sc: nil, wantErr: "nil ServerConfig"},
		{name: "no uri", sc: &bootstrap.ServerConfig{ChannelCreds: bootstrap.ChannelCreds{Type: "insecure"}}, wantErr: "empty server URI"},
		{
			name:    "unsupported creds",
			sc:      &bootstrap.ServerConfig{ServerURI: "localhost:1", ChannelCreds: bootstrap.ChannelCreds{Type: "alts"}},
			wantErr: `unsupported channel_creds type "alts"`,
		},
		{
			name: "unsupported call creds",
			sc: &bootstrap.ServerConfig{ServerURI: "localhost:1", ChannelCreds: bootstrap.ChannelCreds{Type: "insecure"},
				CallCreds: []bootstrap.CallCreds{{Type: "future"}}},
			wantErr: `call_creds[0]: no builder for type "future"`,
		},
		{
			name:    "bad target",
			sc:      &bootstrap.ServerConfig{ServerURI: "dns://a/b/c:%zz", ChannelCreds: bootstrap.ChannelCreds{Type: "insecure"}},
			wantErr: "creating gRPC channel",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := grpctransport.NewBuilder()
			tr, err := b.Dial(tc.sc, transport.BuildOptions{})
			if err == nil {
				tr.Close()
				t.Fatalf("Build succeeded, want error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "grpctransport: ") {
				t.Fatalf("Build error = %q, want prefix grpctransport: and %q", err, tc.wantErr)
			}
			if got := grpctransport.NumConns(b); got != 0 {
				t.Fatalf("NumConns after a failed Build = %d, want 0", got)
			}
		})
	}
}
