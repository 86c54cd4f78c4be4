// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/tls/certprovider"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil/certs"
)

func newCreds(t *testing.T) *clientCreds {
	t.Helper()
	c, err := NewClientCredentials(ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*clientCreds)
}

// containsQuoted reports whether msg contains want, as is or quoted (grpc
// quotes a connection error in the status message: desc = "…").
func containsQuoted(msg, want string) bool {
	return strings.Contains(msg, want) || strings.Contains(msg, strings.ReplaceAll(want, `"`, `\"`))
}

func TestNewClientCredentials_NoFallback(t *testing.T) {
	if _, err := NewClientCredentials(ClientOptions{}); err == nil || !strings.Contains(err.Error(), "FallbackCreds") {
		t.Fatalf("NewClientCredentials without fallback = %v, want an error naming FallbackCreds", err)
	}
}

func exact(s string) resources.StringMatcher {
	return resources.StringMatcher{Kind: resources.StringMatchExact, Value: s}
}

// TestClientCredentials_Handshake makes RPCs over real gRPC connections to
// TLS backends, with the handshake info of a cluster in the address's
// attributes, and checks the outcome: the RPC succeeds and the backend
// saw the client's SPIFFE ID, or it fails with UNAVAILABLE and the
// reason in its message (gRFC A29, A82, A87).
func TestClientCredentials_Handshake(t *testing.T) {
	p := newPKI(t)
	sysServer := issue(t, systemCA, certs.Options{DNSNames: []string{"backend.system.example"}})
	mtls := startBackend(t, serverTLS(p.server, p.caA, p.caB))
	tlsOnly := startBackend(t, serverTLS(p.server))
	sysBackend := startBackend(t, serverTLS(sysServer))

	tests := []struct {
		name     string
		backend  string
		hi       *handshake.ClientHandshakeInfo
		wantUser string // the client's SPIFFE ID the backend saw
		wantErr  string // in the UNAVAILABLE status message; "" for success
	}{
		{
			name:     "mTLS, any SAN",
			backend:  mtls.Address,
			hi:       &handshake.ClientHandshakeInfo{Root: rootsOf(p.caA), Identity: identityOf(p.client)},
			wantUser: "spiffe://a.example/client",
		},
		{
			name:     "mTLS, SPIFFE ID matches",
			backend:  mtls.Address,
			hi:       &handshake.ClientHandshakeInfo{Root: rootsOf(p.caA), Identity: identityOf(p.client), SANMatchers: []resources.StringMatcher{exact("spiffe://a.example/other"), exact("spiffe://a.example/backend")}},
			wantUser: "spiffe://a.example/client",
		},
		{
			name:    "SAN mismatch",
			backend: mtls.Address,
			hi:      &handshake.ClientHandshakeInfo{Cluster: "c1", Root: rootsOf(p.caA), Identity: identityOf(p.client), SANMatchers: []resources.StringMatcher{exact("spiffe://a.example/other")}},
			wantErr: `cluster "c1": the server certificate's SANs (DNS "backend.a.example"; URI "spiffe://a.example/backend"; IP "127.0.0.1") match none of match_subject_alt_names`,
		},
		{
			name:    "unknown CA",
			backend: mtls.Address,
			hi:      &handshake.ClientHandshakeInfo{Root: rootsOf(p.caB), Identity: identityOf(p.clientB)},
			wantErr: "x509: certificate signed by unknown authority",
		},
		{
			name:     "TLS without client certificate",
			backend:  tlsOnly.Address,
			hi:       &handshake.ClientHandshakeInfo{Root: rootsOf(p.caA)},
			wantUser: "",
		},
		{
			name:     "SPIFFE bundle of the server's trust domain",
			backend:  mtls.Address,
			hi:       &handshake.ClientHandshakeInfo{Root: bundlesOf(p.caB, p.caA), Identity: identityOf(p.clientB)},
			wantUser: "spiffe://b.example/client",
		},
		{
			name:    "SPIFFE bundle map without the server's trust domain",
			backend: mtls.Address,
			hi:      &handshake.ClientHandshakeInfo{RootInstance: "spiffe", Root: bundlesOf(p.caB), Identity: identityOf(p.clientB)},
			wantErr: `no SPIFFE trust bundle for the server's trust domain "a.example" (server spiffe://a.example/backend) in certificate provider instance "spiffe"`,
		},
		{
			name:    "SPIFFE bundle map, server without SPIFFE ID",
			backend: sysBackend.Address,
			hi:      &handshake.ClientHandshakeInfo{Root: bundlesOf(p.caA)},
			wantErr: "the server certificate has no single SPIFFE ID",
		},
		{
			name:    "system roots",
			backend: sysBackend.Address,
			hi:      &handshake.ClientHandshakeInfo{SystemRoots: true, SANMatchers: []resources.StringMatcher{exact("backend.system.example")}},
		},
		{
			name:    "system roots, server of another CA",
			backend: mtls.Address,
			hi:      &handshake.ClientHandshakeInfo{SystemRoots: true, Identity: identityOf(p.client)},
			wantErr: "x509: certificate signed by unknown authority",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tsc := dial(t, tc.backend, tc.hi, newCreds(t))
			resp, err := tsc.UnaryCall(testContext(t), &testgrpc.SimpleRequest{})
			if tc.wantErr != "" {
				if status.Code(err) != codes.Unavailable || !containsQuoted(status.Convert(err).Message(), tc.wantErr) {
					t.Fatalf("UnaryCall = %v, want UNAVAILABLE containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnaryCall: %v", err)
			}
			if resp.GetUsername() != tc.wantUser {
				t.Errorf("the backend saw client %q, want %q", resp.GetUsername(), tc.wantUser)
			}
		})
	}
}

// TestClientCredentials_Fallback checks that an address without handshake
// info (a cluster without transport socket, or a channel of another
// resolver) gets the fallback credentials: plaintext succeeds to a
// plaintext backend and fails to a TLS one.
func TestClientCredentials_Fallback(t *testing.T) {
	p := newPKI(t)
	plain := startBackend(t, nil)
	secure := startBackend(t, serverTLS(p.server))
	if _, err := dial(t, plain.Address, nil, newCreds(t)).UnaryCall(testContext(t), &testgrpc.SimpleRequest{}); err != nil {
		t.Errorf("UnaryCall over the fallback to a plaintext backend: %v", err)
	}
	if _, err := dial(t, secure.Address, nil, newCreds(t)).UnaryCall(testContext(t), &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("UnaryCall over the (plaintext) fallback to a TLS backend = %v, want UNAVAILABLE", err)
	}
}

// TestClientCredentials_NoKeyMaterial checks that a handshake waits for a
// provider that has no key material yet, and fails with the handshake's
// deadline, naming the instance.
func TestClientCredentials_NoKeyMaterial(t *testing.T) {
	hi := &handshake.ClientHandshakeInfo{Cluster: "c", RootInstance: "empty", Root: staticProvider{}}
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestShortTimeout)
	defer cancel()
	_, err := clientTLSConfig(ctx, hi, "")
	if err == nil || !strings.Contains(err.Error(), `root certificates from certificate provider instance "empty"`) {
		t.Fatalf("clientTLSConfig = %v, want an error naming the instance", err)
	}
	hi = &handshake.ClientHandshakeInfo{Cluster: "c", RootInstance: "certs-only", Root: staticProvider{&certprovider.KeyMaterial{Certs: []tls.Certificate{{}}}}}
	if _, err := clientTLSConfig(ctx, hi, ""); err == nil || !strings.Contains(err.Error(), "gives no root certificates") {
		t.Fatalf("clientTLSConfig = %v, want an error saying there are no roots", err)
	}
}

func TestClientCredentials_Misc(t *testing.T) {
	c := newCreds(t)
	if got := c.Info().SecurityProtocol; got != "tls" {
		t.Errorf("Info().SecurityProtocol = %q, want tls", got)
	}
	if c.Clone() == nil {
		t.Error("Clone() = nil")
	}
	if err := c.OverrideServerName("x"); err == nil {
		t.Error("OverrideServerName succeeded, want an error")
	}
	if _, _, err := c.ServerHandshake(nil); err == nil {
		t.Error("ServerHandshake succeeded, want an error")
	}
}
