// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc/credentials"

	"github.com/proxyless/xds/internal/handshake"
)

// ClientOptions configures NewClientCredentials. It has the shape of
// grpc-go's credentials/xds.ClientOptions.
type ClientOptions struct {
	// FallbackCreds are the credentials of the connections whose address
	// carries no xDS security configuration: on a channel that does not
	// use this module's resolver, and for endpoints of clusters without a
	// transport socket (gRFC A29, "Programming API"). Required; typically
	// insecure.NewCredentials() or TLS credentials of your own. They are
	// not used when the xDS security configuration fails (a provider
	// without key material, a failed server authorization): such
	// handshakes fail.
	FallbackCreds credentials.TransportCredentials
}

// NewClientCredentials returns client transport credentials whose TLS
// configuration comes from xDS, per cluster (gRFC A29): give them to a
// channel built with this module's resolver (xdsresolver.NewBuilder or
// xdsresolver.DialOptions) with grpc.WithTransportCredentials. See the
// package doc. It returns an error when opts.FallbackCreds is nil.
func NewClientCredentials(opts ClientOptions) (credentials.TransportCredentials, error) {
	if opts.FallbackCreds == nil {
		return nil, errors.New("xdscreds: ClientOptions.FallbackCreds is nil; fallback credentials are required (gRFC A29)")
	}
	return &clientCreds{fallback: opts.FallbackCreds}, nil
}

// clientCreds implements credentials.TransportCredentials for clients. It is
// immutable.
type clientCreds struct {
	fallback credentials.TransportCredentials
}

// ClientHandshake does the TLS handshake of the cluster whose security
// configuration the address carries, and the fallback credentials'
// handshake when it carries none.
func (c *clientCreds) ClientHandshake(ctx context.Context, authority string, rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	attrs := credentials.ClientHandshakeInfoFromContext(ctx).Attributes
	hi := handshake.ClientHandshakeInfoFromAttributes(attrs)
	if hi == nil {
		return c.fallback.ClientHandshake(ctx, authority, rawConn)
	}
	sni := hi.ServerName(handshake.HostnameFromAttributes(attrs))
	cfg, err := clientTLSConfig(ctx, hi, sni)
	if err != nil {
		return nil, nil, err
	}
	// grpc's TLS credentials add what gRPC needs (ALPN h2, TLS 1.2 at
	// least), send their authority argument as SNI (none when it is ""),
	// honour ctx and return a TLSInfo with the server's SPIFFE ID. The
	// SNI is the cluster's (gRFC A101), never the channel's authority.
	return credentials.NewTLS(cfg).ClientHandshake(ctx, sni, rawConn)
}

// clientTLSConfig returns the TLS config of a handshake with the current
// key material of hi's providers: the client certificate, and the roots
// that VerifyConnection verifies the server with; sni is the handshake's
// server name ("" for none), which the server certificate must be valid
// for with auto_sni_san_validation. It waits, until ctx is done, for a
// provider that has no key material yet (its files were never read
// successfully).
func clientTLSConfig(ctx context.Context, hi *handshake.ClientHandshakeInfo, sni string) (*tls.Config, error) {
	v := &serverVerifier{hi: hi, sni: sni, rootSet: rootSet{system: hi.SystemRoots, instance: hi.RootInstance}}
	if hi.Root != nil {
		km, err := hi.Root.KeyMaterial(ctx)
		if err != nil {
			return nil, fmt.Errorf("xds: cluster %q: root certificates from certificate provider instance %q: %w", hi.Cluster, hi.RootInstance, err)
		}
		if km.Roots == nil && km.SPIFFEBundleMap == nil {
			return nil, fmt.Errorf("xds: cluster %q: certificate provider instance %q gives no root certificates (ca_certificate_file or spiffe_trust_bundle_map_file)", hi.Cluster, hi.RootInstance)
		}
		v.roots, v.bundles = km.Roots, km.SPIFFEBundleMap
	}
	cfg := &tls.Config{
		// crypto/tls checks a server's chain against RootCAs and its name
		// against ServerName; xDS replaces the name check with
		// match_subject_alt_names and may choose the roots by the
		// server's SPIFFE trust domain. So the built-in check is off and
		// VerifyConnection runs the same x509 verification with the roots
		// it chooses, then the SAN check (gRFC A29, A87).
		InsecureSkipVerify: true,
		VerifyConnection:   v.verify,
	}
	if hi.Identity != nil {
		km, err := hi.Identity.KeyMaterial(ctx)
		if err != nil {
			return nil, fmt.Errorf("xds: cluster %q: identity certificate from certificate provider instance %q: %w", hi.Cluster, hi.IdentityInstance, err)
		}
		if len(km.Certs) == 0 {
			return nil, fmt.Errorf("xds: cluster %q: certificate provider instance %q gives no identity certificate (certificate_file)", hi.Cluster, hi.IdentityInstance)
		}
		cfg.Certificates = km.Certs
	}
	return cfg, nil
}

// ServerHandshake fails: these are client credentials.
func (c *clientCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("xdscreds: ServerHandshake called on xDS client credentials")
}

// Info reports TLS, as grpc-go's xDS credentials do.
func (c *clientCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

// Clone returns a copy of c.
func (c *clientCreds) Clone() credentials.TransportCredentials {
	return &clientCreds{fallback: c.fallback.Clone()}
}

// OverrideServerName fails: with xDS, match_subject_alt_names says which
// servers are accepted.
func (c *clientCreds) OverrideServerName(string) error {
	return errors.New("xdscreds: the server name of xDS credentials cannot be overridden; match_subject_alt_names says which servers are accepted")
}

// ClientTLSConfig returns the *tls.Config of one TLS handshake with an
// endpoint of the cluster that hi describes, for a data path that runs
// crypto/tls itself (the net/http data path of package xdshttp), as
// ServerTLSConfig is for servers: the client certificate and the server
// verification of the cluster's UpstreamTlsContext with the current key
// material of its certificate providers (gRFC A29, A87: the chain
// against the roots or the SPIFFE bundle of the server's trust domain,
// then match_subject_alt_names), and the server name of gRFC A101
// (hostname is the endpoint's host name, for auto_host_sni; "" for none)
// as ServerName. The caller sets NextProtos. It waits, until ctx is done,
// for a provider that has no key material yet. hi comes from
// internal/handshake.NewClientHandshakeInfo: only this module's packages
// can call it.
func ClientTLSConfig(ctx context.Context, hi *handshake.ClientHandshakeInfo, hostname string) (*tls.Config, error) {
	sni := hi.ServerName(hostname)
	cfg, err := clientTLSConfig(ctx, hi, sni)
	if err != nil {
		return nil, err
	}
	cfg.ServerName = sni
	return cfg, nil
}
