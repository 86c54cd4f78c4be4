// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/resources"
)

func anyOf(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// denyPath is RBAC rules denying the RPCs whose path starts with prefix.
func denyPath(prefix string) *v3rbacconfigpb.RBAC {
	return &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_DENY, Policies: map[string]*v3rbacconfigpb.Policy{"deny": {
		Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_UrlPath{UrlPath: pathPrefix(prefix)}}},
		Principals:  []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}},
	}}}
}

func pathPrefix(prefix string) *v3matcherpb.PathMatcher {
	return &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: prefixSM(prefix)}}
}

func route(prefix string, nonForwarding bool, overrides map[string]*anypb.Any) *v3routepb.Route {
	r := &v3routepb.Route{
		Match:                &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: prefix}},
		TypedPerFilterConfig: overrides,
	}
	if nonForwarding {
		r.Action = &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}}
	} else {
		r.Action = &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}}}
	}
	return r
}

func decodeRC(t *testing.T, rc *v3routepb.RouteConfiguration) *resources.RouteConfig {
	t.Helper()
	_, v, err := resources.RouteConfigType.DecodeTyped(anyOf(t, rc))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// buildRouteTable is the routeTable of a chain with filters and rc.
func buildRouteTable(filters []resources.HTTPFilter, rc *resources.RouteConfig, auditors map[string]audit.LoggerBuilder, nodeID string) *routeTable {
	return &routeTable{serverroutes.Build(filters, rc, auditors), nodeID}
}

// rpcCtx is the server context of an RPC to authority.
func rpcCtx(authority string) context.Context {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(":authority", authority))
	return peer.NewContext(ctx, &peer.Peer{Addr: tcpAddr("10.0.0.9:1"), LocalAddr: tcpAddr("10.0.0.1:8080")})
}

// TestRouteTable checks the routing of server RPCs (gRFC A36, A39, A41;
// virtual host by :authority, first matching route, RBAC of the
// filter with the route's or the virtual host's override (an
// RBACPerRoute without rbac disables it; one in a FilterConfig counts),
// then the action.
func TestRouteTable(t *testing.T) {
	filterCfg := anyOf(t, &v3routepb.FilterConfig{Config: anyOf(t, &v3rbacpb.RBACPerRoute{Rbac: &v3rbacpb.RBAC{Rules: denyPath("/pkg.Svc/Open")}})})
	rc := decodeRC(t, &v3routepb.RouteConfiguration{Name: "rc", VirtualHosts: []*v3routepb.VirtualHost{
		{
			Name:    "api",
			Domains: []string{"api.example"},
			Routes: []*v3routepb.Route{
				route("/pkg.Svc/Open", true, map[string]*anypb.Any{"rbac": anyOf(t, &v3rbacpb.RBACPerRoute{})}),
				route("/pkg.Svc/Wrapped", true, map[string]*anypb.Any{"rbac": filterCfg}),
				route("/pkg.Svc/Forward", false, nil),
				route("/pkg.", true, nil),
			},
		},
		{
			Name:                 "other",
			Domains:              []string{"*"},
			Routes:               []*v3routepb.Route{route("/", true, nil)},
			TypedPerFilterConfig: map[string]*anypb.Any{"rbac": anyOf(t, &v3rbacpb.RBACPerRoute{Rbac: &v3rbacpb.RBAC{Rules: denyPath("/pkg.Svc/Other")}})},
		},
	}})
	filters := []resources.HTTPFilter{
		{Name: "rbac", TypeURL: serverroutes.RBACTypeURL, Config: anyOf(t, &v3rbacpb.RBAC{Rules: denyPath("/pkg.Svc/")}), RBAC: decodedRules(t, denyPath("/pkg.Svc/"))},
		{Name: "router", TypeURL: "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router", Config: anyOf(t, &v3routerpb.Router{})},
	}
	rt := buildRouteTable(filters, rc, nil, "node-1")
	if rt.Err() != nil {
		t.Fatal(rt.Err())
	}
	if p := rt.problems(); !strings.Contains(p, "1 routes whose action is not non_forwarding_action") {
		t.Errorf("problems() = %q, want the forwarding route counted", p)
	}
	for _, tc := range []struct {
		authority, method string
		want              codes.Code
		msg               string
	}{
		{"api.example", "/pkg.Svc/Open", codes.OK, ""},                      // the override disables RBAC
		{"api.example", "/pkg.Svc/Get", codes.PermissionDenied, `"deny"`},   // the filter's rules
		{"api.example", "/pkg.Svc/Wrapped", codes.OK, ""},                   // the override in a FilterConfig replaces them
		{"api.example", "/pkg.Svc/Forward", codes.PermissionDenied, "DENY"}, // filters run before the action
		{"api.example", "/other.Svc/Get", codes.Unavailable, "no route"},    // no route
		{"svc.example", "/pkg.Svc/Get", codes.OK, ""},                       // the virtual host's override
		{"svc.example", "/pkg.Svc/Other", codes.PermissionDenied, `"deny"`}, // its rules
	} {
		err := rt.check(rpcCtx(tc.authority), tc.method)
		if status.Code(err) != tc.want || (tc.msg != "" && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("check(%s, %s) = %v, want %s (%s)", tc.authority, tc.method, err, tc.want, tc.msg)
		}
	}

	noRBAC := buildRouteTable(filters[1:], rc, nil, "node-1")
	err := noRBAC.check(rpcCtx("api.example"), "/pkg.Svc/Forward")
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "not non_forwarding_action") || !strings.Contains(err.Error(), `node "node-1"`) {
		t.Errorf("a forwarding route: %v, want UNAVAILABLE naming the action and the node", err)
	}
}

// TestRouteTable_Errors checks the tables whose RPCs all fail with
// UNAVAILABLE: a RouteConfiguration error, an RBAC filter naming an audit
// logger the server lacks, an override of the wrong type.
func TestRouteTable_Errors(t *testing.T) {
	rc := decodeRC(t, &v3routepb.RouteConfiguration{Name: "rc", VirtualHosts: []*v3routepb.VirtualHost{{Domains: []string{"*"}, Routes: []*v3routepb.Route{route("/", true, nil)}}}})
	withLogger := &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, AuditLoggingOptions: &v3rbacconfigpb.RBAC_AuditLoggingOptions{
		AuditCondition: v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY,
		LoggerConfigs:  []*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{xdsbuild.TypedStructAuditLogger("x/missing", nil, false)},
	}}
	for _, tc := range []struct {
		name string
		rt   *routeTable
		want string
	}{
		{"RDS error", &routeTable{serverroutes.Error(errors.New("no RouteConfiguration yet")), "n"}, "no RouteConfiguration yet"},
		{"override of another filter type", buildRouteTable([]resources.HTTPFilter{{Name: "rbac", TypeURL: serverroutes.RBACTypeURL, Config: anyOf(t, &v3rbacpb.RBAC{})}}, decodeRC(t, &v3routepb.RouteConfiguration{Name: "rc", VirtualHosts: []*v3routepb.VirtualHost{{
			Domains: []string{"*"}, Routes: []*v3routepb.Route{route("/", true, map[string]*anypb.Any{"rbac": anyOf(t, &v3faultpb.HTTPFault{})})},
		}}}), nil, "n"), "want RBACPerRoute"},
		{"unknown audit logger", buildRouteTable([]resources.HTTPFilter{{Name: "rbac", TypeURL: serverroutes.RBACTypeURL, Config: anyOf(t, &v3rbacpb.RBAC{Rules: withLogger}), RBAC: decodedRules(t, withLogger)}}, rc, map[string]audit.LoggerBuilder{}, "n"), `no audit logger "missing"`},
	} {
		err := tc.rt.check(rpcCtx("a"), "/p/m")
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: check() = %v, want UNAVAILABLE with %q", tc.name, err, tc.want)
		}
		if p := tc.rt.problems(); !strings.Contains(p, tc.want) {
			t.Errorf("%s: problems() = %q, want %q", tc.name, p, tc.want)
		}
	}
}
