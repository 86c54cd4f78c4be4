// SPDX-License-Identifier: Apache-2.0

// Package certs makes real X.509 certificates for tests and demos of xDS
// security (gRFC A29, A87): a certificate authority, leaf certificates
// with SPIFFE IDs and other subject alternative names, their PEM files,
// and SPIFFE trust bundle maps. Everything is generated with crypto/x509
// and ECDSA P-256 keys at run time; nothing is checked in.
//
//	ca, err := certs.NewCA("spiffe://example.org")
//	srv, err := ca.Issue(certs.Options{SPIFFEID: "spiffe://example.org/backend", DNSNames: []string{"localhost"}})
//	err = srv.WriteFiles("/tmp/x/server.pem", "/tmp/x/server.key")
//
// Files are replaced atomically (written beside, then renamed), so a
// certificate provider that watches them never reads half a file.
// Certificates are valid from an hour before they are made (by the
// clock of the caller: fake time inside a testing/synctest bubble) for
// Options.Validity. Package certs is for tests and demos (xdsctl demo
// --mtls, examples/server; tests use it as testutil/certs): its keys are
// not protected in any way.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// DefaultValidity is how long certificates are valid when Options.Validity
// is zero: a year.
const DefaultValidity = 365 * 24 * time.Hour

// CA is a certificate authority: a self-signed root that issues leaf
// certificates. It is immutable after NewCA and safe for concurrent use.
type CA struct {
	// Cert is the root certificate.
	Cert *x509.Certificate
	// PEM is Cert, PEM-encoded.
	PEM []byte
	// TrustDomain is the SPIFFE trust domain given to NewCA, "" when none.
	TrustDomain string

	key crypto.Signer
}

// NewCA returns a new self-signed certificate authority named name (its
// subject's common name). When name is a SPIFFE trust domain URI
// ("spiffe://example.org"), the CA's TrustDomain is set, and its
// certificate carries that URI as a SAN, as SPIFFE recommends for
// signing certificates; a "spiffe://" name that is not a valid trust
// domain is an error.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"proxyless/xds test CA"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(DefaultValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	ca := &CA{key: key}
	if strings.HasPrefix(name, "spiffe://") {
		td, err := spiffeid.TrustDomainFromString(name)
		if err != nil {
			return nil, fmt.Errorf("certs: CA trust domain %q: %w", name, err)
		}
		ca.TrustDomain = td.Name()
		tmpl.URIs = []*url.URL{td.ID().URL()}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	if ca.Cert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	ca.PEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return ca, nil
}

// Options describe a leaf certificate for CA.Issue.
type Options struct {
	// CommonName is the subject's common name; default: the SPIFFE ID,
	// else the first DNS name, else "leaf".
	CommonName string
	// SPIFFEID, when set, is the certificate's SPIFFE ID
	// ("spiffe://example.org/ns/default/sa/backend"): a URI SAN. It must
	// be a valid SPIFFE ID.
	SPIFFEID string
	// DNSNames, IPAddresses, EmailAddresses and URIs are further subject
	// alternative names.
	DNSNames       []string
	IPAddresses    []net.IP
	EmailAddresses []string
	URIs           []string
	// Validity is how long the certificate is valid, from an hour before
	// now. Zero means DefaultValidity; a negative value makes a
	// certificate that expired that long ago.
	Validity time.Duration
}

// Leaf is a certificate issued by a CA, with its key. It is immutable.
type Leaf struct {
	// Cert is the certificate.
	Cert *x509.Certificate
	// CertPEM is the certificate followed by its issuer's (the chain a
	// peer needs), PEM-encoded; KeyPEM is the private key (PKCS #8).
	CertPEM, KeyPEM []byte
	// TLS is the certificate and key for a tls.Config.
	TLS tls.Certificate
}

// Issue returns a new leaf certificate signed by ca, usable by both TLS
// servers and clients (extended key usages serverAuth and clientAuth).
func (ca *CA) Issue(o Options) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: leaf key: %w", err)
	}
	now := time.Now()
	validity := o.Validity
	if validity == 0 {
		validity = DefaultValidity
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial(),
		Subject:        pkix.Name{CommonName: o.CommonName},
		NotBefore:      now.Add(-time.Hour),
		NotAfter:       now.Add(validity),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:       o.DNSNames,
		IPAddresses:    o.IPAddresses,
		EmailAddresses: o.EmailAddresses,
	}
	if validity < 0 {
		tmpl.NotBefore, tmpl.NotAfter = now.Add(2*validity), now.Add(validity)
	}
	if o.SPIFFEID != "" {
		id, err := spiffeid.FromString(o.SPIFFEID)
		if err != nil {
			return nil, fmt.Errorf("certs: SPIFFE ID %q: %w", o.SPIFFEID, err)
		}
		tmpl.URIs = append(tmpl.URIs, id.URL())
	}
	for _, s := range o.URIs {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("certs: URI SAN %q: %w", s, err)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	switch {
	case tmpl.Subject.CommonName != "":
	case o.SPIFFEID != "":
		tmpl.Subject.CommonName = o.SPIFFEID
	case len(o.DNSNames) > 0:
		tmpl.Subject.CommonName = o.DNSNames[0]
	default:
		tmpl.Subject.CommonName = "leaf"
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("certs: leaf certificate: %w", err)
	}
	l := &Leaf{}
	if l.Cert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("certs: leaf certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: leaf key: %w", err)
	}
	l.CertPEM = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.PEM...)
	l.KeyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		return nil, fmt.Errorf("certs: leaf key pair: %w", err)
	}
	return l, nil
}

// Pool returns a certificate pool holding the CA certificates cas.
func Pool(cas ...*CA) *x509.CertPool {
	p := x509.NewCertPool()
	for _, ca := range cas {
		p.AddCert(ca.Cert)
	}
	return p
}

// WriteFile writes the CA certificate (PEM) to path, atomically.
func (ca *CA) WriteFile(path string) error { return WriteFileAtomic(path, ca.PEM) }

// WriteFiles writes the certificate chain and the key of l (PEM) to
// certFile and keyFile, each atomically: the key first, then the
// certificate.
func (l *Leaf) WriteFiles(certFile, keyFile string) error {
	if err := WriteFileAtomic(keyFile, l.KeyPEM); err != nil {
		return err
	}
	return WriteFileAtomic(certFile, l.CertPEM)
}

// BundleMap returns a SPIFFE trust bundle map (gRFC A87: the JSON object
// {"trust_domains": {"<trust domain>": <SPIFFE bundle>}}) in which each
// CA's certificate is the X.509 authority of its trust domain. Each CA
// must have a TrustDomain (NewCA with a "spiffe://" name); CAs of one
// trust domain share its bundle.
func BundleMap(cas ...*CA) ([]byte, error) {
	bundles := make(map[string]*spiffebundle.Bundle)
	for _, ca := range cas {
		if ca.TrustDomain == "" {
			return nil, fmt.Errorf("certs: CA %q has no SPIFFE trust domain", ca.Cert.Subject.CommonName)
		}
		b := bundles[ca.TrustDomain]
		if b == nil {
			b = spiffebundle.New(spiffeid.RequireTrustDomainFromString(ca.TrustDomain))
			bundles[ca.TrustDomain] = b
		}
		b.AddX509Authority(ca.Cert)
	}
	out := make(map[string]json.RawMessage, len(bundles))
	for td, b := range bundles {
		js, err := b.Marshal()
		if err != nil {
			return nil, fmt.Errorf("certs: bundle of %q: %w", td, err)
		}
		out[td] = js
	}
	return json.MarshalIndent(map[string]any{"trust_domains": out}, "", "  ")
}

// WriteFileAtomic replaces path with data: it writes a temporary file in
// the same directory and renames it over path, so a reader sees the old
// content or the new one, never part of it.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

// serial returns a random positive serial number of at most 128 bits.
func serial() *big.Int {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	b[0] |= 1
	return new(big.Int).SetBytes(b)
}
