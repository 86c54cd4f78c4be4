// SPDX-License-Identifier: Apache-2.0

// Package handshake carries the xDS security configuration of a cluster
// (gRFC A29) from the data path to the TLS handshake: package xdsresolver
// builds a ClientHandshakeInfo for the endpoints of a cluster whose
// Cluster has a transport socket and puts it in the attributes of each
// of their addresses; package xdscreds reads it there, through
// grpc's public credentials.ClientHandshakeInfoFromContext, at each
// handshake. On the server side, package server gives each accepted
// connection the ServerHandshakeInfo of its filter chain (the connection
// implements ServerConn), which package xdscreds reads in
// ServerHandshake. Neither package imports the other. The same address
// attributes carry what else a connection to an endpoint needs: its host
// name (SNI, gRFC A101) and its HTTP CONNECT proxy (gRFC A86), which the
// dialer of xdsresolver.DialOptions reads.
package handshake

import (
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/credentials/tls/certprovider"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/resources"
)

// Acquire returns a running certificate provider of a bootstrap instance
// (xdscreds.ProviderStore.Provider): Close on the provider releases it.
type Acquire func(instance string, opts certprovider.BuildOptions) (certprovider.Provider, error)

// ClientHandshakeInfo is the security configuration the handshakes of a
// cluster's connections use: its certificate providers and its server
// authorization (match_subject_alt_names). It is shared by the addresses
// of the cluster's endpoints, compared by identity (one per child
// balancer of the cluster), and owned by whoever made it, who closes it
// once no address carries it.
type ClientHandshakeInfo struct {
	// Initialized at creation time and read-only afterwards.

	// Cluster is the leaf cluster, for messages.
	Cluster string
	// Root gives the root certificates or SPIFFE trust bundle map that
	// verify servers; nil when SystemRoots.
	Root certprovider.Provider
	// RootInstance is Root's certificate provider instance, for messages.
	RootInstance string
	// Identity gives the client certificate; nil when the client presents
	// none (TLS rather than mTLS).
	Identity certprovider.Provider
	// IdentityInstance is Identity's instance, for messages.
	IdentityInstance string
	// SystemRoots: servers are verified with the system's roots (gRFC
	// A82).
	SystemRoots bool
	// SANMatchers is match_subject_alt_names; empty accepts any SAN.
	SANMatchers []resources.StringMatcher
	// SNI, AutoHostSNI and AutoSNISANValidation are those of the
	// cluster's UpstreamTlsContext (gRFC A101): the server name of a
	// handshake is the host name of its address (HostnameFromAttributes)
	// with AutoHostSNI when it has one, else SNI, else none; with
	// AutoSNISANValidation and a server name, the server certificate must
	// be valid for that name, in place of SANMatchers.
	SNI                  string
	AutoHostSNI          bool
	AutoSNISANValidation bool

	closeOnce sync.Once
}

// NewClientHandshakeInfo acquires the certificate providers that sc
// names, with certificate names and wants as gRFC A29 says (the root
// instance with WantRoot, the identity instance with WantIdentity), and
// returns the handshake info of cluster. On error, nothing stays
// acquired; the error names the cluster and the instance.
func NewClientHandshakeInfo(cluster string, sc *resources.SecurityConfig, acquire Acquire) (*ClientHandshakeInfo, error) {
	hi := &ClientHandshakeInfo{
		Cluster:          cluster,
		RootInstance:     sc.RootInstanceName,
		IdentityInstance: sc.IdentityInstanceName,
		SystemRoots:      sc.SystemRootCerts,
		SANMatchers:      sc.SubjectAltNameMatchers,

		SNI:                  sc.SNI,
		AutoHostSNI:          sc.AutoHostSNI,
		AutoSNISANValidation: sc.AutoSNISANValidation,
	}
	if !sc.SystemRootCerts {
		p, err := acquire(sc.RootInstanceName, certprovider.BuildOptions{CertName: sc.RootCertName, WantRoot: true})
		if err != nil {
			return nil, fmt.Errorf("cluster %q: root certificate provider: %w", cluster, err)
		}
		hi.Root = p
	}
	if sc.IdentityInstanceName != "" {
		p, err := acquire(sc.IdentityInstanceName, certprovider.BuildOptions{CertName: sc.IdentityCertName, WantIdentity: true})
		if err != nil {
			hi.Close()
			return nil, fmt.Errorf("cluster %q: identity certificate provider: %w", cluster, err)
		}
		hi.Identity = p
	}
	return hi, nil
}

// Close releases the providers. It is idempotent. Handshakes that start
// afterwards fail.
func (hi *ClientHandshakeInfo) Close() {
	hi.closeOnce.Do(func() {
		if hi.Root != nil {
			hi.Root.Close()
		}
		if hi.Identity != nil {
			hi.Identity.Close()
		}
	})
}

// String describes hi for logs (grpc prints address attributes).
func (hi *ClientHandshakeInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "xDS TLS of cluster %q: roots ", hi.Cluster)
	if hi.SystemRoots {
		b.WriteString("system")
	} else {
		fmt.Fprintf(&b, "%q", hi.RootInstance)
	}
	if hi.IdentityInstance != "" {
		fmt.Fprintf(&b, ", identity %q", hi.IdentityInstance)
	}
	fmt.Fprintf(&b, ", %d SAN matchers", len(hi.SANMatchers))
	if hi.SNI != "" {
		fmt.Fprintf(&b, ", SNI %q", hi.SNI)
	}
	if hi.AutoHostSNI {
		b.WriteString(", auto host SNI")
	}
	if hi.AutoSNISANValidation {
		b.WriteString(", SAN validated against the SNI")
	}
	return b.String()
}

// ServerName returns the server name of a handshake to an address whose
// host name (HostnameFromAttributes) is hostname (gRFC A101): with
// AutoHostSNI, hostname without its port, if any; else SNI; "" for none.
func (hi *ClientHandshakeInfo) ServerName(hostname string) string {
	if hi.AutoHostSNI && hostname != "" {
		// A LOGICAL_DNS cluster's host name has its port (gRFC A81); a
		// server name has none (RFC 6066 §3).
		if h, _, err := net.SplitHostPort(hostname); err == nil {
			return h
		}
		return hostname
	}
	return hi.SNI
}

// handshakeKey is the address attribute key of *ClientHandshakeInfo.
type handshakeKey struct{}

// SetClientHandshakeInfo returns addr with hi in its Attributes (not its
// BalancerAttributes: grpc gives the handshake the Attributes).
func SetClientHandshakeInfo(addr grpcresolver.Address, hi *ClientHandshakeInfo) grpcresolver.Address {
	addr.Attributes = addr.Attributes.WithValue(handshakeKey{}, hi)
	return addr
}

// hostnameKey is the address attribute key of an endpoint's host name.
type hostnameKey struct{}

// SetHostname returns addr with the host name of its endpoint in its
// Attributes (gRFC A101 auto_host_sni): Endpoint.Hostname of an EDS
// cluster, the DNS name (with port) of a LOGICAL_DNS cluster. addr is
// returned unchanged when hostname is "".
func SetHostname(addr grpcresolver.Address, hostname string) grpcresolver.Address {
	if hostname == "" {
		return addr
	}
	addr.Attributes = addr.Attributes.WithValue(hostnameKey{}, hostname)
	return addr
}

// HostnameFromAttributes returns the host name SetHostname put in a, ""
// when there is none.
func HostnameFromAttributes(a *attributes.Attributes) string {
	h, _ := a.Value(hostnameKey{}).(string)
	return h
}

// proxyKey is the address attribute key of an endpoint's HTTP CONNECT
// proxy.
type proxyKey struct{}

// SetProxyAddress returns addr with the address ("host:port") of the HTTP
// CONNECT proxy its connections go through (gRFC A86) in its Attributes,
// where the channel's dialer reads it. addr is returned unchanged when
// proxy is "".
func SetProxyAddress(addr grpcresolver.Address, proxy string) grpcresolver.Address {
	if proxy == "" {
		return addr
	}
	addr.Attributes = addr.Attributes.WithValue(proxyKey{}, proxy)
	return addr
}

// ProxyAddressFromAttributes returns the proxy SetProxyAddress put in a,
// "" when there is none.
func ProxyAddressFromAttributes(a *attributes.Attributes) string {
	p, _ := a.Value(proxyKey{}).(string)
	return p
}

// ClientHandshakeInfoFromAttributes returns the handshake info in a, nil
// when there is none (a is nil, the address did not come from package
// resolver, or its cluster has no security config).
func ClientHandshakeInfoFromAttributes(a *attributes.Attributes) *ClientHandshakeInfo {
	hi, _ := a.Value(handshakeKey{}).(*ClientHandshakeInfo)
	return hi
}
