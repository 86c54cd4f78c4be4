// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/tls/certprovider"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/testutil/leakcheck"
)

const (
	// defaultTestTimeout bounds waits for what must happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout bounds waits for what must not happen.
	defaultTestShortTimeout = 10 * time.Millisecond
)

// systemCA is the CA the system roots of this test binary trust: TestMain
// points SSL_CERT_FILE at it before anything loads them (gRFC A82 tests).
var systemCA *certs.CA

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "credentials-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if systemCA, err = certs.NewCA("system root for tests"); err == nil {
		f := filepath.Join(dir, "roots.pem")
		if err = systemCA.WriteFile(f); err == nil {
			// crypto/x509 reads the system roots once, on first use, from
			// these variables on Linux (and other Unix systems).
			os.Setenv("SSL_CERT_FILE", f)
			os.Setenv("SSL_CERT_DIR", dir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer os.RemoveAll(dir) // not run: VerifyTestMain exits; the OS cleans temp
	leakcheck.VerifyTestMain(m)
}

// pki is the certificates of the tests: two SPIFFE trust domains,
// a.example (the servers' and the client's) and b.example.
type pki struct {
	caA, caB *certs.CA
	server   *certs.Leaf // spiffe://a.example/backend, DNS backend.a.example, IP 127.0.0.1
	client   *certs.Leaf // spiffe://a.example/client
	clientB  *certs.Leaf // spiffe://b.example/client
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{caA: newCA(t, "spiffe://a.example"), caB: newCA(t, "spiffe://b.example")}
	p.server = issue(t, p.caA, certs.Options{SPIFFEID: "spiffe://a.example/backend", DNSNames: []string{"backend.a.example"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}})
	p.client = issue(t, p.caA, certs.Options{SPIFFEID: "spiffe://a.example/client"})
	p.clientB = issue(t, p.caB, certs.Options{SPIFFEID: "spiffe://b.example/client"})
	return p
}

func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *certs.CA, o certs.Options) *certs.Leaf {
	t.Helper()
	l, err := ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serverTLS is the TLS config of a backend that presents cert and, when
// clientCAs is not nil, requires a client certificate they verify.
func serverTLS(cert *certs.Leaf, clientCAs ...*certs.CA) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	if len(clientCAs) > 0 {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = certs.Pool(clientCAs...)
	}
	return cfg
}

// startBackend starts a testutil backend, stopped at the end of the test.
func startBackend(t *testing.T, cfg *tls.Config) *testutil.Backend {
	t.Helper()
	b, err := testutil.StartBackend(testutil.BackendOptions{TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// staticProvider is a certificate provider with fixed key material; a nil
// km has none, and KeyMaterial waits for the context.
type staticProvider struct{ km *certprovider.KeyMaterial }

func (p staticProvider) KeyMaterial(ctx context.Context) (*certprovider.KeyMaterial, error) {
	if p.km == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return p.km, nil
}

func (staticProvider) Close() {}

func rootsOf(cas ...*certs.CA) certprovider.Provider {
	return staticProvider{&certprovider.KeyMaterial{Roots: certs.Pool(cas...)}}
}

func identityOf(l *certs.Leaf) certprovider.Provider {
	return staticProvider{&certprovider.KeyMaterial{Certs: []tls.Certificate{l.TLS}}}
}

// bundlesOf returns a root provider with a SPIFFE trust bundle map in
// which each CA is the authority of its trust domain.
func bundlesOf(cas ...*certs.CA) certprovider.Provider {
	m := make(map[string]*spiffebundle.Bundle)
	for _, ca := range cas {
		td := spiffeid.RequireTrustDomainFromString(ca.TrustDomain)
		m[ca.TrustDomain] = spiffebundle.FromX509Authorities(td, []*x509.Certificate{ca.Cert})
	}
	return staticProvider{&certprovider.KeyMaterial{SPIFFEBundleMap: m}}
}

// dial returns a ClientConn with creds to a manual resolver's single
// address addr, which carries hi (nil: none), closed at the end of the
// test.
func dial(t *testing.T, addr string, hi *handshake.ClientHandshakeInfo, creds credentials.TransportCredentials) testgrpc.TestServiceClient {
	t.Helper()
	r := manual.NewBuilderWithScheme("test")
	a := grpcresolver.Address{Addr: addr}
	if hi != nil {
		a = handshake.SetClientHandshakeInfo(a, hi)
	}
	r.InitialState(grpcresolver.State{Addresses: []grpcresolver.Address{a}})
	cc, err := grpc.NewClient(r.Scheme()+":///backend", grpc.WithResolvers(r), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}
