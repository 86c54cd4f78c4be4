// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/proxyless/xds/testutil"
)

// TestStatus_IstioInboundListener checks that status ACKs the inbound
// Listener Istio's gRPC generator serves a proxyless server,
// which it NACKed as a server-side Listener before servers were
// supported, with a bootstrap that has Istio's certificate provider
// instance "default"; without it, the Listener is NACKed naming the
// instance, as an xDS-enabled server's client would.
func TestStatus_IstioInboundListener(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	const addr = "10.0.0.7:8080"
	name := testutil.IstioInboundListenerPrefix + addr
	ms.Update("", testutil.Resources{Version: "1", Listeners: []*v3listenerpb.Listener{
		testutil.IstioInboundListener(addr, testutil.IstioInboundOptions{Allow: []string{"spiffe://cluster.local/ns/default/sa/client"}}),
	}})
	raw, err := testutil.WithCertificateProviders(ms.Bootstrap(testutil.BootstrapOptions{}), map[string]testutil.FileWatcher{
		"default": {CertificateFile: "/var/run/certs/cert.pem", PrivateKeyFile: "/var/run/certs/key.pem", CACertificateFile: "/var/run/certs/root.pem"},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", path, "--wait", "10s", "lds/"+name)
	if code != exitOK || stderr != "" {
		t.Fatalf("status = %d, stderr %q, stdout:\n%s\nwant 0", code, stderr, stdout)
	}
	if rows := tableRows(t, stdout); len(rows) != 1 || !slices.Equal(rows[0], []string{"Listener", name, "ACKED", "1", "-"}) {
		t.Errorf("status rows = %q, want the Listener ACKED", rows)
	}

	code, stdout, _ = runSync(ctx, "status", "--server", ms.Address(), "--wait", "10s", "lds/"+name)
	if code != exitNACKed {
		t.Fatalf("status without the instance = %d, stdout:\n%s\nwant %d (NACKED)", code, stdout, exitNACKed)
	}
}
