// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"

	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

const (
	// defaultDemoBasePort is the default of demo --base-port: the
	// endpoints are 127.0.0.1:50051 to 50054 and 50061.
	defaultDemoBasePort = 50051
	// demoTrustDomain is the SPIFFE trust domain of demo --mtls.
	demoTrustDomain = "demo.example"
	// demoInstance is the certificate provider instance of demo --mtls in
	// the bootstrap, which the Clusters name.
	demoInstance = "demo"
)

// demoPorts are the ports of the demo's endpoints: the two first
// endpoints of eds-svc, the two ports between which the third one moves,
// and the endpoint of eds-svc-canary.
type demoPorts struct{ a, b, c, d, canary uint32 }

// demoBackends are the gRPC servers on the demo's endpoints: each serves
// grpc.health.v1.Health and grpc.testing.TestService, whose UnaryCall
// answers with the backend's name (server_id: "backend-1" to "backend-4",
// "canary"), its address (hostname) and the SPIFFE ID of the client's
// certificate (username), as testutil.Backend does.
type demoBackends struct {
	ports demoPorts
	all   []*testutil.Backend
}

// startDemoBackends starts a backend on each demo port: base, base+1,
// base+2, base+3 and base+10, or free ports when base is 0. With tlsCfg,
// they serve TLS with it (demo --mtls: they require and verify client
// certificates). It fails, naming the port, when one is taken.
func startDemoBackends(base int, tlsCfg *tls.Config) (*demoBackends, error) {
	type slot struct {
		port *uint32
		id   string
		off  int
	}
	db := &demoBackends{}
	slots := []slot{{&db.ports.a, "backend-1", 0}, {&db.ports.b, "backend-2", 1}, {&db.ports.c, "backend-3", 2}, {&db.ports.d, "backend-4", 3}, {&db.ports.canary, "canary", 10}}
	for _, s := range slots {
		addr := "127.0.0.1:0"
		if base != 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", base+s.off)
		}
		b, err := testutil.StartBackend(testutil.BackendOptions{Address: addr, ID: s.id, TLS: tlsCfg})
		if err != nil {
			db.stop()
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("serving the demo's endpoint %s: the port is in use (another demo?); --base-port chooses other ports, 0 free ones", addr)
			}
			return nil, fmt.Errorf("serving the demo's endpoint %s: %w", addr, err)
		}
		*s.port = b.Port
		db.all = append(db.all, b)
	}
	return db, nil
}

// stop stops every backend.
func (db *demoBackends) stop() {
	for _, b := range db.all {
		b.Stop()
	}
}

// demoMTLS is the certificates of demo --mtls, in a temporary directory
// that close removes.
type demoMTLS struct {
	mesh *certs.Mesh
}

// newDemoMTLS makes the mesh's certificates in a new temporary directory.
func newDemoMTLS() (*demoMTLS, error) {
	dir, err := os.MkdirTemp("", "xdsctl-demo-mtls-")
	if err != nil {
		return nil, fmt.Errorf("demo --mtls: %w", err)
	}
	mesh, err := certs.NewMesh(dir, demoTrustDomain)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("demo --mtls: making certificates: %w", err)
	}
	return &demoMTLS{mesh: mesh}, nil
}

// close removes the certificates.
func (m *demoMTLS) close() { os.RemoveAll(m.mesh.Dir) }

// bootstrap returns bootstrapJSON with the certificate provider instance
// of the demo: a file_watcher of the client certificate and the CA.
func (m *demoMTLS) bootstrap(bootstrapJSON []byte) ([]byte, error) {
	return testutil.WithCertificateProviders(bootstrapJSON, map[string]testutil.FileWatcher{
		demoInstance: {CertificateFile: m.mesh.ClientCertFile, PrivateKeyFile: m.mesh.ClientKeyFile, CACertificateFile: m.mesh.CAFile},
	})
}

// tlsOptions are the UpstreamTlsContext of the demo's Clusters: roots and
// client certificate from the demo instance, and the backends' SPIFFE ID
// as the only accepted server identity.
func (m *demoMTLS) tlsOptions() testutil.UpstreamTLSOptions {
	return testutil.UpstreamTLSOptions{
		RootInstance: demoInstance, IdentityInstance: demoInstance,
		SubjectAltNames: []*v3matcherpb.StringMatcher{testutil.ExactSAN(m.mesh.ID("backend"))},
	}
}
