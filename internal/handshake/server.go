// SPDX-License-Identifier: Apache-2.0

package handshake

import (
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/credentials/tls/certprovider"

	"github.com/proxyless/xds/resources"
)

// ServerHandshakeInfo is the security configuration of the connections
// of one filter chain of an xDS-enabled server (gRFC A29): its identity
// and root certificate providers. Package server makes one per filter
// chain in use, gives it to each connection the chain matches
// (ServerConn), and closes it once the chain's connections are gone;
// package xdscreds reads it at each server handshake.
type ServerHandshakeInfo struct {
	// Initialized at creation time and read-only afterwards.

	// Chain names the filter chain, for messages.
	Chain string
	// Identity gives the server's certificate.
	Identity certprovider.Provider
	// IdentityInstance is Identity's instance, for messages.
	IdentityInstance string
	// Root gives the roots that verify client certificates; nil when
	// clients are not asked for one.
	Root certprovider.Provider
	// RootInstance is Root's instance, for messages.
	RootInstance string
	// RequireClientCert: a client without a certificate fails the
	// handshake (require_client_certificate).
	RequireClientCert bool

	closeOnce sync.Once
}

// NewServerHandshakeInfo acquires the certificate providers that sc
// names (the identity instance with WantIdentity, the root instance, if
// any, with WantRoot, as gRFC A29 says) and returns the handshake info of
// the filter chain named chain. On error, nothing stays acquired; the
// error names the chain and the instance.
func NewServerHandshakeInfo(chain string, sc *resources.ServerSecurityConfig, acquire Acquire) (*ServerHandshakeInfo, error) {
	hi := &ServerHandshakeInfo{
		Chain:             chain,
		IdentityInstance:  sc.IdentityInstanceName,
		RootInstance:      sc.RootInstanceName,
		RequireClientCert: sc.RequireClientCertificate,
	}
	p, err := acquire(sc.IdentityInstanceName, certprovider.BuildOptions{CertName: sc.IdentityCertName, WantIdentity: true})
	if err != nil {
		return nil, fmt.Errorf("filter chain %s: identity certificate provider: %w", chain, err)
	}
	hi.Identity = p
	if sc.RootInstanceName != "" {
		p, err := acquire(sc.RootInstanceName, certprovider.BuildOptions{CertName: sc.RootCertName, WantRoot: true})
		if err != nil {
			hi.Close()
			return nil, fmt.Errorf("filter chain %s: root certificate provider: %w", chain, err)
		}
		hi.Root = p
	}
	return hi, nil
}

// Close releases the providers. It is idempotent. Handshakes that start
// afterwards fail.
func (hi *ServerHandshakeInfo) Close() {
	hi.closeOnce.Do(func() {
		if hi.Identity != nil {
			hi.Identity.Close()
		}
		if hi.Root != nil {
			hi.Root.Close()
		}
	})
}

// ServerConn is implemented by the connections the xDS-enabled servers
// accept (NewServerConn): package server hands them to its grpc.Server,
// whose transport credentials get them in ServerHandshake; package
// xdshttp to crypto/tls, whose handshake asks package xdscreds for the
// chain's configuration (xdscreds.ServerTLSConfig).
type ServerConn interface {
	net.Conn
	// XDSHandshakeInfo returns the security configuration of the
	// connection's filter chain: nil when the chain has none (the
	// fallback credentials' handshake), or an error when the chain's
	// certificate providers could not be acquired (the handshake fails
	// with it).
	XDSHandshakeInfo() (*ServerHandshakeInfo, error)
	// HandshakeDeadline returns the deadline the grpc.Server set on the
	// connection for its handshake (SetDeadline), zero if none: how long
	// the credentials may wait for key material.
	HandshakeDeadline() time.Time
}

// NewServerConn returns c, a connection accepted for a filter chain whose
// security configuration is hi (nil: none) or failed with hiErr, as a
// ServerConn: the connection an xDS-enabled server hands on, whose
// handshake reads the chain's configuration. Its HandshakeDeadline is the
// last deadline set with SetDeadline or SetReadDeadline (the handshake
// timeout grpc.Server and http.Server set).
func NewServerConn(c net.Conn, hi *ServerHandshakeInfo, hiErr error) ServerConn {
	return &serverConn{Conn: c, hi: hi, hiErr: hiErr}
}

// serverConn is the ServerConn of NewServerConn.
type serverConn struct {
	net.Conn
	hi    *ServerHandshakeInfo // read-only
	hiErr error                // read-only

	mu       sync.Mutex
	deadline time.Time // guarded by mu
}

// XDSHandshakeInfo returns the chain's security configuration.
func (c *serverConn) XDSHandshakeInfo() (*ServerHandshakeInfo, error) {
	return c.hi, c.hiErr
}

// SetDeadline records t for HandshakeDeadline and sets it.
func (c *serverConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline records t for HandshakeDeadline and sets it.
func (c *serverConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// HandshakeDeadline returns the last deadline set.
func (c *serverConn) HandshakeDeadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline
}
