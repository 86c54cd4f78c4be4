// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"
)

// End-to-end tests of the xDS-enabled net/http server (gRFC A36, A29,
// A41, A59 applied to HTTP, with Envoy's HTTP answers): the management
// server sends the server's Listener, the Server serves loopback
// connections, and net/http clients call it.

// TestServer_ServingModes checks the serving modes (gRFC A36, R-26.5):
//  1. before its Listener arrives, connections are closed: requests fail;
//  2. the Listener arrives: SERVING, and requests succeed;
//  3. a NACKed update keeps the Listener: still SERVING;
//  4. the Listener is deleted: NOT_SERVING with a not-found error, and
//     requests fail again;
//  5. it comes back: SERVING again.
func TestServer_ServingModes(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil)
	hc := plainClient(t)
	url := "http://" + ts.addr + "/a"

	if r, err := get(t, hc, url, ""); err == nil {
		t.Fatalf("GET before the Listener: %d %q, want the connection closed", r.code, r.body)
	}
	if n := ts.h.requests.Load(); n != 0 {
		t.Fatalf("the handler served %d requests before the Listener", n)
	}

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	if r := mustGet(t, hc, url, http.StatusOK); r.body != "ok /a -" {
		t.Errorf("body %q, want the handler's", r.body)
	}

	bad := ts.listener()
	bad.UseOriginalDst = wrapperspb.Bool(true) // NACKed
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{bad}})
	ts.noModeChange(t)
	mustGet(t, hc, url, http.StatusOK)

	e.update(t, testutil.Resources{})
	mc := ts.waitMode(t, xdshttp.ServingModeNotServing)
	if !errors.Is(mc.err, client.ErrResourceNotFound) {
		t.Errorf("NOT_SERVING error = %v, want one wrapping client.ErrResourceNotFound", mc.err)
	}
	if r, err := get(t, hc, url, ""); err == nil {
		t.Fatalf("GET after the Listener was deleted: %d %q, want the connection closed", r.code, r.body)
	}

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	mustGet(t, hc, url, http.StatusOK)
}

// TestServer_WrongListener checks that a Listener of another address, or
// a client-side Listener under the server's name, makes the server not
// serving, with the reason (gRFC A36, R-26.5).
func TestServer_WrongListener(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.ServerListener(ts.name(), "127.0.0.2:1", testutil.ServerFilterChain(testutil.FilterChainOptions{}))}})
	mc := ts.waitMode(t, xdshttp.ServingModeNotServing)
	if mc.err == nil || !strings.Contains(mc.err.Error(), "is not the listening address") {
		t.Errorf("NOT_SERVING error = %v, want one about the address", mc.err)
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener(ts.name(), "routes")}})
	mc = ts.waitMode(t, xdshttp.ServingModeNotServing)
	if mc.err == nil || !strings.Contains(mc.err.Error(), "client-side Listener") {
		t.Errorf("NOT_SERVING error = %v, want one about a client-side Listener", mc.err)
	}
}

// TestServer_MTLSAndRBAC checks mTLS from the DownstreamTlsContext and
// RBAC by SPIFFE identity (gRFC A29, A41) over real certificates: the
// allowed identity is served (the handler sees its certificate), another
// gets 403 "RBAC: access denied" (Envoy's RBAC filter), a client without
// a certificate fails the handshake, and so does a plaintext client.
func TestServer_MTLSAndRBAC(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil)
	allowed := e.mesh.ID("client")
	rules := testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"allow-client": {allowed}})
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(mtlsChain(rules))}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	url := "https://" + ts.addr + "/who"

	r := mustGet(t, e.tlsClient(t, e.mesh.Client), url, http.StatusOK)
	if r.body != "ok /who "+allowed {
		t.Errorf("body %q, want the handler seeing %s", r.body, allowed)
	}

	r = mustGet(t, e.tlsClient(t, e.issue(t, e.mesh.ID("intruder"))), url, http.StatusForbidden)
	if strings.TrimSpace(r.body) != "RBAC: access denied" {
		t.Errorf("403 body %q, want Envoy's %q", r.body, "RBAC: access denied")
	}

	if r, err := get(t, e.tlsClient(t, nil), url, ""); err == nil {
		t.Errorf("GET without a client certificate: %d %q, want a failed handshake", r.code, r.body)
	}
	if r, err := get(t, plainClient(t), "http://"+ts.addr+"/who", ""); err == nil && r.code == http.StatusOK {
		t.Errorf("plaintext GET to a TLS chain: %d %q, want it refused", r.code, r.body)
	}
	if n := ts.h.requests.Load(); n != 1 {
		t.Errorf("the handler served %d requests, want 1 (the allowed client's)", n)
	}
}

// TestServer_HTTP2OverTLS checks that a TLS chain offers h2 by ALPN, and
// that WithHTTPServer's Protocols can turn it off.
func TestServer_HTTP2OverTLS(t *testing.T) {
	e := newSrvEnv(t)
	for _, tc := range []struct {
		name  string
		opts  []xdshttp.ServerOption
		proto int
	}{
		{name: "default", proto: 2},
		{name: "HTTP/1 only", opts: []xdshttp.ServerOption{xdshttp.WithHTTPServer(&http.Server{Protocols: http1Only()})}, proto: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := e.startServer(t, nil, tc.opts...)
			e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(mtlsChain(nil))}})
			ts.waitMode(t, xdshttp.ServingModeServing)
			hc := e.tlsClient(t, e.mesh.Client)
			resp, err := hc.Get("https://" + ts.addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != tc.proto {
				t.Errorf("protocol %s, want HTTP/%d", resp.Proto, tc.proto)
			}
		})
	}
}

func http1Only() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	return p
}

// TestServer_Routes checks the routing of requests with the chain's
// RouteConfiguration (gRFC A36 with Envoy's HTTP answers): the virtual
// host by Host, the first route by path and headers; a route of another
// action than non_forwarding_action gets 503 (Envoy: no such cluster), no
// route and no virtual host get 404 (Envoy: NR); the handler sees none of
// those requests.
func TestServer_Routes(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil)
	rc := &v3routepb.RouteConfiguration{Name: "inbound", VirtualHosts: []*v3routepb.VirtualHost{{
		Name:    "api",
		Domains: []string{"api.example"},
		Routes: []*v3routepb.Route{
			nonForwarding(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/v1/"}, Headers: []*v3routepb.HeaderMatcher{{
				Name: "x-version", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "1"}}},
			}}}),
			{
				Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/forward"}},
				Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}}},
			},
			nonForwarding(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Path{Path: "/exact"}}),
		},
	}}}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(testutil.ServerFilterChain(testutil.FilterChainOptions{RouteConfig: rc}))}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	hc := plainClient(t)
	base := "http://" + ts.addr
	send := func(path, host string, hdr map[string]string) response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s (Host %s): %v", path, host, err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return response{code: resp.StatusCode, body: b.String()}
	}
	for _, tc := range []struct {
		path, host string
		hdr        map[string]string
		want       int
		body       string
	}{
		{"/v1/users?x=1", "api.example", map[string]string{"X-Version": "1"}, http.StatusOK, "ok /v1/users -"},
		{"/v1/users", "api.example", map[string]string{"X-Version": "2"}, http.StatusNotFound, "matched no route"},
		{"/exact", "API.example", nil, http.StatusOK, "ok /exact -"},
		{"/exact/more", "api.example", nil, http.StatusNotFound, "matched no route"},
		{"/forward", "api.example", nil, http.StatusServiceUnavailable, "not non_forwarding_action"},
		{"/exact", "other.example", nil, http.StatusNotFound, "authority"},
	} {
		r := send(tc.path, tc.host, tc.hdr)
		if r.code != tc.want || !strings.Contains(r.body, tc.body) {
			t.Errorf("GET %s (Host %s, %v): %d %q, want %d with %q", tc.path, tc.host, tc.hdr, r.code, r.body, tc.want, tc.body)
		}
	}
	if n := ts.h.requests.Load(); n != 2 {
		t.Errorf("the handler served %d requests, want 2", n)
	}
}

// nonForwarding is a route of match whose action is non_forwarding_action.
func nonForwarding(m *v3routepb.RouteMatch) *v3routepb.Route {
	return &v3routepb.Route{Match: m, Action: &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}}}
}

// TestServer_RBACPerRoute checks RBAC on HTTP requests (gRFC A41 mapped
// to HTTP): the filter's rules (ALLOW GET only, by :method) with a
// route's RBACPerRoute denying a path prefix to everyone and another's
// disabling RBAC; headers and url_path (without the query) as
// permissions.
func TestServer_RBACPerRoute(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil)
	onlyGet := &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, Policies: map[string]*v3rbacconfigpb.Policy{"get": {
		Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Header{Header: &v3routepb.HeaderMatcher{
			Name: ":method", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "GET"}}},
		}}}},
		Principals: []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}},
	}}}
	denyAdmin := &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_DENY, Policies: map[string]*v3rbacconfigpb.Policy{"admin": {
		Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_UrlPath{UrlPath: &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "/admin/panel"}}}}}}},
		Principals:  []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}},
	}}}
	admin := nonForwarding(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/admin/"}})
	admin.TypedPerFilterConfig = map[string]*anypb.Any{"rbac": testutil.MarshalAny(testutil.RBACPerRoute(denyAdmin))}
	open := nonForwarding(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/open/"}})
	open.TypedPerFilterConfig = map[string]*anypb.Any{"rbac": testutil.MarshalAny(testutil.RBACPerRoute(nil))}
	rc := &v3routepb.RouteConfiguration{Name: "inbound", VirtualHosts: []*v3routepb.VirtualHost{{
		Name: "all", Domains: []string{"*"},
		Routes: []*v3routepb.Route{admin, open, nonForwarding(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}})},
	}}}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(testutil.ServerFilterChain(testutil.FilterChainOptions{
		RouteConfig: rc, HTTPFilters: []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", onlyGet)},
	}))}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	hc := plainClient(t)
	base := "http://" + ts.addr
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/data", http.StatusOK},
		{http.MethodPost, "/data", http.StatusForbidden},           // the filter's rules: GET only
		{http.MethodPost, "/open/data", http.StatusOK},             // RBAC disabled on the route
		{http.MethodPost, "/admin/other", http.StatusOK},           // the override replaces the filter's rules
		{http.MethodGet, "/admin/panel?x=1", http.StatusForbidden}, // url_path without the query
		{http.MethodGet, "/admin/panel/x", http.StatusOK},          // exact url_path
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

// TestServer_AuditLogging checks audit logging (gRFC A59) of HTTP
// requests: the standard stdout logger, given with WithAuditLoggers,
// logs each decision of ON_DENY_AND_ALLOW with the request's path, the
// client's SPIFFE ID, the filter's name and the matched policy.
func TestServer_AuditLogging(t *testing.T) {
	e := newSrvEnv(t)
	var out testutil.LogBuffer
	ts := e.startServer(t, nil, xdshttp.WithAuditLoggers(server.NewStdoutAuditLogger(&out)))
	rules := testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"allow-client": {e.mesh.ID("client")}})
	rules.AuditLoggingOptions = &v3rbacconfigpb.RBAC_AuditLoggingOptions{
		AuditCondition: v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW,
		LoggerConfigs:  []*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{xdsbuild.StdoutAuditLogger()},
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(mtlsChain(rules))}})
	ts.waitMode(t, xdshttp.ServingModeServing)

	mustGet(t, e.tlsClient(t, e.mesh.Client), "https://"+ts.addr+"/items?id=7", http.StatusOK)
	mustGet(t, e.tlsClient(t, e.issue(t, e.mesh.ID("intruder"))), "https://"+ts.addr+"/secret", http.StatusForbidden)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`{"grpc_audit_log":{"rpc_method":"/items","principal":"spiffe://mesh.example/client","policy_name":"rbac","matched_rule":"allow-client","authorized":true,`,
		`{"grpc_audit_log":{"rpc_method":"/secret","principal":"spiffe://mesh.example/intruder","policy_name":"rbac","matched_rule":"","authorized":false,`,
	}
	if len(lines) != len(want) {
		t.Fatalf("audit log:\n%s\nwant %d lines", out.String(), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("audit line %d:\n%s\nwant prefix\n%s", i, lines[i], want[i])
		}
	}
}

// TestServer_RoutesOverRDS checks a chain whose RouteConfiguration comes
// over RDS, on a delta stream, which tells a resource does not exist at
// once (gRFC A36): without it the server serves and answers 503; once it
// arrives, its routes serve the next request of the same connection; an
// RDS update adding an RBACPerRoute that denies everyone applies in place
// (same connection, 403), as does the deletion (503); the server stays
// SERVING throughout.
func TestServer_RoutesOverRDS(t *testing.T) {
	e := newSrvEnv(t, client.WithDelta())
	ts := e.startServer(t, nil)
	lis := ts.listener(testutil.ServerFilterChain(testutil.FilterChainOptions{
		RouteConfigName: "server-routes",
		HTTPFilters:     []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"anyone": nil}))},
	}))
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	hc, conns := countingClient(t)
	url := "http://" + ts.addr + "/"
	if r := mustGet(t, hc, url, http.StatusServiceUnavailable); !strings.Contains(r.body, "does not exist") {
		t.Errorf("503 body %q, want the not-found error", r.body)
	}

	rc := testutil.ServerRouteConfig("server-routes")
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}, Routes: []*v3routepb.RouteConfiguration{rc}})
	if r, err := pollGet(t, hc, url, func(r response, err error) bool { return err == nil && r.code == http.StatusOK }); err != nil || r.code != http.StatusOK {
		t.Fatalf("GET once the RouteConfiguration arrived: %d %q, %v", r.code, r.body, err)
	}

	denyAll := proto.Clone(rc).(*v3routepb.RouteConfiguration)
	denyAll.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"rbac": testutil.MarshalAny(testutil.RBACPerRoute(testutil.RBACRules(v3rbacconfigpb.RBAC_DENY, map[string][]string{"everyone": nil}))),
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}, Routes: []*v3routepb.RouteConfiguration{denyAll}})
	if r, _ := pollGet(t, hc, url, func(r response, err error) bool { return r.code == http.StatusForbidden }); r.code != http.StatusForbidden {
		t.Fatalf("GET after the RBAC update: %d, want 403", r.code)
	}

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	if r, _ := pollGet(t, hc, url, func(r response, err error) bool { return r.code == http.StatusServiceUnavailable }); !strings.Contains(r.body, "does not exist") {
		t.Fatalf("GET after the RouteConfiguration was deleted: %d %q, want 503 with the not-found error", r.code, r.body)
	}
	ts.noModeChange(t)
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: RDS updates apply in place", n)
	}
}

// TestServer_NonServingChains checks the filter chains a server without
// listener filters cannot match (gRFC A36): a chain more specific than
// the default by its destination prefix, but matching on ALPN
// (application_protocols) or SNI (server_names), never matches; the
// connection goes to the default chain.
func TestServer_NonServingChains(t *testing.T) {
	e := newSrvEnv(t)
	ts := e.startServer(t, nil)
	denyAll := testutil.RBACRules(v3rbacconfigpb.RBAC_DENY, map[string][]string{"everyone": nil})
	alpn := testutil.ServerFilterChain(testutil.FilterChainOptions{Name: "alpn", Match: &v3listenerpb.FilterChainMatch{
		PrefixRanges: []*v3corepb.CidrRange{{AddressPrefix: "127.0.0.1", PrefixLen: wrapperspb.UInt32(32)}}, ApplicationProtocols: []string{"http/1.1", "h2"},
	}, HTTPFilters: []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", denyAll)}})
	sni := testutil.ServerFilterChain(testutil.FilterChainOptions{Name: "sni", Match: &v3listenerpb.FilterChainMatch{
		PrefixRanges: []*v3corepb.CidrRange{{AddressPrefix: "127.0.0.0", PrefixLen: wrapperspb.UInt32(8)}}, ServerNames: []string{"localhost"},
	}, HTTPFilters: []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", denyAll)}})
	lis := ts.listener(alpn, sni)
	lis.DefaultFilterChain = testutil.ServerFilterChain(testutil.FilterChainOptions{Name: "default"})
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	mustGet(t, plainClient(t), "http://"+ts.addr+"/", http.StatusOK)
}
