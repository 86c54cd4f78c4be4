// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/proxyless/xds/internal/xdscreds"
)

// serverVerifier verifies the server of one client handshake (gRFC A29,
// A82, A87). It is made per handshake, with the key material of that
// moment, and is immutable.
type serverVerifier struct {
	hi      *xdscreds.ClientHandshakeInfo
	roots   *x509.CertPool                  // the root provider's CA certificates; nil with bundles or system roots
	bundles map[string]*spiffebundle.Bundle // the root provider's SPIFFE trust bundle map, by trust domain; nil when none
}

// verify is tls.Config.VerifyConnection: it verifies the server's chain
// with crypto/x509 against the roots chosen by rootsFor, for server
// authentication, then checks the leaf's SANs against
// match_subject_alt_names.
func (v *serverVerifier) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("xds: the server presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	roots, err := v.rootsFor(leaf)
	if err != nil {
		return err
	}
	opts := x509.VerifyOptions{
		Roots:         roots, // nil: the system roots
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("xds: cluster %q: verifying the server certificate: %w", v.hi.Cluster, err)
	}
	if !matchSubjectAltNames(v.hi.SANMatchers, leaf) {
		return fmt.Errorf("xds: cluster %q: the server certificate's SANs (%s) match none of match_subject_alt_names", v.hi.Cluster, describeSANs(leaf))
	}
	return nil
}

// rootsFor returns the roots that verify leaf: the system roots (nil)
// with system_root_certs (gRFC A82); with a SPIFFE trust bundle map, the
// bundle of the trust domain of leaf's SPIFFE ID, leaf being rejected
// when it has no single SPIFFE ID or its trust domain has no bundle
// (gRFC A87); otherwise the provider's CA certificates.
func (v *serverVerifier) rootsFor(leaf *x509.Certificate) (*x509.CertPool, error) {
	switch {
	case v.hi.SystemRoots:
		return nil, nil
	case v.bundles != nil:
		id, err := x509svid.IDFromCert(leaf)
		if err != nil {
			return nil, fmt.Errorf("xds: cluster %q: the server certificate has no single SPIFFE ID, which the SPIFFE trust bundle map of certificate provider instance %q requires: %w", v.hi.Cluster, v.hi.RootInstance, err)
		}
		b, ok := v.bundles[id.TrustDomain().Name()]
		if !ok {
			return nil, fmt.Errorf("xds: cluster %q: no SPIFFE trust bundle for the server's trust domain %q (server %s) in certificate provider instance %q", v.hi.Cluster, id.TrustDomain().Name(), id, v.hi.RootInstance)
		}
		pool := x509.NewCertPool()
		for _, c := range b.X509Authorities() {
			pool.AddCert(c)
		}
		return pool, nil
	default:
		return v.roots, nil
	}
}
