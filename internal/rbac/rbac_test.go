// SPDX-License-Identifier: Apache-2.0

package rbac

import (
	"bytes"
	"crypto/x509"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/types/known/anypb"

	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/proxyless/xds/resources"
)

// fakeRequest is a Request of fixed values.
type fakeRequest struct {
	path, serverName, spiffeID string
	headers                    map[string]string
	local, remote              netip.AddrPort
	tls                        bool
	certs                      []*x509.Certificate
}

func (r *fakeRequest) Path() string { return r.path }

func (r *fakeRequest) Header(name string) (string, bool) {
	v, ok := r.headers[name]
	return v, ok
}

func (r *fakeRequest) LocalAddr() (netip.AddrPort, bool)  { return r.local, r.local.IsValid() }
func (r *fakeRequest) RemoteAddr() (netip.AddrPort, bool) { return r.remote, r.remote.IsValid() }
func (r *fakeRequest) PeerCertificates() ([]*x509.Certificate, bool) {
	return r.certs, r.tls
}
func (r *fakeRequest) ServerName() string { return r.serverName }
func (r *fakeRequest) SPIFFEID() string   { return r.spiffeID }

func prefixSM(s string) *v3matcherpb.StringMatcher {
	return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{Prefix: s}}
}

// TestEngine_Actions checks ALLOW and DENY, the policy reported (the first
// matching one in name order), the rules that enforce nothing (absent,
// LOG), and the audit events of each decision (gRFC A41, A59).
func TestEngine_Actions(t *testing.T) {
	byPath := func(path string) *v3rbacconfigpb.Policy {
		return &v3rbacconfigpb.Policy{
			Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_UrlPath{UrlPath: &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: prefixSM(path)}}}}},
			Principals:  []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}},
		}
	}
	policies := map[string]*v3rbacconfigpb.Policy{"b-pkg": byPath("/pkg."), "a-get": byPath("/pkg.Svc/Get"), "c-other": byPath("/other.")}
	get := &fakeRequest{path: "/pkg.Svc/Get", spiffeID: "spiffe://td/c"}
	none := &fakeRequest{path: "/none.Svc/Get"}

	var log bytes.Buffer
	auditors := map[string]audit.LoggerBuilder{StdoutAuditLoggerName: NewStdoutAuditLogger(&log)}
	auditOpts := &v3rbacconfigpb.RBAC_AuditLoggingOptions{
		AuditCondition: v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW,
		LoggerConfigs:  []*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{stdoutLoggerConfig(t)},
	}
	allow, err := NewEngine("allow-filter", decodedRules(t, &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, Policies: policies, AuditLoggingOptions: auditOpts}), auditors)
	if err != nil {
		t.Fatal(err)
	}
	if ok, p := allow.Authorize(get); !ok || p != "a-get" {
		t.Errorf("ALLOW: authorize(Get) = %v, %q; want true, a-get (the first matching policy by name)", ok, p)
	}
	if ok, p := allow.Authorize(none); ok || p != "" {
		t.Errorf("ALLOW: authorize(none) = %v, %q; want false, no policy", ok, p)
	}
	deny, err := NewEngine("deny-filter", decodedRules(t, &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_DENY, Policies: policies}), auditors)
	if err != nil {
		t.Fatal(err)
	}
	if ok, p := deny.Authorize(get); ok || p != "a-get" {
		t.Errorf("DENY: authorize(Get) = %v, %q; want false, a-get", ok, p)
	}
	if ok, _ := deny.Authorize(none); !ok {
		t.Errorf("DENY: authorize(none) = false, want true")
	}
	for _, rules := range []*v3rbacconfigpb.RBAC{nil, {Action: v3rbacconfigpb.RBAC_LOG, Policies: policies}} {
		if e, err := NewEngine("f", decodedRules(t, rules), auditors); e != nil || err != nil {
			t.Errorf("NewEngine(%v) = %v, %v; want nil, nil (nothing enforced)", rules, e, err)
		}
	}

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit log:\n%s\nwant 2 lines (ON_DENY_AND_ALLOW; the DENY engine logs nothing)", log.String())
	}
	for i, want := range []string{
		`{"grpc_audit_log":{"rpc_method":"/pkg.Svc/Get","principal":"spiffe://td/c","policy_name":"allow-filter","matched_rule":"a-get","authorized":true,"timestamp":"`,
		`{"grpc_audit_log":{"rpc_method":"/none.Svc/Get","principal":"","policy_name":"allow-filter","matched_rule":"","authorized":false,"timestamp":"`,
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("audit line %d = %s\nwant prefix %s", i, lines[i], want)
		}
	}
}

// TestEngine_ServerName checks requested_server_name: it matches the
// request's TLS server name (the net/http server knows it; a gRPC server
// gives "", gRFC A41).
func TestEngine_ServerName(t *testing.T) {
	rules := &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, Policies: map[string]*v3rbacconfigpb.Policy{"sni": {
		Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_RequestedServerName{RequestedServerName: prefixSM("api.")}}},
		Principals:  []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}},
	}}}
	e, err := NewEngine("rbac", decodedRules(t, rules), nil)
	if err != nil {
		t.Fatal(err)
	}
	for sni, want := range map[string]bool{"api.example": true, "web.example": false, "": false} {
		if ok, _ := e.Authorize(&fakeRequest{path: "/", serverName: sni, tls: true}); ok != want {
			t.Errorf("requested_server_name prefix api.: SNI %q authorized %v, want %v", sni, ok, want)
		}
	}
}

// decodedRules returns rules as package resources decodes them, in an
// RBACPerRoute override of a RouteConfiguration: the form the server
// compiles. nil for rules that enforce nothing.
func decodedRules(t *testing.T, rules *v3rbacconfigpb.RBAC) *resources.RBACRules {
	t.Helper()
	override, err := anypb.New(&v3rbacpb.RBACPerRoute{Rbac: &v3rbacpb.RBAC{Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	rc := &v3routepb.RouteConfiguration{Name: "r", VirtualHosts: []*v3routepb.VirtualHost{{
		Name: "vh", Domains: []string{"*"}, TypedPerFilterConfig: map[string]*anypb.Any{"rbac": override},
	}}}
	a, err := anypb.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := resources.RouteConfigType.DecodeTyped(a)
	if err != nil {
		t.Fatalf("decoding the rules: %v", err)
	}
	return got.VirtualHosts[0].FilterOverrides["rbac"].RBAC
}
