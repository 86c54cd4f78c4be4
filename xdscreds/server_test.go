// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/testutil/certs"
)

// hiConn is a connection of an xDS-enabled server: it carries the handshake
// info of its filter chain, as package server's connections do.
type hiConn struct {
	net.Conn
	hi  *handshake.ServerHandshakeInfo
	err error

	mu       sync.Mutex
	deadline time.Time
}

func (c *hiConn) XDSHandshakeInfo() (*handshake.ServerHandshakeInfo, error) { return c.hi, c.err }

func (c *hiConn) HandshakeDeadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline
}

func (c *hiConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// hiListener wraps each accepted connection in a hiConn; with plain, it
// does not (a grpc.Server that is not an xDS server).
type hiListener struct {
	net.Listener
	hi    *handshake.ServerHandshakeInfo
	err   error
	plain bool
}

func (l hiListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.plain {
		return c, err
	}
	return &hiConn{Conn: c, hi: l.hi, err: l.err}, nil
}

// peerService answers UnaryCall with the client's SPIFFE ID (username).
type peerService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (peerService) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	resp := &testgrpc.SimpleResponse{}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && info.SPIFFEID != nil {
			resp.Username = info.SPIFFEID.String()
		}
	}
	return resp, nil
}

// startServer serves peerService with server credentials on loopback
// through l (its Listener is set here), stopped at the end of the test.
func startServer(t *testing.T, l hiListener, opts ...grpc.ServerOption) string {
	t.Helper()
	creds, err := NewServerCredentials(ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Listener = lis
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.Creds(creds)}, opts...)...)
	testgrpc.RegisterTestServiceServer(s, peerService{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(l)
	}()
	t.Cleanup(func() { s.Stop(); <-done })
	return lis.Addr().String()
}

// callWith makes one RPC to addr with client transport credentials creds.
func callWith(t *testing.T, addr string, creds credentials.TransportCredentials) (*testgrpc.SimpleResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	return testgrpc.NewTestServiceClient(cc).UnaryCall(testContext(t), &testgrpc.SimpleRequest{}, grpc.WaitForReady(false))
}

func TestNewServerCredentials_NoFallback(t *testing.T) {
	if _, err := NewServerCredentials(ServerOptions{}); err == nil || !strings.Contains(err.Error(), "FallbackCreds") {
		t.Fatalf("NewServerCredentials without fallback = %v, want an error naming FallbackCreds", err)
	}
}

// TestServerCredentials_Handshake serves RPCs over real gRPC connections
// whose filter chain's handshake info the connection carries, and checks
// the outcome of clients with and without certificates (gRFC A29, A87):
// the RPC succeeds and the server saw the client's SPIFFE ID, or it fails
// with UNAVAILABLE.
func TestServerCredentials_Handshake(t *testing.T) {
	p := newPKI(t)
	rogueCA := newCA(t, "spiffe://a.example")
	rogue := issue(t, rogueCA, certs.Options{SPIFFEID: "spiffe://a.example/client"})
	clientTLS := func(l *certs.Leaf) credentials.TransportCredentials {
		cfg := &tls.Config{RootCAs: certs.Pool(p.caA), ServerName: "backend.a.example"}
		if l != nil {
			cfg.Certificates = []tls.Certificate{l.TLS}
		}
		return credentials.NewTLS(cfg)
	}
	tests := []struct {
		name     string
		hi       *handshake.ServerHandshakeInfo
		client   credentials.TransportCredentials
		wantUser string
		wantErr  bool
	}{
		{
			name:     "mTLS with a client certificate",
			hi:       &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: rootsOf(p.caA), RequireClientCert: true},
			client:   clientTLS(p.client),
			wantUser: "spiffe://a.example/client",
		},
		{
			name:    "mTLS, a client without a certificate",
			hi:      &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: rootsOf(p.caA), RequireClientCert: true},
			client:  clientTLS(nil),
			wantErr: true,
		},
		{
			name:    "mTLS, a client certificate of an unknown CA",
			hi:      &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: rootsOf(p.caA), RequireClientCert: true},
			client:  clientTLS(rogue),
			wantErr: true,
		},
		{
			name:   "optional client certificate, none given",
			hi:     &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: rootsOf(p.caA)},
			client: clientTLS(nil),
		},
		{
			name:    "optional client certificate that does not verify",
			hi:      &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: rootsOf(p.caA)},
			client:  clientTLS(rogue),
			wantErr: true,
		},
		{
			name:   "TLS only: the client certificate is not asked for",
			hi:     &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server)},
			client: clientTLS(p.client),
		},
		{
			name:     "SPIFFE trust bundle map, the client's trust domain",
			hi:       &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: bundlesOf(p.caA, p.caB), RequireClientCert: true},
			client:   clientTLS(p.clientB),
			wantUser: "spiffe://b.example/client",
		},
		{
			name:    "SPIFFE trust bundle map without the client's trust domain",
			hi:      &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: bundlesOf(p.caA), RequireClientCert: true},
			client:  clientTLS(p.clientB),
			wantErr: true,
		},
		{
			name:   "no security config: the fallback credentials",
			client: insecure.NewCredentials(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, hiListener{hi: tc.hi})
			resp, err := callWith(t, addr, tc.client)
			if tc.wantErr {
				if status.Code(err) != codes.Unavailable {
					t.Fatalf("UnaryCall() = %v, %v; want UNAVAILABLE", resp, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnaryCall() error = %v", err)
			}
			if resp.GetUsername() != tc.wantUser {
				t.Errorf("the server saw client %q, want %q", resp.GetUsername(), tc.wantUser)
			}
		})
	}
}

// TestServerCredentials_Failures checks the handshakes that fail before
// TLS: the chain's providers could not be acquired; the identity provider
// has no key material until the connection's handshake deadline.
func TestServerCredentials_Failures(t *testing.T) {
	p := newPKI(t)
	client := credentials.NewTLS(&tls.Config{RootCAs: certs.Pool(p.caA), ServerName: "backend.a.example"})
	t.Run("providers not acquired", func(t *testing.T) {
		addr := startServer(t, hiListener{err: errors.New("filter chain: identity certificate provider: boom")})
		if _, err := callWith(t, addr, client); status.Code(err) != codes.Unavailable {
			t.Fatalf("UnaryCall() error = %v, want UNAVAILABLE", err)
		}
	})
	t.Run("no key material before the deadline", func(t *testing.T) {
		hi := &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: staticProvider{}}
		addr := startServer(t, hiListener{hi: hi}, grpc.ConnectionTimeout(50*time.Millisecond))
		if _, err := callWith(t, addr, client); status.Code(err) != codes.Unavailable {
			t.Fatalf("UnaryCall() error = %v, want UNAVAILABLE", err)
		}
	})
	t.Run("a grpc.Server that is not an xDS server uses the fallback", func(t *testing.T) {
		addr := startServer(t, hiListener{plain: true})
		if _, err := callWith(t, addr, insecure.NewCredentials()); err != nil {
			t.Fatalf("UnaryCall() error = %v", err)
		}
	})
}

func TestServerCredentials_Methods(t *testing.T) {
	c, err := NewServerCredentials(ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ClientHandshake(t.Context(), "a", nil); err == nil {
		t.Error("ClientHandshake() succeeded on server credentials")
	}
	if got := c.Info().SecurityProtocol; got != "tls" {
		t.Errorf("Info().SecurityProtocol = %q, want tls", got)
	}
	if c.Clone() == nil || c.(*serverCreds).OverrideServerName("x") == nil {
		t.Error("Clone() = nil or OverrideServerName() = nil")
	}
}
