// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver"

	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// End-to-end tests of xDS security (gRFC A29, A87; R-25): the testutil
// management server sends Clusters with an UpstreamTlsContext, the
// client's bootstrap has a file_watcher instance "mesh" over the files of
// a certs.Mesh, and the backends require and verify client certificates.

// secureEnv is an env whose bootstrap has the file_watcher instance
// "mesh" (the mesh's client certificate and CA).
type secureEnv struct {
	*env
	mesh *certs.Mesh
}

func newSecureEnv(t *testing.T, refresh time.Duration, copts ...client.Option) *secureEnv {
	t.Helper()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	raw, err := testutil.WithCertificateProviders(ms.Bootstrap(testutil.BootstrapOptions{}), map[string]testutil.FileWatcher{
		"mesh": {CertificateFile: mesh.ClientCertFile, PrivateKeyFile: mesh.ClientKeyFile, CACertificateFile: mesh.CAFile, RefreshInterval: refresh},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, append([]client.Option{client.WithLogger(testLogger(t))}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &secureEnv{env: &env{ms: ms, client: c}, mesh: mesh}
}

// dialSecure returns a TestService client for target on a channel with
// xDS credentials (plaintext fallback) and b, closed when the test ends.
func (e *secureEnv) dialSecure(t *testing.T, target string, b resolver.Builder) testgrpc.TestServiceClient {
	t.Helper()
	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(target, grpc.WithResolvers(b), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

// startMeshBackend starts a backend that requires a client certificate of
// the mesh.
func (e *secureEnv) startMeshBackend(t *testing.T, id string) *testutil.Backend {
	t.Helper()
	b, err := testutil.StartBackend(testutil.BackendOptions{ID: id, TLS: e.mesh.ServerTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// tlsChain is the chain of the listener "svc" to bs, whose cluster uses
// the instance "mesh" for roots and identity and accepts servers whose
// SANs sans match.
func tlsChain(bs []*testutil.Backend, sans ...*v3matcherpb.StringMatcher) testutil.Resources {
	ports := make([]uint32, len(bs))
	for i, b := range bs {
		ports[i] = b.Port
	}
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: ports})
	testutil.WithUpstreamTLS(r.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh", SubjectAltNames: sans})
	return r
}

// unary makes one RPC.
func unary(ctx context.Context, tc testgrpc.TestServiceClient) (*testgrpc.SimpleResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
}

// isUnavailableWith reports whether err is UNAVAILABLE with a message
// containing want, as is or quoted (grpc quotes a connection error).
func isUnavailableWith(err error, want string) bool {
	msg := status.Convert(err).Message()
	return status.Code(err) == codes.Unavailable && (strings.Contains(msg, want) || strings.Contains(msg, strings.ReplaceAll(want, `"`, `\"`)))
}

// TestSecurity_MTLS checks an RPC over mTLS configured by xDS: the client
// verifies the server against the mesh's CA and its SPIFFE ID against
// match_subject_alt_names, and the backend sees the client's SPIFFE ID.
func TestSecurity_MTLS(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1 := e.startMeshBackend(t, "b1")
	if err := e.ms.Update("", tlsChain([]*testutil.Backend{b1}, testutil.ExactSAN(e.mesh.ID("backend")))); err != nil {
		t.Fatal(err)
	}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t))))
	resp, err := unary(testContext(t), tc)
	if err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if resp.GetServerId() != "b1" || resp.GetUsername() != e.mesh.ID("client") {
		t.Errorf("answered by %q, which saw client %q; want b1 and %s", resp.GetServerId(), resp.GetUsername(), e.mesh.ID("client"))
	}
}

// TestSecurity_SANMismatch checks that a cluster whose
// match_subject_alt_names wants another server identity fails its RPCs
// with UNAVAILABLE saying why.
func TestSecurity_SANMismatch(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1 := e.startMeshBackend(t, "b1")
	if err := e.ms.Update("", tlsChain([]*testutil.Backend{b1}, testutil.ExactSAN(e.mesh.ID("other")))); err != nil {
		t.Fatal(err)
	}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client))
	_, err := unary(testContext(t), tc)
	if want := `cluster "cluster-svc": the server certificate's SANs`; !isUnavailableWith(err, want) || !strings.Contains(err.Error(), "match none of match_subject_alt_names") {
		t.Fatalf("UnaryCall = %v, want UNAVAILABLE containing %q and saying no SAN matched", err, want)
	}
}

// TestSecurity_ConfigChange checks that a change of a cluster's security
// config re-creates its connections: RPCs that succeeded fail once the
// SAN matcher wants another identity, and succeed again when it is put
// back. (A connection kept across the change would keep serving them.)
func TestSecurity_ConfigChange(t *testing.T) {
	ctx := testContext(t)
	e := newSecureEnv(t, 0)
	b1 := e.startMeshBackend(t, "b1")
	good, bad := testutil.ExactSAN(e.mesh.ID("backend")), testutil.ExactSAN(e.mesh.ID("other"))
	if err := e.ms.Update("", tlsChain([]*testutil.Backend{b1}, good)); err != nil {
		t.Fatal(err)
	}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client))
	if _, err := unary(ctx, tc); err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if err := e.ms.Update("", tlsChain([]*testutil.Backend{b1}, bad)); err != nil {
		t.Fatal(err)
	}
	if err := waitForRPC(ctx, tc, func(_ *testgrpc.SimpleResponse, err error) bool {
		return isUnavailableWith(err, "match none of match_subject_alt_names")
	}); err != nil {
		t.Fatalf("after the SAN matcher changed: %v", err)
	}
	if err := e.ms.Update("", tlsChain([]*testutil.Backend{b1}, good)); err != nil {
		t.Fatal(err)
	}
	if err := waitForRPC(ctx, tc, func(_ *testgrpc.SimpleResponse, err error) bool { return err == nil }); err != nil {
		t.Fatalf("after the SAN matcher was put back: %v", err)
	}
}

// waitForRPC makes RPCs until done accepts one's outcome, or ctx ends.
func waitForRPC(ctx context.Context, tc testgrpc.TestServiceClient, done func(*testgrpc.SimpleResponse, error) bool) error {
	var last string
	for ctx.Err() == nil {
		resp, err := unary(ctx, tc)
		if done(resp, err) {
			return nil
		}
		last = fmt.Sprintf("%v, %v", resp, err)
	}
	return fmt.Errorf("no RPC had the outcome wanted before the deadline; the last: %s", last)
}

// TestSecurity_Rotation checks that once the client's certificate files
// are replaced, new connections present the new certificate (the
// provider re-reads them every refresh_interval, 100 ms here), and that
// when the files disappear new connections still present the last good
// one. New connections are made by moving the cluster's endpoint from one
// backend to another.
func TestSecurity_Rotation(t *testing.T) {
	const refresh = 100 * time.Millisecond
	ctx := testContext(t)
	e := newSecureEnv(t, refresh)
	bs := []*testutil.Backend{e.startMeshBackend(t, "b1"), e.startMeshBackend(t, "b2")}
	if err := e.ms.Update("", tlsChain(bs[:1])); err != nil {
		t.Fatal(err)
	}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client))
	resp, err := unary(ctx, tc)
	if err != nil || resp.GetUsername() != e.mesh.ID("client") {
		t.Fatalf("UnaryCall = %v, %v; want one from %s", resp, err, e.mesh.ID("client"))
	}

	// flip moves the endpoint to the other backend, and returns the
	// client identity its new connection presented.
	i := 0
	flip := func() string {
		t.Helper()
		i++
		b := bs[i%2]
		if err := e.ms.Update("", tlsChain([]*testutil.Backend{b})); err != nil {
			t.Fatal(err)
		}
		var who string
		if err := waitForRPC(ctx, tc, func(resp *testgrpc.SimpleResponse, err error) bool {
			who = resp.GetUsername()
			return err == nil && resp.GetServerId() == b.ID
		}); err != nil {
			t.Fatalf("moving the endpoint to %s: %v", b.ID, err)
		}
		return who
	}

	v2 := e.mesh.ID("client-v2")
	if err := e.mesh.IssueClient(v2); err != nil {
		t.Fatal(err)
	}
	for who := flip(); who != v2; who = flip() {
		if ctx.Err() != nil {
			t.Fatalf("new connections still present %s", who)
		}
	}

	// The files disappear: new connections, for three refresh intervals
	// and more, still present v2.
	if err := os.Remove(e.mesh.ClientCertFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.mesh.ClientKeyFile); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 3*refresh; {
		if who := flip(); who != v2 {
			t.Fatalf("after the certificate files disappeared, a new connection presented %q, want the last good %s", who, v2)
		}
	}
}

// serveSecureAndPlain starts a mesh backend "secure" and a plaintext
// backend "plain", and serves the Listener "svc" to the first with mTLS
// and "plain" to the second without transport socket.
func (e *secureEnv) serveSecureAndPlain(t *testing.T) {
	t.Helper()
	secure := e.startMeshBackend(t, "secure")
	plain, err := testutil.StartBackend(testutil.BackendOptions{ID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)
	r := tlsChain([]*testutil.Backend{secure})
	p := testutil.Chain(testutil.ChainOptions{Listener: "plain", Ports: []uint32{plain.Port}})
	r.Listeners, r.Routes = append(r.Listeners, p.Listeners...), append(r.Routes, p.Routes...)
	r.Clusters, r.Endpoints = append(r.Clusters, p.Clusters...), append(r.Endpoints, p.Endpoints...)
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
}

// TestSecurity_Fallback checks that a cluster without transport socket
// uses the channel's fallback credentials (plaintext here), on the same
// Builder and client as a cluster with mTLS.
func TestSecurity_Fallback(t *testing.T) {
	ctx := testContext(t)
	e := newSecureEnv(t, 0)
	e.serveSecureAndPlain(t)
	b := xdsresolver.NewBuilder(e.client)
	for _, tc := range []struct{ target, server, user string }{
		{"xds:///svc", "secure", e.mesh.ID("client")},
		{"xds:///plain", "plain", ""},
	} {
		resp, err := unary(ctx, e.dialSecure(t, tc.target, b))
		if err != nil || resp.GetServerId() != tc.server || resp.GetUsername() != tc.user {
			t.Errorf("UnaryCall to %s = %v, %v; want answered by %s, which saw client %q", tc.target, resp, err, tc.server, tc.user)
		}
	}
}

// TestSecurity_UnknownInstance checks that a Cluster naming a certificate
// provider instance the bootstrap lacks is NACKed with the instance named
// (gRFC A29, R-25.2), and that the RPCs routed to it fail with
// UNAVAILABLE naming it.
func TestSecurity_UnknownInstance(t *testing.T) {
	ctx := testContext(t)
	e := newSecureEnv(t, 0)
	b1 := e.startMeshBackend(t, "b1")
	r := tlsChain([]*testutil.Backend{b1})
	testutil.WithUpstreamTLS(r.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "nope", IdentityInstance: "mesh"})
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client))
	// The channel resolves (and the client subscribes) at the first RPC.
	const want = `root certificate provider instance "nope" is not in the bootstrap's certificate_providers`
	if _, err := unary(ctx, tc); !isUnavailableWith(err, want) {
		t.Fatalf("UnaryCall = %v, want UNAVAILABLE containing %q", err, want)
	}
	if _, err := e.ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		if r.Delta != nil {
			return r.Delta.GetTypeUrl() == resources.ClusterTypeURL && strings.Contains(r.Delta.GetErrorDetail().GetMessage(), want)
		}
		return r.Req.GetTypeUrl() == resources.ClusterTypeURL && strings.Contains(r.Req.GetErrorDetail().GetMessage(), want)
	}); err != nil {
		t.Fatalf("no NACK of the Cluster naming the instance: %v", err)
	}
}

// testContext returns a context that ends after defaultTestTimeout or
// with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}
