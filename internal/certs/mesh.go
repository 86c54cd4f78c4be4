// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Mesh is the certificates of a small SPIFFE mesh, written to a
// directory: a CA of one trust domain, a server (backend) certificate and
// a client certificate it issued, the CA's PEM file and its SPIFFE trust
// bundle map. It is what an xDS mTLS test or demo needs: the files for the
// client's file_watcher certificate provider, and the TLS config of the
// backends. Its fields are set by NewMesh; IssueClient replaces Client and
// its files.
type Mesh struct {
	// Dir is the directory of the files.
	Dir string
	// TrustDomain is the trust domain, "example.org".
	TrustDomain string
	// CA issued Server and Client.
	CA *CA
	// Server is spiffe://<trust domain>/backend, with the DNS name
	// "localhost" and the IP 127.0.0.1; Client is
	// spiffe://<trust domain>/client.
	Server, Client *Leaf

	// CAFile is CA's certificate (ca_certificate_file); BundleMapFile its
	// SPIFFE trust bundle map (spiffe_trust_bundle_map_file, gRFC A87).
	CAFile, BundleMapFile string
	// ServerCertFile and ServerKeyFile, in Dir/server, are Server's chain
	// and key.
	ServerCertFile, ServerKeyFile string
	// ClientCertFile and ClientKeyFile, in Dir/client, are Client's
	// (certificate_file and private_key_file: one directory, as gRPC
	// requires).
	ClientCertFile, ClientKeyFile string
}

// NewMesh makes the certificates of trustDomain ("example.org") and
// writes them into dir, which must exist.
func NewMesh(dir, trustDomain string) (*Mesh, error) {
	ca, err := NewCA("spiffe://" + trustDomain)
	if err != nil {
		return nil, err
	}
	m := &Mesh{
		Dir: dir, TrustDomain: ca.TrustDomain, CA: ca,
		CAFile:         filepath.Join(dir, "ca.pem"),
		BundleMapFile:  filepath.Join(dir, "spiffe-bundle-map.json"),
		ServerCertFile: filepath.Join(dir, "server", "cert.pem"),
		ServerKeyFile:  filepath.Join(dir, "server", "key.pem"),
		ClientCertFile: filepath.Join(dir, "client", "cert.pem"),
		ClientKeyFile:  filepath.Join(dir, "client", "key.pem"),
	}
	for _, d := range []string{"server", "client"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("certs: %w", err)
		}
	}
	if m.Server, err = ca.Issue(Options{SPIFFEID: m.ID("backend"), DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}); err != nil {
		return nil, err
	}
	if err := m.Server.WriteFiles(m.ServerCertFile, m.ServerKeyFile); err != nil {
		return nil, err
	}
	if err := m.IssueClient(m.ID("client")); err != nil {
		return nil, err
	}
	if err := ca.WriteFile(m.CAFile); err != nil {
		return nil, err
	}
	bm, err := BundleMap(ca)
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(m.BundleMapFile, bm); err != nil {
		return nil, err
	}
	return m, nil
}

// ID returns the SPIFFE ID of path in the mesh's trust domain:
// ID("backend") is "spiffe://<trust domain>/backend".
func (m *Mesh) ID(path string) string { return "spiffe://" + m.TrustDomain + "/" + path }

// IssueClient issues a new client certificate with the SPIFFE ID
// spiffeID and writes it over ClientCertFile and ClientKeyFile (a
// rotation); m.Client becomes it. Not safe for concurrent use.
func (m *Mesh) IssueClient(spiffeID string) error {
	l, err := m.CA.Issue(Options{SPIFFEID: spiffeID})
	if err != nil {
		return err
	}
	if err := l.WriteFiles(m.ClientCertFile, m.ClientKeyFile); err != nil {
		return err
	}
	m.Client = l
	return nil
}

// ServerTLS returns the TLS config of a mesh backend: it presents Server
// and requires a client certificate issued by CA (mutual TLS).
func (m *Mesh) ServerTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{m.Server.TLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    Pool(m.CA),
	}
}
