// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/proxyless/xds/internal/handshake"
)

// ServerOptions configures NewServerCredentials. It has the shape of
// grpc-go's credentials/xds.ServerOptions.
type ServerOptions struct {
	// FallbackCreds are the credentials of the connections that carry no
	// xDS security configuration: those of filter chains without a
	// transport socket, and every connection of a grpc.Server that is not
	// an xDS-enabled server of package server (gRFC A29, "Programming
	// API"). Required; typically insecure.NewCredentials(). They are not
	// used when the xDS security configuration fails (no key material,
	// a client certificate that does not verify): such handshakes fail.
	FallbackCreds credentials.TransportCredentials
}

// NewServerCredentials returns server transport credentials whose TLS
// configuration comes from xDS, per filter chain (gRFC A29, A36): give
// them to an xDS-enabled server of package server with
// server.WithServerOptions(grpc.Creds(creds)). A connection whose filter
// chain has a DownstreamTlsContext does a TLS handshake presenting the
// identity provider's certificate; with a root provider, the client is
// asked for a certificate (required with require_client_certificate),
// which is verified by crypto/x509 for client authentication against the
// root provider's CA certificates, or, with a SPIFFE trust bundle map,
// the bundle of its SPIFFE ID's trust domain (gRFC A87). There is no SAN
// check on the server: RBAC (gRFC A41) authorizes the client's identity.
// The handshake waits for key material until the connection's handshake
// deadline (grpc.ConnectionTimeout, default 120 s). It returns an error
// when opts.FallbackCreds is nil. See docs/security.md and.
func NewServerCredentials(opts ServerOptions) (credentials.TransportCredentials, error) {
	if opts.FallbackCreds == nil {
		return nil, errors.New("xdscreds: ServerOptions.FallbackCreds is nil; fallback credentials are required (gRFC A29)")
	}
	return &serverCreds{fallback: opts.FallbackCreds}, nil
}

// serverCreds implements credentials.TransportCredentials for servers. It is
// immutable.
type serverCreds struct {
	fallback credentials.TransportCredentials
}

// defaultHandshakeTimeout bounds the wait for key material of a
// connection without a handshake deadline (gRPC always sets one: its
// connection timeout, 120 s by default).
const defaultHandshakeTimeout = 120 * time.Second

// ServerHandshake does the TLS handshake of the connection's filter chain
// when the connection carries an xDS security configuration, and the
// fallback credentials' handshake otherwise.
func (c *serverCreds) ServerHandshake(rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	sc, ok := rawConn.(handshake.ServerConn)
	if !ok {
		return c.fallback.ServerHandshake(rawConn)
	}
	hi, err := sc.XDSHandshakeInfo()
	if err != nil {
		return nil, nil, err
	}
	if hi == nil {
		return c.fallback.ServerHandshake(rawConn)
	}
	deadline := sc.HandshakeDeadline()
	if deadline.IsZero() {
		deadline = time.Now().Add(defaultHandshakeTimeout)
	}
	// ServerHandshake has no context: the key material is waited for
	// until the connection's deadline.
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cfg, err := serverTLSConfig(ctx, hi)
	if err != nil {
		return nil, nil, err
	}
	// grpc's TLS credentials add what gRPC needs (ALPN h2, TLS 1.2 at
	// least) and return a TLSInfo with the client's SPIFFE ID.
	return credentials.NewTLS(cfg).ServerHandshake(rawConn)
}

// ServerTLSConfig returns the TLS configuration of conn, a connection an
// xDS-enabled server accepted (package xdshttp's net/http server), for a
// crypto/tls server handshake: the DownstreamTlsContext of its filter
// chain with the current key material of the chain's certificate
// providers, waited for until ctx is done; with a root provider, the
// client's certificate is asked for (required with
// require_client_certificate) and verified as NewServerCredentials
// verifies it (gRFC A29, A87). The configuration has no NextProtos: the
// caller sets its ALPN protocols. It returns nil, nil when the
// connection's filter chain has no TLS, or when conn is not a connection
// of an xDS-enabled server; an error when the chain's certificate
// providers could not be started or give no key material. It is what
// ServerHandshake does before its TLS handshake, for servers that run
// crypto/tls themselves (tls.Config.GetConfigForClient).
func ServerTLSConfig(ctx context.Context, conn net.Conn) (*tls.Config, error) {
	sc, ok := conn.(handshake.ServerConn)
	if !ok {
		return nil, nil
	}
	hi, err := sc.XDSHandshakeInfo()
	if err != nil || hi == nil {
		return nil, err
	}
	return serverTLSConfig(ctx, hi)
}

// serverTLSConfig returns the TLS config of a server handshake with the
// current key material of hi's providers.
func serverTLSConfig(ctx context.Context, hi *handshake.ServerHandshakeInfo) (*tls.Config, error) {
	km, err := hi.Identity.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("xds: filter chain %s: identity certificate from certificate provider instance %q: %w", hi.Chain, hi.IdentityInstance, err)
	}
	if len(km.Certs) == 0 {
		return nil, fmt.Errorf("xds: filter chain %s: certificate provider instance %q gives no identity certificate (certificate_file)", hi.Chain, hi.IdentityInstance)
	}
	cfg := &tls.Config{Certificates: km.Certs, ClientAuth: tls.NoClientCert}
	if hi.Root == nil {
		return cfg, nil
	}
	rkm, err := hi.Root.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("xds: filter chain %s: root certificates from certificate provider instance %q: %w", hi.Chain, hi.RootInstance, err)
	}
	if rkm.Roots == nil && rkm.SPIFFEBundleMap == nil {
		return nil, fmt.Errorf("xds: filter chain %s: certificate provider instance %q gives no root certificates (ca_certificate_file or spiffe_trust_bundle_map_file)", hi.Chain, hi.RootInstance)
	}
	v := &clientVerifier{hi: hi, rootSet: rootSet{roots: rkm.Roots, bundles: rkm.SPIFFEBundleMap, instance: hi.RootInstance}}
	// crypto/tls verifies client certificates against ClientCAs only;
	// gRFC A87 chooses the roots by the client's SPIFFE trust domain. So
	// the certificate is requested here and verified by VerifyConnection.
	cfg.ClientAuth = tls.RequestClientCert
	if hi.RequireClientCert {
		cfg.ClientAuth = tls.RequireAnyClientCert
	}
	cfg.VerifyConnection = v.verify
	return cfg, nil
}

// clientVerifier verifies the client of one server handshake (gRFC A29,
// A87). It is made per handshake and is immutable.
type clientVerifier struct {
	hi *handshake.ServerHandshakeInfo
	rootSet
}

// verify is tls.Config.VerifyConnection: a client without a certificate
// passes (crypto/tls has already failed it when one is required); one
// with a certificate must have a chain that verifies for client
// authentication.
func (v *clientVerifier) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	if _, err := v.verifyChain("client", cs.PeerCertificates, x509.ExtKeyUsageClientAuth); err != nil {
		return fmt.Errorf("xds: filter chain %s: %w", v.hi.Chain, err)
	}
	return nil
}

// ClientHandshake fails: these are server credentials.
func (c *serverCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("xdscreds: ClientHandshake called on xDS server credentials")
}

// Info reports TLS, as grpc-go's xDS credentials do.
func (c *serverCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

// Clone returns a copy of c.
func (c *serverCreds) Clone() credentials.TransportCredentials {
	return &serverCreds{fallback: c.fallback.Clone()}
}

// OverrideServerName fails: it has no meaning for server credentials.
func (c *serverCreds) OverrideServerName(string) error {
	return errors.New("xdscreds: OverrideServerName is not supported by xDS server credentials")
}
