// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build the deprecated RBAC fields gRPC still reads (metadata, source_ip).

package server

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/resources"
)

func exactSM(s string) *v3matcherpb.StringMatcher {
	return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: s}}
}

func prefixSM(s string) *v3matcherpb.StringMatcher {
	return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{Prefix: s}}
}

func header(name string, hm *v3routepb.HeaderMatcher) *v3routepb.HeaderMatcher {
	hm.Name = name
	return hm
}

func exactHeader(name, v string) *v3routepb.HeaderMatcher {
	return header(name, &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: exactSM(v)}})
}

func cidrRange(addr string, n uint32) *v3corepb.CidrRange {
	return &v3corepb.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(n)}
}

func perm(p *v3rbacconfigpb.Permission) *v3rbacconfigpb.Permission { return p }

// rpcFrom is an RPC of method with metadata md from a client at remote to
// local, over TLS with cert when cert is not nil.
func rpcFrom(method string, md metadata.MD, remote, local string, cert *x509.Certificate) *rpcInfo {
	p := &peer.Peer{Addr: tcpAddr(remote), LocalAddr: tcpAddr(local)}
	if cert != nil {
		info := credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}}
		if len(cert.URIs) == 1 && cert.URIs[0].Scheme == "spiffe" {
			info.SPIFFEID = cert.URIs[0]
		}
		p.AuthInfo = info
	}
	return &rpcInfo{method: method, md: md, peer: p}
}

func tcpAddr(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		panic(err)
	}
	return a
}

// TestRBAC_Matchers checks each permission and principal of gRFC A41
// against RPCs that match and do not, with a one-policy ALLOW engine.
func TestRBAC_Matchers(t *testing.T) {
	spiffe := &x509.Certificate{URIs: []*url.URL{{Scheme: "spiffe", Host: "td", Path: "/ns/a/sa/client"}}, DNSNames: []string{"ignored.example"}}
	dnsOnly := &x509.Certificate{DNSNames: []string{"client.example", "alt.example"}, Subject: pkix.Name{CommonName: "ignored"}}
	subjectOnly := &x509.Certificate{Subject: pkix.Name{CommonName: "client", Organization: []string{"Org"}}}
	md := metadata.Pairs(":authority", "svc.example:443", "content-type", "application/grpc+proto", "x-multi", "a", "x-multi", "b", "te", "trailers", "id-bin", "\x01\x02")
	rpc := rpcFrom("/pkg.Svc/Get", md, "10.0.0.9:5555", "10.0.0.1:8080", spiffe)
	plain := rpcFrom("/pkg.Svc/Get", md, "10.0.0.9:5555", "10.0.0.1:8080", nil)

	anyPrincipal := &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}
	anyPerm := &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Any{Any: true}}
	tests := []struct {
		name      string
		perm      *v3rbacconfigpb.Permission
		principal *v3rbacconfigpb.Principal
		match     []*rpcInfo
		noMatch   []*rpcInfo
	}{
		{
			name:    "url_path is the full method",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_UrlPath{UrlPath: &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: prefixSM("/pkg.Svc/")}}}},
			match:   []*rpcInfo{rpc},
			noMatch: []*rpcInfo{rpcFrom("/other.Svc/Get", md, "10.0.0.9:1", "10.0.0.1:8080", nil)},
		},
		{
			name:  ":path, :method and :authority headers",
			perm:  &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_AndRules{AndRules: &v3rbacconfigpb.Permission_Set{Rules: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader(":path", "/pkg.Svc/Get")}}, {Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader(":method", "POST")}}, {Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader(":authority", "svc.example:443")}}}}}},
			match: []*rpcInfo{rpc},
		},
		{
			name:    "host is :authority",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader("Host", "svc.example:443")}},
			match:   []*rpcInfo{rpc},
			noMatch: []*rpcInfo{rpcFrom("/pkg.Svc/Get", metadata.Pairs(":authority", "other"), "10.0.0.9:1", "10.0.0.1:8080", nil)},
		},
		{
			name:  "multiple values joined with a comma; the client's content-type",
			perm:  &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_AndRules{AndRules: &v3rbacconfigpb.Permission_Set{Rules: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader("x-multi", "a,b")}}, {Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader("content-type", "application/grpc+proto")}}}}}},
			match: []*rpcInfo{rpc},
		},
		{
			name:  "binary headers are base64",
			perm:  &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeader("id-bin", "AQI")}},
			match: []*rpcInfo{rpc},
		},
		{
			name:    "te is never present",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Header{Header: header("te", &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}})}},
			noMatch: []*rpcInfo{rpc},
		},
		{
			name: "an absent header fails even an inverted matcher",
			perm: &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Header{Header: func() *v3routepb.HeaderMatcher {
				h := exactHeader("x-absent", "v")
				h.InvertMatch = true
				return h
			}()}},
			noMatch: []*rpcInfo{rpc},
		},
		{
			name: "an empty deprecated prefix matches any present value",
			//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Header{Header: header("x-multi", &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PrefixMatch{PrefixMatch: ""}})}},
			match:   []*rpcInfo{rpc},
			noMatch: []*rpcInfo{rpcFrom("/pkg.Svc/Get", metadata.MD{}, "10.0.0.9:1", "10.0.0.1:8080", nil)},
		},
		{
			name:    "destination_ip and destination_port are the local address",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_AndRules{AndRules: &v3rbacconfigpb.Permission_Set{Rules: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_DestinationIp{DestinationIp: cidrRange("10.0.0.0", 24)}}, {Rule: &v3rbacconfigpb.Permission_DestinationPort{DestinationPort: 8080}}}}}},
			match:   []*rpcInfo{rpc},
			noMatch: []*rpcInfo{rpcFrom("/pkg.Svc/Get", md, "10.0.0.9:1", "10.0.0.1:9090", nil), rpcFrom("/pkg.Svc/Get", md, "10.0.0.9:1", "10.1.0.1:8080", nil)},
		},
		{
			name:    "requested_server_name is empty",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_RequestedServerName{RequestedServerName: exactSM("")}},
			match:   []*rpcInfo{rpc},
			noMatch: nil,
		},
		{
			name:    "requested_server_name never has a name",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_RequestedServerName{RequestedServerName: exactSM("svc.example")}},
			noMatch: []*rpcInfo{rpc},
		},
		{
			name:    "metadata never matches",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Metadata{Metadata: &v3matcherpb.MetadataMatcher{}}},
			noMatch: []*rpcInfo{rpc},
		},
		{
			name:  "inverted metadata always matches",
			perm:  &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_Metadata{Metadata: &v3matcherpb.MetadataMatcher{Invert: true}}},
			match: []*rpcInfo{rpc},
		},
		{
			name:    "not and or",
			perm:    &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_NotRule{NotRule: &v3rbacconfigpb.Permission{Rule: &v3rbacconfigpb.Permission_OrRules{OrRules: &v3rbacconfigpb.Permission_Set{Rules: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_DestinationPort{DestinationPort: 1}}, {Rule: &v3rbacconfigpb.Permission_DestinationPort{DestinationPort: 8080}}}}}}}},
			noMatch: []*rpcInfo{rpc},
			match:   []*rpcInfo{rpcFrom("/pkg.Svc/Get", md, "10.0.0.9:1", "10.0.0.1:9", nil)},
		},
		{
			name:      "authenticated without a name: any TLS connection",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{}}},
			match:     []*rpcInfo{rpc},
			noMatch:   []*rpcInfo{plain},
		},
		{
			name:      "principal_name: the URI SAN first",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{PrincipalName: exactSM("spiffe://td/ns/a/sa/client")}}},
			match:     []*rpcInfo{rpc},
			noMatch:   []*rpcInfo{plain, rpcFrom("/p/m", md, "10.0.0.9:1", "10.0.0.1:8080", dnsOnly)},
		},
		{
			name:      "principal_name: DNS SANs without a URI SAN",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{PrincipalName: exactSM("alt.example")}}},
			match:     []*rpcInfo{rpcFrom("/p/m", md, "10.0.0.9:1", "10.0.0.1:8080", dnsOnly)},
			noMatch:   []*rpcInfo{rpcFrom("/p/m", md, "10.0.0.9:1", "10.0.0.1:8080", &x509.Certificate{URIs: []*url.URL{{Scheme: "spiffe", Host: "x"}}, DNSNames: []string{"alt.example"}})},
		},
		{
			name:      "principal_name: the subject without SANs",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{PrincipalName: exactSM("CN=client,O=Org")}}},
			match:     []*rpcInfo{rpcFrom("/p/m", md, "10.0.0.9:1", "10.0.0.1:8080", subjectOnly)},
		},
		{
			name:      "principal_name: a TLS client without a certificate is \"\"",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{PrincipalName: exactSM("")}}},
			match: []*rpcInfo{func() *rpcInfo {
				r := rpcFrom("/p/m", md, "10.0.0.9:1", "10.0.0.1:8080", nil)
				r.peer.AuthInfo = credentials.TLSInfo{}
				return r
			}()},
			noMatch: []*rpcInfo{plain},
		},
		{
			name:      "source_ip, direct_remote_ip and remote_ip are the peer",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_AndIds{AndIds: &v3rbacconfigpb.Principal_Set{Ids: []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_SourceIp{SourceIp: cidrRange("10.0.0.0", 8)}}, {Identifier: &v3rbacconfigpb.Principal_DirectRemoteIp{DirectRemoteIp: cidrRange("10.0.0.9", 32)}}, {Identifier: &v3rbacconfigpb.Principal_RemoteIp{RemoteIp: cidrRange("10.0.0.0", 24)}}}}}},
			match:     []*rpcInfo{rpc},
			noMatch:   []*rpcInfo{rpcFrom("/p/m", md, "10.0.0.10:1", "10.0.0.1:8080", nil)},
		},
		{
			name:      "not_id, or_ids, header and url_path principals",
			principal: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_NotId{NotId: &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_OrIds{OrIds: &v3rbacconfigpb.Principal_Set{Ids: []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Header{Header: exactHeader("x-multi", "nope")}}, {Identifier: &v3rbacconfigpb.Principal_UrlPath{UrlPath: &v3matcherpb.PathMatcher{Rule: &v3matcherpb.PathMatcher_Path{Path: exactSM("/pkg.Svc/Put")}}}}}}}}}},
			match:     []*rpcInfo{rpc},
			noMatch:   []*rpcInfo{rpcFrom("/pkg.Svc/Put", md, "10.0.0.9:1", "10.0.0.1:8080", nil)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, pr := tc.perm, tc.principal
			if p == nil {
				p = anyPerm
			}
			if pr == nil {
				pr = anyPrincipal
			}
			e, err := rbac.NewEngine("rbac", decodedRules(t, &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, Policies: map[string]*v3rbacconfigpb.Policy{
				"p": {Permissions: []*v3rbacconfigpb.Permission{perm(p)}, Principals: []*v3rbacconfigpb.Principal{pr}},
			}}), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range tc.match {
				if ok, _ := e.Authorize(r); !ok {
					t.Errorf("match[%d] (%s from %s): not matched", i, r.method, r.peer.Addr)
				}
			}
			for i, r := range tc.noMatch {
				if ok, _ := e.Authorize(r); ok {
					t.Errorf("noMatch[%d] (%s from %s): matched", i, r.method, r.peer.Addr)
				}
			}
		})
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
