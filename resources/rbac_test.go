// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build the deprecated RBAC and header match fields gRPC still reads (metadata, source_ip, exact_match).

package resources

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// TestRBACRules_Decode checks what an RBAC filter's rules decode to
// (gRFC A41): every permission and principal gRPC's engine builds, the
// policies sorted by name, audit logging (gRFC A59), rules that enforce
// nothing (absent, LOG) as nil with only the header name rules checked,
// and the errors, with their fields.
func TestRBACRules_Decode(t *testing.T) {
	exact := func(s string) *v3matcherpb.StringMatcher {
		return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: s}}
	}
	cidr := func(addr string, n uint32) *v3corepb.CidrRange {
		return &v3corepb.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(n)}
	}
	perm := func(p *v3rbacconfigpb.Permission) *v3rbacconfigpb.Permission { return p }
	anyPerm := perm(&v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Any{Any: true}})
	anyID := &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}
	header := func(name string, hm *v3routepb.HeaderMatcher) *v3rbacconfigpb.Permission {
		hm.Name = name
		return &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Header{Header: hm}}
	}
	policy := func(perms []*v3rbacconfigpb.Permission, ids []*v3rbacconfigpb.Principal) *v3rbacconfigpb.RBAC {
		return &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_DENY, Policies: map[string]*v3rbacconfigpb.Policy{"p": {Permissions: perms, Principals: ids}}}
	}
	sm := func(s string) *StringMatcher { return &StringMatcher{Kind: StringMatchExact, Value: s} }
	logger := &anypb.Any{TypeUrl: "type.googleapis.com/example.Logger"}

	tests := []struct {
		name    string
		give    *v3rbacconfigpb.RBAC
		want    *RBACRules
		wantErr string
	}{
		{name: "absent", give: nil, want: nil},
		{name: "LOG enforces nothing", give: &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_LOG, Policies: map[string]*v3rbacconfigpb.Policy{
			"p": {Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Matcher{}}}, Principals: []*v3rbacconfigpb.Principal{anyID}},
		}}, want: nil},
		{
			name: "LOG still checks header names",
			give: &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_LOG, Policies: map[string]*v3rbacconfigpb.Policy{
				"p": {Permissions: []*v3rbacconfigpb.Permission{header("grpc-x", &v3routepb.HeaderMatcher{})}, Principals: []*v3rbacconfigpb.Principal{anyID}},
			}},
			wantErr: `policies["p"].permissions[0].header.name: matching on a grpc- header ("grpc-x") is not allowed`,
		},
		{
			name: "every permission",
			give: policy([]*v3rbacconfigpb.Permission{
				{Rule: &v3rbacconfigpb.Permission_AndRules{AndRules: &v3rbacconfigpb.Permission_Set{Rules: []*v3rbacconfigpb.Permission{
					anyPerm,
					{Rule: &v3rbacconfigpb.Permission_NotRule{NotRule: &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_DestinationPort{DestinationPort: 8080}}}},
				}}}},
				{Rule: &v3rbacconfigpb.Permission_OrRules{OrRules: &v3rbacconfigpb.Permission_Set{Rules: []*v3rbacconfigpb.Permission{
					{Rule: &v3rbacconfigpb.Permission_UrlPath{UrlPath: &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: exact("/a/b")}}}},
					{Rule: &v3rbacconfigpb.Permission_DestinationIp{DestinationIp: cidr("10.1.2.3", 8)}},
					{Rule: &v3rbacconfigpb.Permission_RequestedServerName{RequestedServerName: exact("")}},
					{Rule: &v3rbacconfigpb.Permission_Metadata{Metadata: &v3matcherpb.MetadataMatcher{Invert: true}}},
				}}}},
				header("Host", &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PrefixMatch{}}),
				header("x-v", &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_ExactMatch{ExactMatch: "v"}, InvertMatch: true}),
			}, []*v3rbacconfigpb.Principal{anyID}),
			want: &RBACRules{Policies: []RBACPolicy{{
				Name: "p",
				Permissions: []RBACMatcher{
					{Kind: RBACAnd, Rules: []RBACMatcher{{Kind: RBACAny}, {Kind: RBACNot, Rules: []RBACMatcher{{Kind: RBACDestinationPort, Port: 8080}}}}},
					{Kind: RBACOr, Rules: []RBACMatcher{
						{Kind: RBACURLPath, String: sm("/a/b")},
						{Kind: RBACDestinationIP, CIDR: netip.MustParsePrefix("10.0.0.0/8")},
						{Kind: RBACRequestedServerName, String: sm("")},
						{Kind: RBACMetadata, Invert: true},
					}},
					{Kind: RBACHeader, Header: HeaderMatcher{Name: "host", Kind: HeaderMatchPrefix}},
					{Kind: RBACHeader, Header: HeaderMatcher{Name: "x-v", Kind: HeaderMatchExact, Value: "v", Invert: true}},
				},
				Principals: []RBACMatcher{{Kind: RBACAny}},
			}}},
		},
		{
			name: "every principal, policies by name, ALLOW, audit",
			give: &v3rbacconfigpb.RBAC{
				Action: v3rbacconfigpb.RBAC_ALLOW,
				Policies: map[string]*v3rbacconfigpb.Policy{
					"b": {Permissions: []*v3rbacconfigpb.Permission{anyPerm}, Principals: []*v3rbacconfigpb.Principal{
						{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{}}},
						{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{PrincipalName: exact("spiffe://a")}}},
						{Identifier: &v3rbacconfigpb.Principal_SourceIp{SourceIp: cidr("::1", 128)}},
						{Identifier: &v3rbacconfigpb.Principal_DirectRemoteIp{DirectRemoteIp: cidr("192.168.0.0", 16)}},
						{Identifier: &v3rbacconfigpb.Principal_RemoteIp{RemoteIp: cidr("0.0.0.0", 0)}},
					}},
					"a": {Permissions: []*v3rbacconfigpb.Permission{anyPerm}, Principals: []*v3rbacconfigpb.Principal{
						{Identifier: &v3rbacconfigpb.Principal_OrIds{OrIds: &v3rbacconfigpb.Principal_Set{Ids: []*v3rbacconfigpb.Principal{
							{Identifier: &v3rbacconfigpb.Principal_NotId{NotId: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_UrlPath{UrlPath: &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: exact("/x")}}}}}},
							{Identifier: &v3rbacconfigpb.Principal_Metadata{Metadata: &v3matcherpb.MetadataMatcher{}}},
						}}}},
					}},
				},
				AuditLoggingOptions: &v3rbacconfigpb.RBAC_AuditLoggingOptions{
					AuditCondition: v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY,
					LoggerConfigs: []*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{
						{AuditLogger: &v3corepb.TypedExtensionConfig{Name: "l", TypedConfig: logger}, IsOptional: true},
					},
				},
			},
			want: &RBACRules{
				Allow: true,
				Policies: []RBACPolicy{
					{Name: "a", Permissions: []RBACMatcher{{Kind: RBACAny}}, Principals: []RBACMatcher{{Kind: RBACOr, Rules: []RBACMatcher{
						{Kind: RBACNot, Rules: []RBACMatcher{{Kind: RBACURLPath, String: sm("/x")}}},
						{Kind: RBACMetadata},
					}}}},
					{Name: "b", Permissions: []RBACMatcher{{Kind: RBACAny}}, Principals: []RBACMatcher{
						{Kind: RBACAuthenticated},
						{Kind: RBACAuthenticated, String: sm("spiffe://a")},
						{Kind: RBACDirectRemoteIP, CIDR: netip.MustParsePrefix("::1/128")},
						{Kind: RBACDirectRemoteIP, CIDR: netip.MustParsePrefix("192.168.0.0/16")},
						{Kind: RBACRemoteIP, CIDR: netip.MustParsePrefix("0.0.0.0/0")},
					}},
				},
				Audit: &RBACAudit{Condition: RBACAuditOnDeny, Loggers: []RBACAuditLogger{{Config: logger, Optional: true}}},
			},
		},
		{
			name: "audit NONE logs nothing",
			give: &v3rbacconfigpb.RBAC{AuditLoggingOptions: &v3rbacconfigpb.RBAC_AuditLoggingOptions{
				LoggerConfigs: []*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{{AuditLogger: &v3corepb.TypedExtensionConfig{Name: "l", TypedConfig: logger}}},
			}},
			want: &RBACRules{Allow: true},
		},
		{
			name:    "invalid CIDR",
			give:    policy([]*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_DestinationIp{DestinationIp: cidr("10.0.0.0", 40)}}}, []*v3rbacconfigpb.Principal{anyID}),
			wantErr: `policies["p"].permissions[0].destination_ip: invalid CIDR range "10.0.0.0/40"`,
		},
		{
			name:    ":scheme",
			give:    policy([]*v3rbacconfigpb.Permission{header(":scheme", &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}})}, []*v3rbacconfigpb.Principal{anyID}),
			wantErr: `policies["p"].permissions[0].header.name: matching on :scheme is not allowed`,
		},
		{
			name:    "header without a specifier",
			give:    policy([]*v3rbacconfigpb.Permission{header("x", &v3routepb.HeaderMatcher{})}, []*v3rbacconfigpb.Principal{anyID}),
			wantErr: `policies["p"].permissions[0].header: no supported header match specifier`,
		},
		{
			name:    "unsupported permission",
			give:    policy([]*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Matcher{}}}, []*v3rbacconfigpb.Principal{anyID}),
			wantErr: `policies["p"].permissions[0]: unsupported permission rule matcher`,
		},
		{
			name:    "invalid principal name",
			give:    policy([]*v3rbacconfigpb.Permission{anyPerm}, []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{PrincipalName: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{}}}}}}),
			wantErr: `policies["p"].principals[0].authenticated.principal_name.prefix: empty`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeRBACRules(tt.give)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("decodeRBACRules() = %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
				t.Errorf("decodeRBACRules() (-want +got):\n%s", diff)
			}
		})
	}
}
