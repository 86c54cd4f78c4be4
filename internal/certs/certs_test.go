// SPDX-License-Identifier: Apache-2.0

package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/proxyless/xds/internal/certs"
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

// TestMesh checks that a mesh's server and client verify each other over
// a real TLS connection made from its files.
func TestMesh(t *testing.T) {
	m, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := tls.LoadX509KeyPair(m.ClientCertFile, m.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(m.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	srv, cli := net.Pipe()
	errc := make(chan error, 1)
	go func() {
		c := tls.Server(srv, m.ServerTLS())
		defer c.Close()
		errc <- c.Handshake()
	}()
	c := tls.Client(cli, &tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{clientCert}})
	defer c.Close()
	if err := c.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	if got := c.ConnectionState().PeerCertificates[0].URIs[0].String(); got != m.ID("backend") {
		t.Errorf("server SPIFFE ID %s, want %s", got, m.ID("backend"))
	}
	if err := m.IssueClient(m.ID("client-v2")); err != nil {
		t.Fatal(err)
	}
	if l, err := tls.LoadX509KeyPair(m.ClientCertFile, m.ClientKeyFile); err != nil || l.Leaf.URIs[0].String() != m.ID("client-v2") {
		t.Errorf("after IssueClient, the client files hold %v, %v; want client-v2", l.Leaf, err)
	}
}
