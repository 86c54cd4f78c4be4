// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"

	"github.com/proxyless/xds/internal/handshake"
)

// TestServerTLSConfig checks the TLS configuration a server running
// crypto/tls itself gets for a connection: its chain's certificate and
// client verification; none for a chain without TLS or a connection that
// is not an xDS server's; the chain's error.
func TestServerTLSConfig(t *testing.T) {
	p := newPKI(t)
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	ctx := t.Context()

	hi := &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: identityOf(p.server), Root: rootsOf(p.caA), RequireClientCert: true}
	cfg, err := ServerTLSConfig(ctx, handshake.NewServerConn(c1, hi, nil))
	if err != nil || cfg == nil {
		t.Fatalf("ServerTLSConfig(mTLS chain) = %v, %v; want a config", cfg, err)
	}
	if len(cfg.Certificates) != 1 || cfg.ClientAuth != tls.RequireAnyClientCert || cfg.VerifyConnection == nil || cfg.NextProtos != nil {
		t.Errorf("config: %d certificates, ClientAuth %v, VerifyConnection set %v, NextProtos %q; want the identity, RequireAnyClientCert, verified, no ALPN", len(cfg.Certificates), cfg.ClientAuth, cfg.VerifyConnection != nil, cfg.NextProtos)
	}
	for name, conn := range map[string]net.Conn{
		"chain without TLS":   handshake.NewServerConn(c1, nil, nil),
		"not an xDS server's": c1,
	} {
		if cfg, err := ServerTLSConfig(ctx, conn); cfg != nil || err != nil {
			t.Errorf("ServerTLSConfig(%s) = %v, %v; want nil, nil", name, cfg, err)
		}
	}
	boom := errors.New("boom")
	if _, err := ServerTLSConfig(ctx, handshake.NewServerConn(c1, nil, boom)); !errors.Is(err, boom) {
		t.Errorf("ServerTLSConfig(chain whose providers failed) error = %v, want %v", err, boom)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ServerTLSConfig(cctx, handshake.NewServerConn(c1, &handshake.ServerHandshakeInfo{Chain: `"c"`, Identity: staticProvider{}}, nil)); err == nil {
		t.Error("ServerTLSConfig(no key material, context done) succeeded, want an error")
	}
}
