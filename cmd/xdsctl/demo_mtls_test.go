// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver"
)

// TestDemo_MTLS checks demo --mtls end to end: its bootstrap names the
// certificates it made in certificate_providers, its Clusters carry an
// UpstreamTlsContext, and its backends answer RPCs over mutual TLS from a
// client using that bootstrap with xDS credentials, seeing the client's
// SPIFFE ID; a channel without xDS credentials (plaintext) is refused;
// the backends' TLS comes from their Listeners' DownstreamTlsContext (the
// instance "demo", client certificates required); the certificates are
// removed when the demo stops.
func TestDemo_MTLS(t *testing.T) {
	ctx := testContext(t)
	bootstrapFile := filepath.Join(t.TempDir(), "b.json")
	demo := startRun(t, "demo", "--mtls", "--base-port", "0", "--bootstrap-out", bootstrapFile, "--interval", "1h")
	out := waitForOutput(ctx, t, &demo.stdout, "the bootstrap and the mTLS cluster", containsAll(
		"GRPC_XDS_BOOTSTRAP="+bootstrapFile+" go run ./examples/mtls",
		`mTLS (roots "demo", identity "demo", SANs exact "spiffe://demo.example/backend")`,
	))
	certDir := regexp.MustCompile(`mTLS: certificates in (\S+);`).FindStringSubmatch(out)
	if certDir == nil {
		t.Fatalf("the demo does not say where its certificates are:\n%s", out)
	}

	raw, err := os.ReadFile(bootstrapFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.CertificateProviders["demo"]; p.PluginName != "file_watcher" || !strings.Contains(string(p.Config), certDir[1]) {
		t.Fatalf("certificate_providers[demo] = %+v, want a file_watcher of files in %s", p, certDir[1])
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dial := func(creds grpccreds.TransportCredentials) testgrpc.TestServiceClient {
		cc, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(xdsresolver.NewBuilder(c)), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return testgrpc.NewTestServiceClient(cc)
	}
	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := dial(creds).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil {
		t.Fatalf("UnaryCall over xDS mTLS: %v", err)
	}
	if !strings.HasPrefix(resp.GetServerId(), "backend-") || resp.GetUsername() != "spiffe://demo.example/client" {
		t.Errorf("answered by %q, which saw client %q; want a backend-N that saw spiffe://demo.example/client", resp.GetServerId(), resp.GetUsername())
	}
	if _, err := dial(insecure.NewCredentials()).UnaryCall(ctx, &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("UnaryCall in plaintext = %v, want UNAVAILABLE: the backends require TLS", err)
	}
	port := regexp.MustCompile(`on 127\.0\.0\.1 ports \d+, \d+, \d+, \d+ and (\d+)[.:]`).FindStringSubmatch(out)
	if port == nil {
		t.Fatalf("the demo does not list its ports:\n%s", out)
	}
	js := demoBackendListener(ctx, t, bootstrapFile, "canary", "127.0.0.1:"+port[1])
	for _, want := range []string{
		`"tls_certificate_provider_instance":{"instance_name":"demo"}`,
		`"ca_certificate_provider_instance":{"instance_name":"demo"}`,
		`"require_client_certificate":true`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("the canary's Listener lacks %s: its TLS is not the DownstreamTlsContext of the demo's instance:\n%s", want, js)
		}
	}

	if code := demo.stop(t); code != exitOK {
		t.Fatalf("demo --mtls after Ctrl-C = %d; stderr: %s", code, demo.stderr.String())
	}
	if _, err := os.Stat(certDir[1]); !os.IsNotExist(err) {
		t.Errorf("the certificate directory %s is still there after the demo stopped (%v)", certDir[1], err)
	}
}

// TestDemo_Backends checks that the plaintext demo's backends are
// xDS-enabled servers fed by its management server: each backend's node
// is served its server-side Listener, without TLS, which status shows
// ACKED; they answer TestService and helloworld.Greeter RPCs through the
// demo's bootstrap, naming themselves; and a taken port fails the demo
// with an error naming it.
func TestDemo_Backends(t *testing.T) {
	ctx := testContext(t)
	bootstrapFile := filepath.Join(t.TempDir(), "b.json")
	demo := startRun(t, "demo", "--base-port", "0", "--bootstrap-out", bootstrapFile, "--interval", "1h")
	out := waitForOutput(ctx, t, &demo.stdout, "the bootstrap", containsAll("GRPC_XDS_BOOTSTRAP="+bootstrapFile+" go run ./examples/watch"))
	cfg, err := loadBootstrap(bootstrapFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(xdsresolver.NewBuilder(c)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil || !strings.HasPrefix(resp.GetServerId(), "backend-") {
		t.Fatalf("UnaryCall = %v, %v; want an answer from a backend-N", resp, err)
	}
	var hdr metadata.MD
	reply := new(wrapperspb.StringValue)
	if err := cc.Invoke(ctx, demoGreeterMethod, wrapperspb.String("test"), reply, grpc.Header(&hdr)); err != nil {
		t.Fatalf("SayHello: %v", err)
	}
	if id := hdr.Get("server-id"); len(id) != 1 || reply.GetValue() != "Hello test, from "+id[0] {
		t.Errorf("SayHello = %q, header server-id %q; want \"Hello test, from\" the backend it names", reply.GetValue(), id)
	}

	port := regexp.MustCompile(`on 127\.0\.0\.1 ports (\d+),`).FindStringSubmatch(out)
	if port == nil {
		t.Fatalf("the demo does not list its ports:\n%s", out)
	}
	if js := demoBackendListener(ctx, t, bootstrapFile, "backend-1", "127.0.0.1:"+port[1]); strings.Contains(js, "transport_socket") {
		t.Errorf("the plaintext demo's backend Listener has a transport socket:\n%s", js)
	}

	// A second demo on the first one's ports.
	code, _, stderr := runSync(ctx, "demo", "--base-port", port[1], "--duration", "1s")
	if code != exitFailure || !strings.Contains(stderr, "127.0.0.1:"+port[1]+": the port is in use") {
		t.Errorf("a demo on taken ports = %d, stderr %q; want 1 and the port named", code, stderr)
	}
	if code := demo.stop(t); code != exitOK {
		t.Fatalf("demo after Ctrl-C = %d; stderr: %s", code, demo.stderr.String())
	}
}

// demoBackendListener checks, with status, that the demo serves the node
// of its backend id the ACKED server-side Listener of addr, and returns
// the Listener as status -o json prints it. It reads the demo's bootstrap
// from bootstrapFile (with its certificate providers, which a Listener
// with TLS needs) and changes its node ID.
func demoBackendListener(ctx context.Context, t *testing.T, bootstrapFile, id, addr string) string {
	t.Helper()
	raw, err := os.ReadFile(bootstrapFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	node := "xdsctl-demo-" + id
	doc["node"] = map[string]string{"id": node}
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	backendBootstrap := filepath.Join(t.TempDir(), id+".json")
	if err := os.WriteFile(backendBootstrap, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	name := "grpc/server?xds.resource.listening_address=" + addr
	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", backendBootstrap, "--wait", "5s", "listener/*")
	if got, want := tableRows(t, stdout), [][]string{{"Listener", name, "ACKED"}}; code != exitOK || len(got) != 1 || !equalRows([][]string{got[0][:3]}, want) {
		t.Fatalf("status of node %s = %d, stderr %q, printed:\n%s\nwant rows %q", node, code, stderr, stdout, want)
	}
	code, stdout, stderr = runSync(ctx, "status", "--bootstrap", backendBootstrap, "-o", "json", "listener/"+name)
	if code != exitOK {
		t.Fatalf("status -o json of node %s = %d, stderr %q", node, code, stderr)
	}
	return stdout
}
