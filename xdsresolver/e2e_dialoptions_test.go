// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"crypto/tls"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdsresolver"

	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
)

// dialOnly returns a TestService client for target on a channel made with
// DialOptions(c, opts...) and nothing else, closed when the test ends.
func dialOnly(t *testing.T, c *client.Client, target string, opts ...xdsresolver.Option) testgrpc.TestServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(target, xdsresolver.DialOptions(c, opts...)...)
	if err != nil {
		t.Fatalf("grpc.NewClient(%q, DialOptions(c)...): %v", target, err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

// TestDialOptions_AloneMakesAChannel checks that DialOptions is all a
// channel needs: with no other dial option, an RPC to a cluster with mTLS
// from xDS is made over mTLS (the backend sees the client's SPIFFE ID),
// and one to a cluster without transport socket in plaintext.
func TestDialOptions_AloneMakesAChannel(t *testing.T) {
	ctx := testContext(t)
	e := newSecureEnv(t, 0)
	e.serveSecureAndPlain(t)
	for _, tc := range []struct{ target, server, user string }{
		{"xds:///svc", "secure", e.mesh.ID("client")},
		{"xds:///plain", "plain", ""},
	} {
		resp, err := unary(ctx, dialOnly(t, e.client, tc.target))
		if err != nil || resp.GetServerId() != tc.server || resp.GetUsername() != tc.user {
			t.Errorf("UnaryCall to %s = %v, %v; want answered by %s, which saw client %q", tc.target, resp, err, tc.server, tc.user)
		}
	}
}

// TestDialOptions_FallbackCredentials checks that WithFallbackCredentials
// replaces plaintext for a cluster without transport socket: with TLS
// fallback credentials trusting the mesh's CA, the RPC reaches a TLS
// backend that plaintext cannot reach.
func TestDialOptions_FallbackCredentials(t *testing.T) {
	ctx := testContext(t)
	e := newSecureEnv(t, 0)
	// gRPC checks the server's name against the channel's authority, "svc".
	leaf, err := e.mesh.CA.Issue(certs.Options{DNSNames: []string{"svc"}})
	if err != nil {
		t.Fatal(err)
	}
	tlsBackend, err := testutil.StartBackend(testutil.BackendOptions{ID: "tls", TLS: &tls.Config{Certificates: []tls.Certificate{leaf.TLS}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tlsBackend.Stop)
	if err := e.ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{tlsBackend.Port}})); err != nil {
		t.Fatal(err)
	}
	if _, err := unary(ctx, dialOnly(t, e.client, "xds:///svc")); err == nil {
		t.Fatal("UnaryCall in plaintext to a TLS backend succeeded; want an error")
	}
	fallback := credentials.NewTLS(&tls.Config{RootCAs: certs.Pool(e.mesh.CA)})
	resp, err := unary(ctx, dialOnly(t, e.client, "xds:///svc", xdsresolver.WithFallbackCredentials(fallback)))
	if err != nil || resp.GetServerId() != "tls" {
		t.Fatalf("UnaryCall with TLS fallback credentials = %v, %v; want answered by tls", resp, err)
	}
}

// TestResolver_LogsThroughClientLogger checks that a resolver given no
// logger logs through its client's: the warning that fault injection
// needs DialOptions, once per channel, reaches the handler given to
// client.WithLogger.
func TestResolver_LogsThroughClientLogger(t *testing.T) {
	ctx := testContext(t)
	a := startBackend(t, "A")
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	const warning = "fault injection needs xdsresolver.DialOptions"
	h := &countingHandler{counts: map[string]int{}, keys: []string{warning}}
	c, err := client.New(cfg, client.WithLogger(slog.New(h)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r := chain(a)
	r.Listeners[0] = withFault(t, r.Listeners[0], &v3faultpb.HTTPFault{}) // a filter that does nothing
	if err := ms.Update("", r); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(xdsresolver.NewBuilder(c)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	if err := waitForServer(ctx, testgrpc.NewTestServiceClient(cc), "A"); err != nil {
		t.Fatal(err)
	}
	if got := h.count(warning); got != 1 {
		t.Errorf("the client's logger got %d warnings %q; want 1", got, warning)
	}
}
