// SPDX-License-Identifier: Apache-2.0

// Package certs makes real X.509 certificates for tests of xDS security
// (gRFC A29, A87): a certificate authority, leaf certificates with SPIFFE
// IDs and other subject alternative names, their PEM files, SPIFFE trust
// bundle maps and the files of a small mesh. It is the certificate maker
// of xdsctl demo --mtls (package internal/certs, whose doc has the
// details), under the names tests use. Everything is generated with
// crypto/x509 and ECDSA P-256 keys at run time; nothing is checked in, and
// the keys are not protected in any way.
package certs

import (
	"crypto/x509"

	icerts "github.com/proxyless/xds/internal/certs"
)

// DefaultValidity is internal/certs.DefaultValidity.
const DefaultValidity = icerts.DefaultValidity

// CA is internal/certs.CA.
type CA = icerts.CA

// Leaf is internal/certs.Leaf.
type Leaf = icerts.Leaf

// Mesh is internal/certs.Mesh.
type Mesh = icerts.Mesh

// Options is internal/certs.Options.
type Options = icerts.Options

// BundleMap is internal/certs.BundleMap.
func BundleMap(cas ...*CA) ([]byte, error) {
	return icerts.BundleMap(cas...)
}

// NewCA is internal/certs.NewCA.
func NewCA(name string) (*CA, error) {
	return icerts.NewCA(name)
}

// NewMesh is internal/certs.NewMesh.
func NewMesh(dir, trustDomain string) (*Mesh, error) {
	return icerts.NewMesh(dir, trustDomain)
}

// Pool is internal/certs.Pool.
func Pool(cas ...*CA) *x509.CertPool {
	return icerts.Pool(cas...)
}

// WriteFileAtomic is internal/certs.WriteFileAtomic.
func WriteFileAtomic(path string, data []byte) error {
	return icerts.WriteFileAtomic(path, data)
}
