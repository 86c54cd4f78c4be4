// SPDX-License-Identifier: Apache-2.0

package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestCerts issues a SPIFFE leaf, verifies it against its CA as a TLS
// client would, writes its files and reads them back, and parses the
// bundle map with go-spiffe.
func TestCerts(t *testing.T) {
	ca, err := certs.NewCA("spiffe://example.org")
	if err != nil {
		t.Fatal(err)
	}
	if ca.TrustDomain != "example.org" {
		t.Errorf("TrustDomain = %q, want example.org", ca.TrustDomain)
	}
	leaf, err := ca.Issue(certs.Options{SPIFFEID: "spiffe://example.org/backend", DNSNames: []string{"backend.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: certs.Pool(ca), DNSName: "backend.example.org", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if id, err := x509svid.IDFromCert(leaf.Cert); err != nil || id.String() != "spiffe://example.org/backend" {
		t.Errorf("SPIFFE ID = %v, %v; want spiffe://example.org/backend", id, err)
	}

	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	if err := leaf.WriteFiles(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("LoadX509KeyPair of the written files: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d files, want 2 (no temporary file left)", len(entries))
	}

	other, err := certs.NewCA("spiffe://other.org")
	if err != nil {
		t.Fatal(err)
	}
	js, err := certs.BundleMap(ca, other)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		TrustDomains map[string]json.RawMessage `json:"trust_domains"`
	}
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.TrustDomains) != 2 {
		t.Fatalf("bundle map has %d trust domains, want 2:\n%s", len(m.TrustDomains), js)
	}
	b, err := spiffebundle.Parse(spiffeid.RequireTrustDomainFromString("example.org"), m.TrustDomains["example.org"])
	if err != nil {
		t.Fatal(err)
	}
	if !b.HasX509Authority(ca.Cert) {
		t.Error("the bundle of example.org lacks its CA")
	}

	plain, err := certs.NewCA("plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := certs.BundleMap(plain); err == nil {
		t.Error("BundleMap of a CA without trust domain succeeded")
	}
	if _, err := certs.NewCA("spiffe://bad domain"); err == nil {
		t.Error("NewCA with an invalid trust domain succeeded")
	}
	expired, err := ca.Issue(certs.Options{Validity: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := expired.Cert.Verify(x509.VerifyOptions{Roots: certs.Pool(ca)}); err == nil {
		t.Error("an expired certificate verified")
	}
}
