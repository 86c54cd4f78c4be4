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

// ServerConn is implemented by the connections package server accepts and
// hands to its grpc.Server, whose transport credentials get them in
// ServerHandshake.
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
