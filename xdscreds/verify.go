// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/proxyless/xds/internal/handshake"
)

// rootSet is what verifies a peer's certificate chain (gRFC A29, A82,
// A87): the root provider's key material of one handshake, or the
// system's roots. It is immutable.
type rootSet struct {
	roots    *x509.CertPool                  // the root provider's CA certificates; nil with bundles or system
	bundles  map[string]*spiffebundle.Bundle // the root provider's SPIFFE trust bundle map, by trust domain; nil when none
	system   bool                            // the system's roots (gRFC A82)
	instance string                          // the root provider instance, for messages
}

// verifyChain verifies the chain a peer presented (leaf first) with
// crypto/x509, for usage, against the roots chosen by rootsFor, and
// returns the leaf. peer names the peer in messages ("server",
// "client").
func (r *rootSet) verifyChain(peer string, chain []*x509.Certificate, usage x509.ExtKeyUsage) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("the %s presented no certificate", peer)
	}
	leaf := chain[0]
	roots, err := r.rootsFor(peer, leaf)
	if err != nil {
		return nil, err
	}
	opts := x509.VerifyOptions{
		Roots:         roots, // nil: the system roots
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{usage},
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying the %s certificate: %w", peer, err)
	}
	return leaf, nil
}

// rootsFor returns the roots that verify leaf: the system roots (nil)
// with system; with a SPIFFE trust bundle map, the bundle of the trust
// domain of leaf's SPIFFE ID, leaf being rejected when it has no single
// SPIFFE ID or its trust domain has no bundle (gRFC A87); otherwise the
// provider's CA certificates.
func (r *rootSet) rootsFor(peer string, leaf *x509.Certificate) (*x509.CertPool, error) {
	switch {
	case r.system:
		return nil, nil
	case r.bundles != nil:
		id, err := x509svid.IDFromCert(leaf)
		if err != nil {
			return nil, fmt.Errorf("the %s certificate has no single SPIFFE ID, which the SPIFFE trust bundle map of certificate provider instance %q requires: %w", peer, r.instance, err)
		}
		b, ok := r.bundles[id.TrustDomain().Name()]
		if !ok {
			return nil, fmt.Errorf("no SPIFFE trust bundle for the %s's trust domain %q (%s %s) in certificate provider instance %q", peer, id.TrustDomain().Name(), peer, id, r.instance)
		}
		pool := x509.NewCertPool()
		for _, c := range b.X509Authorities() {
			pool.AddCert(c)
		}
		return pool, nil
	default:
		return r.roots, nil
	}
}

// serverVerifier verifies the server of one client handshake (gRFC A29,
// A82, A87). It is made per handshake, with the key material of that
// moment, and is immutable.
type serverVerifier struct {
	hi  *handshake.ClientHandshakeInfo
	sni string // the server name the client sent, "" for none
	rootSet
}

// verify is tls.Config.VerifyConnection: it verifies the server's chain
// for server authentication, then, with auto_sni_san_validation and an
// SNI, that the leaf is valid for the SNI (crypto/x509's host name check:
// a DNS SAN, or an IP SAN for an IP address, gRFC A101), else checks the
// leaf's SANs against match_subject_alt_names.
func (v *serverVerifier) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("xds: the server presented no certificate")
	}
	leaf, err := v.verifyChain("server", cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return fmt.Errorf("xds: cluster %q: %w", v.hi.Cluster, err)
	}
	if v.hi.AutoSNISANValidation && v.sni != "" {
		if err := leaf.VerifyHostname(v.sni); err != nil {
			return fmt.Errorf("xds: cluster %q: the server certificate's SANs (%s) do not match the SNI %q (auto_sni_san_validation): %w", v.hi.Cluster, describeSANs(leaf), v.sni, err)
		}
		return nil
	}
	if !matchSubjectAltNames(v.hi.SANMatchers, leaf) {
		return fmt.Errorf("xds: cluster %q: the server certificate's SANs (%s) match none of match_subject_alt_names", v.hi.Cluster, describeSANs(leaf))
	}
	return nil
}
