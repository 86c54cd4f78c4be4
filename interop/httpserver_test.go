// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdshttp"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// TestHTTPServer_GoControlPlane serves, from go-control-plane's snapshot
// cache, the Listener of this library's net/http server (xdshttp.Server):
// an mTLS chain (the bootstrap's file_watcher instance "mesh") with an
// RBAC filter allowing the mesh's client, and a RouteConfiguration over
// RDS whose /api/ route is non_forwarding_action and whose other paths
// forward to a cluster. Real net/http clients check Envoy's answers: the
// allowed client is served with its identity, another path gets 503, an
// intruder 403, a client without certificate fails the handshake; a new
// snapshot whose route denies everyone applies in place (403).
func TestHTTPServer_GoControlPlane(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	s := startGCPServer(t)
	js := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)
	raw, err := testutil.WithCertificateProviders([]byte(js), map[string]testutil.FileWatcher{
		"mesh": {CertificateFile: mesh.ServerCertFile, PrivateKeyFile: mesh.ServerKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = testutil.WithServerListenerTemplate(raw, serverTemplate); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{}, 1)
	srv, err := xdshttp.NewServer(newClientFromJSON(t, raw), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.TLS.PeerCertificates[0].URIs[0])
	}), xdshttp.WithServingModeCallback(func(_ net.Addr, mode xdshttp.ServingMode, _ error) {
		if mode == xdshttp.ServingModeServing {
			serving <- struct{}{}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve() = %v, want http.ErrServerClosed", err)
		}
	})
	addr := lis.Addr().String()

	routes := testutil.ServerRouteConfig("server-routes")
	vh := routes.VirtualHosts[0]
	vh.Routes[0].Match.PathSpecifier = &v3routepb.RouteMatch_Prefix{Prefix: "/api/"}
	vh.Routes = append(vh.Routes, &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "elsewhere"}}},
	})
	chain := testutil.ServerFilterChain(testutil.FilterChainOptions{
		RouteConfigName: "server-routes",
		HTTPFilters:     []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"client": {mesh.ID("client")}}))},
		TLS:             testutil.DownstreamTLS(testutil.DownstreamTLSOptions{IdentityInstance: "mesh", RootInstance: "mesh", RequireClientCertificate: true}),
	})
	listeners := []*v3listenerpb.Listener{testutil.ServerListener(bootstrap.ExpandTemplate(serverTemplate, addr), addr, chain)}
	s.setSnapshot(ctx, t, "1", testutil.Resources{Listeners: listeners, Routes: []*v3routepb.RouteConfiguration{routes}})
	select {
	case <-serving:
	case <-ctx.Done():
		t.Fatal("the server did not serve its Listener")
	}

	get := func(leaf *certs.Leaf, path string) (int, string, error) {
		cfg := &tls.Config{RootCAs: certs.Pool(mesh.CA), ServerName: "localhost"}
		if leaf != nil {
			cfg.Certificates = []tls.Certificate{leaf.TLS}
		}
		tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	intruder, err := mesh.CA.Issue(certs.Options{SPIFFEID: mesh.ID("intruder")})
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := get(mesh.Client, "/api/x"); err != nil || code != http.StatusOK || body != mesh.ID("client") {
		t.Errorf("the allowed client on /api/x: %d %q, %v; want 200 with its SPIFFE ID", code, body, err)
	}
	if code, body, err := get(mesh.Client, "/other"); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("the allowed client on a forwarding route: %d %q, %v; want 503", code, body, err)
	}
	if code, body, err := get(intruder, "/api/x"); err != nil || code != http.StatusForbidden || !strings.Contains(body, "RBAC: access denied") {
		t.Errorf("the intruder: %d %q, %v; want 403", code, body, err)
	}
	if code, _, err := get(nil, "/api/x"); err == nil {
		t.Errorf("a client without certificate: %d, want a failed handshake", code)
	}

	denyAll := proto.Clone(routes).(*v3routepb.RouteConfiguration)
	denyAll.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"rbac": testutil.MarshalAny(testutil.RBACPerRoute(testutil.RBACRules(v3rbacconfigpb.RBAC_DENY, map[string][]string{"everyone": nil}))),
	}
	s.setSnapshot(ctx, t, "2", testutil.Resources{Listeners: listeners, Routes: []*v3routepb.RouteConfiguration{denyAll}})
	for {
		code, _, err := get(mesh.Client, "/api/x")
		if err == nil && code == http.StatusForbidden {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after the RDS update denying everyone: %d, %v; want 403", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
