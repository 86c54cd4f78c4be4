// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdshttp"
)

// TestNewServer_Errors checks NewServer's refusals: no client, and a
// bootstrap without server_listener_resource_name_template (gRFC A36
// has no default); and Serve's of a listener that is not TCP.
func TestNewServer_Errors(t *testing.T) {
	if _, err := xdshttp.NewServer(nil, nil); err == nil {
		t.Error("NewServer(nil client) succeeded")
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := xdshttp.NewServer(c, nil); err == nil || !strings.Contains(err.Error(), "server_listener_resource_name_template") {
		t.Errorf("NewServer without a template: %v, want an error naming it", err)
	}

	e := newSrvEnv(t)
	srv, err := xdshttp.NewServer(e.c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	unix, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	defer unix.Close()
	if err := srv.Serve(unix); err == nil || !strings.Contains(err.Error(), "*net.TCPAddr") {
		t.Errorf("Serve(unix listener) = %v, want an error about the address", err)
	}
}

// TestServer_FallbackTLS checks that a chain without a
// DownstreamTlsContext gets the TLS of WithHTTPServer's TLSConfig (gRFC
// A29's fallback credentials), with h2 offered.
func TestServer_FallbackTLS(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil, xdshttp.WithHTTPServer(&http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{e.mesh.Server.TLS}}}))
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.Pool(e.mesh.CA), ServerName: "localhost"}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + ts.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 || resp.TLS == nil {
		t.Errorf("GET over the fallback TLS: %d %s, TLS %v; want 200 over h2", resp.StatusCode, resp.Proto, resp.TLS != nil)
	}
}
