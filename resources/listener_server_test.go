// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 Istio's inbound Listener uses the deprecated certificate provider fields gRPC still accepts.

package resources

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// serverRoutes is the inline route configuration of a server chain: every
// RPC matches a non-forwarding route (the shape Istio sends).
func serverRoutes() *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{Name: "inbound", VirtualHosts: []*v3routepb.VirtualHost{{
		Domains: []string{"*"},
		Routes: []*v3routepb.Route{{
			Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
			Action: &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}},
		}},
	}}}
}

// serverHCM returns an HttpConnectionManager with the inline serverRoutes
// and the router, changed by the mods.
func serverHCM(t testing.TB, mods ...func(*v3httppb.HttpConnectionManager)) *v3httppb.HttpConnectionManager {
	h := &v3httppb.HttpConnectionManager{
		RouteSpecifier: &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: serverRoutes()},
		HttpFilters:    []*v3httppb.HttpFilter{routerFilter(t)},
	}
	for _, m := range mods {
		m(h)
	}
	return h
}

// chain returns a filter chain named name holding h, changed by the mods.
func chain(t testing.TB, name string, h proto.Message, mods ...func(*v3listenerpb.FilterChain)) *v3listenerpb.FilterChain {
	fc := &v3listenerpb.FilterChain{Name: name, Filters: []*v3listenerpb.Filter{{
		Name:       "hcm",
		ConfigType: &v3listenerpb.Filter_TypedConfig{TypedConfig: mustAny(t, h)},
	}}}
	for _, m := range mods {
		m(fc)
	}
	return fc
}

func withMatchOf(m *v3listenerpb.FilterChainMatch) func(*v3listenerpb.FilterChain) {
	return func(fc *v3listenerpb.FilterChain) { fc.FilterChainMatch = m }
}

func withDownstreamTLS(t testing.TB, ctx *v3tlspb.DownstreamTlsContext) func(*v3listenerpb.FilterChain) {
	return func(fc *v3listenerpb.FilterChain) {
		fc.TransportSocket = &v3corepb.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, ctx)},
		}
	}
}

// serverListener returns a server-side Listener on 0.0.0.0:8080 with the
// chains fcs.
func serverListener(name string, fcs ...*v3listenerpb.FilterChain) *v3listenerpb.Listener {
	return &v3listenerpb.Listener{Name: name, Address: socketAddr("0.0.0.0", 8080), FilterChains: fcs}
}

func cidr(addr string, n uint32) *v3corepb.CidrRange {
	return &v3corepb.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(n)}
}

// mtlsContext is a DownstreamTlsContext with A29 fields: identity "id",
// roots "root", client certificates required.
func mtlsContext() *v3tlspb.DownstreamTlsContext {
	return &v3tlspb.DownstreamTlsContext{
		CommonTlsContext:         rootVC(nil),
		RequireClientCertificate: wrapperspb.Bool(true),
	}
}

// istioInboundListener is the inbound Listener Istio's gRPC generator
// (pilot/pkg/networking/grpcgen) serves a proxyless workload in STRICT
// mTLS with an AuthorizationPolicy: one unnamed-match chain, TLS from the
// "default" provider in the deprecated fields, an RBAC DENY and an ALLOW
// filter, an inline route configuration whose virtual host has no name.
func istioInboundListener(t testing.TB) *v3listenerpb.Listener {
	rules := func(a v3rbacconfigpb.RBAC_Action, principal string) *v3rbacpb.RBAC {
		return &v3rbacpb.RBAC{Rules: &v3rbacconfigpb.RBAC{Action: a, Policies: map[string]*v3rbacconfigpb.Policy{
			"ns-policy-0": {
				Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Any{Any: true}}},
				Principals: []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_AndIds{AndIds: &v3rbacconfigpb.Principal_Set{Ids: []*v3rbacconfigpb.Principal{
					{Identifier: &v3rbacconfigpb.Principal_OrIds{OrIds: &v3rbacconfigpb.Principal_Set{Ids: []*v3rbacconfigpb.Principal{
						{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{
							PrincipalName: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: principal}},
						}}},
					}}}},
				}}}}},
			},
		}}}
	}
	common := &v3tlspb.CommonTlsContext{
		TlsCertificateCertificateProviderInstance: &v3tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "default", CertificateName: "default"},
		ValidationContextType: &v3tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &v3tlspb.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:                     &v3tlspb.CertificateValidationContext{},
			ValidationContextCertificateProviderInstance: &v3tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "default", CertificateName: "ROOTCA"},
		}},
	}
	h := serverHCM(t, withFilters(
		httpFilter(t, "envoy.filters.http.rbac.DENY", rules(v3rbacconfigpb.RBAC_DENY, "spiffe://cluster.local/ns/default/sa/evil")),
		httpFilter(t, "envoy.filters.http.rbac", rules(v3rbacconfigpb.RBAC_ALLOW, "spiffe://cluster.local/ns/default/sa/client")),
		httpFilter(t, "envoy.filters.http.router", &v3routerpb.Router{}),
	))
	fc := chain(t, "inbound-mtls", h, withDownstreamTLS(t, &v3tlspb.DownstreamTlsContext{
		CommonTlsContext:         common,
		RequireClientCertificate: wrapperspb.Bool(true),
	}))
	fc.Filters[0].Name = "inbound-hcmmtls"
	return &v3listenerpb.Listener{
		Name:         "xds.istio.io/grpc/lds/inbound/10.0.0.7:8080",
		Address:      socketAddr("10.0.0.7", 8080),
		FilterChains: []*v3listenerpb.FilterChain{fc},
	}
}

// serverListenerCases are the server-side Listener cases of
// TestListener_Decode.
func serverListenerCases(t testing.TB) []decodeCase[*Listener] {
	router := HTTPFilter{Name: "router", TypeURL: routerTypeURL, Config: mustAny(t, &v3routerpb.Router{})}
	inline, err := routeConfigFromProto(serverRoutes())
	if err != nil {
		t.Fatalf("routeConfigFromProto: %v", err)
	}
	fc := func(name string, mod func(*FilterChain)) FilterChain {
		c := FilterChain{Name: name, InlineRouteConfig: inline, HTTPFilters: []HTTPFilter{router}}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	want := func(addr string, fcs ...FilterChain) *Listener {
		return &Listener{Name: "s", Server: &ServerListener{Address: addr, Port: 8080, FilterChains: fcs}}
	}
	match := func(mod func(*v3listenerpb.FilterChainMatch)) func(*v3listenerpb.FilterChain) {
		m := &v3listenerpb.FilterChainMatch{}
		mod(m)
		return withMatchOf(m)
	}
	optional := func(f *v3httppb.HttpFilter) *v3httppb.HttpFilter { f.IsOptional = true; return f }
	tlsChain := func(ctx *v3tlspb.DownstreamTlsContext) *v3listenerpb.Listener {
		return serverListener("s", chain(t, "c", serverHCM(t), withDownstreamTLS(t, ctx)))
	}
	mustPrefix := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }

	return []decodeCase[*Listener]{
		// Valid server-side Listeners.
		{
			rule: "R-26.1",
			name: "server listener with an inline route configuration",
			give: serverListener("s", chain(t, "c", serverHCM(t))),
			want: want("0.0.0.0", fc("c", nil)),
		},
		{
			rule: "R-26.3",
			name: "server listener with rds",
			give: serverListener("s", chain(t, "c", hcm(t, "routes"))),
			want: want("0.0.0.0", FilterChain{Name: "c", RouteConfigName: "routes", HTTPFilters: []HTTPFilter{router}}),
		},
		{
			rule: "R-26.4",
			name: "Istio inbound listener in STRICT mTLS with an AuthorizationPolicy",
			give: istioInboundListener(t),
			want: func() *Listener {
				l := istioInboundListener(t)
				h := &v3httppb.HttpConnectionManager{}
				if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(h); err != nil {
					t.Fatal(err)
				}
				// The RBAC filters' rules, decoded.
				rules := func(allow bool, principal string) *RBACRules {
					return &RBACRules{Allow: allow, Policies: []RBACPolicy{{
						Name:        "ns-policy-0",
						Permissions: []RBACMatcher{{Kind: RBACAny}},
						Principals: []RBACMatcher{{Kind: RBACAnd, Rules: []RBACMatcher{{Kind: RBACOr, Rules: []RBACMatcher{
							{Kind: RBACAuthenticated, String: &StringMatcher{Kind: StringMatchExact, Value: principal}},
						}}}}},
					}}}
				}
				decoded := []*RBACRules{rules(false, "spiffe://cluster.local/ns/default/sa/evil"), rules(true, "spiffe://cluster.local/ns/default/sa/client"), nil}
				var fs []HTTPFilter
				for i, f := range h.GetHttpFilters() {
					fs = append(fs, HTTPFilter{Name: f.GetName(), TypeURL: f.GetTypedConfig().GetTypeUrl(), Config: f.GetTypedConfig(), RBAC: decoded[i]})
				}
				return &Listener{Name: l.Name, Server: &ServerListener{Address: "10.0.0.7", Port: 8080, FilterChains: []FilterChain{{
					Name:              "inbound-mtls",
					Security:          &ServerSecurityConfig{IdentityInstanceName: "default", IdentityCertName: "default", RootInstanceName: "default", RootCertName: "ROOTCA", RequireClientCertificate: true},
					InlineRouteConfig: inline,
					HTTPFilters:       fs,
				}}}}
			}(),
		},
		{
			rule: "R-26.4",
			name: "TLS without client certificates",
			give: tlsChain(&v3tlspb.DownstreamTlsContext{CommonTlsContext: &v3tlspb.CommonTlsContext{TlsCertificateProviderInstance: provider("id", "id-cert")}}),
			want: want("0.0.0.0", fc("c", func(c *FilterChain) {
				c.Security = &ServerSecurityConfig{IdentityInstanceName: "id", IdentityCertName: "id-cert"}
			})),
		},
		{
			rule: "R-26.4",
			name: "mTLS from the A29 fields",
			give: tlsChain(mtlsContext()),
			want: want("0.0.0.0", fc("c", func(c *FilterChain) {
				c.Security = &ServerSecurityConfig{IdentityInstanceName: "id", IdentityCertName: "id-cert", RootInstanceName: "root", RootCertName: "root-cert", RequireClientCertificate: true}
			})),
		},
		{
			rule: "R-26.1",
			name: "default filter chain only",
			give: &v3listenerpb.Listener{Name: "s", Address: socketAddr("::", 8080), DefaultFilterChain: chain(t, "d", serverHCM(t))},
			want: &Listener{Name: "s", Server: &ServerListener{Address: "::", Port: 8080, DefaultFilterChain: ptr(fc("d", nil))}},
		},
		{
			rule: "R-26.2",
			name: "a chain that never matches beside a default chain",
			give: &v3listenerpb.Listener{Name: "s", Address: socketAddr("0.0.0.0", 8080),
				FilterChains:       []*v3listenerpb.FilterChain{chain(t, "sni", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) { m.ServerNames = []string{"a.example"} }))},
				DefaultFilterChain: chain(t, "d", serverHCM(t)),
			},
			want: &Listener{Name: "s", Server: &ServerListener{Address: "0.0.0.0", Port: 8080,
				FilterChains:       []FilterChain{fc("sni", func(c *FilterChain) { c.Match.ServerNames = []string{"a.example"} })},
				DefaultFilterChain: ptr(fc("d", nil)),
			}},
		},
		{
			rule: "R-26.2",
			name: "CIDR ranges normalized",
			give: serverListener("s", chain(t, "c", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) {
				m.PrefixRanges = []*v3corepb.CidrRange{cidr("10.1.2.3", 40), {AddressPrefix: "192.168.7.7"}, cidr("::ffff:172.16.9.1", 108)}
				m.SourcePrefixRanges = []*v3corepb.CidrRange{cidr("2001:db8::1", 32)}
				m.SourceType = v3listenerpb.FilterChainMatch_EXTERNAL
				m.SourcePorts = []uint32{443}
				m.TransportProtocol = "raw_buffer"
			}))),
			want: want("0.0.0.0", fc("c", func(c *FilterChain) {
				c.Match = FilterChainMatch{
					PrefixRanges:       []netip.Prefix{mustPrefix("10.1.2.3/32"), mustPrefix("0.0.0.0/0"), mustPrefix("172.16.0.0/12")},
					SourcePrefixRanges: []netip.Prefix{mustPrefix("2001:db8::/32")},
					SourceType:         SourceTypeExternal,
					SourcePorts:        []uint32{443},
					TransportProtocol:  "raw_buffer",
				}
			})),
		},
		{
			rule: "R-26.2",
			name: "chains differing only in transport protocol do not overlap",
			give: serverListener("s",
				chain(t, "a", serverHCM(t)),
				chain(t, "b", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) { m.TransportProtocol = "raw_buffer" }))),
			want: want("0.0.0.0", fc("a", nil), fc("b", func(c *FilterChain) { c.Match.TransportProtocol = "raw_buffer" })),
		},
		{
			rule: "R-26.3",
			name: "optional filters a server does not run are left out",
			give: serverListener("s", chain(t, "c", serverHCM(t, withFilters(
				optional(httpFilter(t, "fault", &v3faultpb.HTTPFault{})),
				&v3httppb.HttpFilter{Name: "unknown", IsOptional: true, ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &v3corepb.Node{})}},
				routerFilter(t),
			)))),
			want: want("0.0.0.0", fc("c", nil)),
		},

		// Invalid server-side Listeners.
		{
			rule:    "R-17.2",
			name:    "server listener without chains",
			give:    &v3listenerpb.Listener{Name: "s", Address: socketAddr("0.0.0.0", 80)},
			wantErr: "filter_chains: no filter chain can match a connection and there is no default_filter_chain",
		},
		{
			rule:    "R-26.2",
			name:    "only chains that never match",
			give:    serverListener("s", chain(t, "c", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) { m.DestinationPort = wrapperspb.UInt32(80) }))),
			wantErr: "filter_chains: no filter chain can match",
		},
		{
			rule:    "R-26.1",
			name:    "neither address nor api_listener",
			give:    &v3listenerpb.Listener{Name: "s"},
			wantErr: "address: missing: a server-side Listener needs the address it serves",
		},
		{
			rule: "R-26.1",
			name: "listener filters",
			give: func() proto.Message {
				l := serverListener("s", chain(t, "c", serverHCM(t)))
				l.ListenerFilters = []*v3listenerpb.ListenerFilter{{Name: "tls_inspector"}}
				return l
			}(),
			wantErr: "listener_filters: 1 entries",
		},
		{
			rule: "R-26.1",
			name: "use_original_dst",
			give: func() proto.Message {
				l := serverListener("s", chain(t, "c", serverHCM(t)))
				l.UseOriginalDst = wrapperspb.Bool(true)
				return l
			}(),
			wantErr: "use_original_dst: true is not supported",
		},
		{
			rule: "R-26.1",
			name: "pipe address",
			give: &v3listenerpb.Listener{Name: "s", FilterChains: []*v3listenerpb.FilterChain{chain(t, "c", serverHCM(t))},
				Address: &v3corepb.Address{Address: &v3corepb.Address_Pipe{Pipe: &v3corepb.Pipe{Path: "/tmp/s"}}}},
			wantErr: "address: not a socket_address",
		},
		{
			rule: "R-26.1",
			name: "UDP address",
			give: func() proto.Message {
				l := serverListener("s", chain(t, "c", serverHCM(t)))
				l.Address.GetSocketAddress().Protocol = v3corepb.SocketAddress_UDP
				return l
			}(),
			wantErr: "address.socket_address.protocol: UDP, want TCP",
		},
		{
			rule:    "R-26.1",
			name:    "empty address",
			give:    &v3listenerpb.Listener{Name: "s", Address: socketAddr("", 8080), FilterChains: []*v3listenerpb.FilterChain{chain(t, "c", serverHCM(t))}},
			wantErr: "address.socket_address.address: empty",
		},
		{
			rule: "R-26.1",
			name: "named port",
			give: func() proto.Message {
				l := serverListener("s", chain(t, "c", serverHCM(t)))
				l.Address.GetSocketAddress().PortSpecifier = &v3corepb.SocketAddress_NamedPort{NamedPort: "grpc"}
				return l
			}(),
			wantErr: "address.socket_address.named_port: not supported",
		},
		{
			rule:    "R-26.3",
			name:    "chain without filters",
			give:    serverListener("s", &v3listenerpb.FilterChain{Name: "c"}),
			wantErr: "filter_chains[0].filters: empty",
		},
		{
			rule:    "R-26.3",
			name:    "network filter without a name",
			give:    serverListener("s", chain(t, "c", serverHCM(t), func(fc *v3listenerpb.FilterChain) { fc.Filters[0].Name = "" })),
			wantErr: "filter_chains[0].filters[0].name: empty",
		},
		{
			rule: "R-26.3",
			name: "two HttpConnectionManagers",
			give: serverListener("s", chain(t, "c", serverHCM(t), func(fc *v3listenerpb.FilterChain) {
				second := proto.Clone(fc.Filters[0]).(*v3listenerpb.Filter)
				second.Name = "hcm2"
				fc.Filters = append(fc.Filters, second)
			})),
			wantErr: "filter_chains[0].filters[0]: an HttpConnectionManager must be the only and last network filter",
		},
		{
			rule: "R-26.3",
			name: "duplicate network filter names",
			give: serverListener("s", chain(t, "c", serverHCM(t), func(fc *v3listenerpb.FilterChain) {
				fc.Filters = append(fc.Filters, proto.Clone(fc.Filters[0]).(*v3listenerpb.Filter))
			})),
			wantErr: `filter_chains[0].filters[1].name: duplicate filter name "hcm"`,
		},
		{
			rule:    "R-26.3",
			name:    "network filter of another type",
			give:    serverListener("s", chain(t, "c", &v3routepb.RouteConfiguration{})),
			wantErr: "filter_chains[0].filters[0].typed_config: unsupported network filter type",
		},
		{
			rule: "R-26.3",
			name: "network filter from config discovery",
			give: serverListener("s", chain(t, "c", serverHCM(t), func(fc *v3listenerpb.FilterChain) {
				fc.Filters[0].ConfigType = &v3listenerpb.Filter_ConfigDiscovery{ConfigDiscovery: &v3corepb.ExtensionConfigSource{}}
			})),
			wantErr: "filter_chains[0].filters[0]: no typed_config",
		},
		{
			rule:    "R-26.3",
			name:    "xff_num_trusted_hops on a server",
			give:    serverListener("s", chain(t, "c", serverHCM(t, func(h *v3httppb.HttpConnectionManager) { h.XffNumTrustedHops = 2 }))),
			wantErr: "filter_chains[0].filters[0].typed_config.xff_num_trusted_hops: must be 0",
		},
		{
			rule:    "R-26.3",
			name:    "no route specifier",
			give:    serverListener("s", chain(t, "c", serverHCM(t, func(h *v3httppb.HttpConnectionManager) { h.RouteSpecifier = nil }))),
			wantErr: "filter_chains[0].filters[0].typed_config: no route specifier",
		},
		{
			rule:    "R-26.3",
			name:    "fault injection is not a server filter",
			give:    serverListener("s", chain(t, "c", serverHCM(t, withFilters(httpFilter(t, "fault", &v3faultpb.HTTPFault{}), routerFilter(t))))),
			wantErr: `filter_chains[0].filters[0].typed_config.http_filters[0]: filter "fault" of type "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault" is not supported on servers`,
		},
		{
			rule:    "R-26.3",
			name:    "router not last on a server",
			give:    serverListener("s", chain(t, "c", serverHCM(t, withFilters(routerFilter(t), httpFilter(t, "rbac", &v3rbacpb.RBAC{}))))),
			wantErr: "filter_chains[0].filters[0].typed_config.http_filters[0]: terminal filter",
		},
		{
			rule: "R-26.3",
			name: "invalid RBAC config",
			give: serverListener("s", chain(t, "c", serverHCM(t, withFilters(httpFilter(t, "rbac", &v3rbacpb.RBAC{Rules: &v3rbacconfigpb.RBAC{
				Policies: map[string]*v3rbacconfigpb.Policy{"p": policyWithCondition(t)},
			}}), routerFilter(t))))),
			wantErr: `http_filters[0].typed_config.rules.policies["p"].condition: not supported`,
		},
		{
			rule: "R-26.2",
			name: "invalid CIDR address",
			give: serverListener("s", chain(t, "c", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) {
				m.SourcePrefixRanges = []*v3corepb.CidrRange{cidr("10.0.0.300", 8)}
			}))),
			wantErr: `filter_chains[0].filter_chain_match.source_prefix_ranges[0].address_prefix: "10.0.0.300" is not an IP address`,
		},
		{
			rule:    "R-26.2",
			name:    "unknown source type",
			give:    serverListener("s", chain(t, "c", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) { m.SourceType = 7 }))),
			wantErr: "filter_chains[0].filter_chain_match.source_type: unknown value 7",
		},
		{
			rule:    "R-26.2",
			name:    "two chains with the same match",
			give:    serverListener("s", chain(t, "a", serverHCM(t)), chain(t, "b", serverHCM(t))),
			wantErr: "filter_chains[1].filter_chain_match: overlaps the match of filter_chains[0]",
		},
		{
			rule: "R-26.2",
			name: "chains whose normalized matches share a matcher",
			give: serverListener("s",
				chain(t, "a", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) {
					m.PrefixRanges = []*v3corepb.CidrRange{cidr("192.168.0.0", 24), cidr("10.1.0.0", 16)}
					m.SourcePorts = []uint32{1, 2}
				})),
				chain(t, "b", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) {
					m.PrefixRanges = []*v3corepb.CidrRange{cidr("10.1.9.9", 16)}
					m.SourcePorts = []uint32{2, 3}
				}))),
			wantErr: "filter_chains[1].filter_chain_match: overlaps the match of filter_chains[0]",
		},
		{
			rule: "R-26.2",
			name: "duplicate chains that never match still overlap",
			give: &v3listenerpb.Listener{Name: "s", Address: socketAddr("0.0.0.0", 8080),
				FilterChains: []*v3listenerpb.FilterChain{
					chain(t, "a", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) { m.ApplicationProtocols = []string{"h2"} })),
					chain(t, "b", serverHCM(t), match(func(m *v3listenerpb.FilterChainMatch) { m.ApplicationProtocols = []string{"h2", "http/1.1"} })),
				},
				DefaultFilterChain: chain(t, "d", serverHCM(t)),
			},
			wantErr: "filter_chains[1].filter_chain_match: overlaps the match of filter_chains[0]",
		},
		{
			rule:    "R-26.1",
			name:    "invalid default chain",
			give:    &v3listenerpb.Listener{Name: "s", Address: socketAddr("0.0.0.0", 8080), DefaultFilterChain: &v3listenerpb.FilterChain{}},
			wantErr: "default_filter_chain.filters: empty",
		},
		{
			rule: "R-26.4",
			name: "transport socket of another name",
			give: serverListener("s", chain(t, "c", serverHCM(t), withDownstreamTLS(t, mtlsContext()), func(fc *v3listenerpb.FilterChain) {
				fc.TransportSocket.Name = "raw"
			})),
			wantErr: `filter_chains[0].transport_socket.name: "raw", want "envoy.transport_sockets.tls"`,
		},
		{
			rule: "R-26.4",
			name: "UpstreamTlsContext on a server",
			give: serverListener("s", chain(t, "c", serverHCM(t), func(fc *v3listenerpb.FilterChain) {
				withDownstreamTLS(t, mtlsContext())(fc)
				fc.TransportSocket.ConfigType = &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &v3tlspb.UpstreamTlsContext{})}
			})),
			wantErr: "filter_chains[0].transport_socket.typed_config: type URL",
		},
		{
			rule: "R-26.4",
			name: "require_sni",
			give: tlsChain(func() *v3tlspb.DownstreamTlsContext {
				c := mtlsContext()
				c.RequireSni = wrapperspb.Bool(true)
				return c
			}()),
			wantErr: "transport_socket.typed_config.require_sni: true is not supported",
		},
		{
			rule: "R-26.4",
			name: "strict OCSP stapling",
			give: tlsChain(func() *v3tlspb.DownstreamTlsContext {
				c := mtlsContext()
				c.OcspStaplePolicy = v3tlspb.DownstreamTlsContext_MUST_STAPLE
				return c
			}()),
			wantErr: "transport_socket.typed_config.ocsp_staple_policy: MUST_STAPLE is not supported",
		},
		{
			rule:    "R-26.4",
			name:    "no common TLS context",
			give:    tlsChain(&v3tlspb.DownstreamTlsContext{}),
			wantErr: "transport_socket.typed_config.common_tls_context: missing",
		},
		{
			rule:    "R-26.4",
			name:    "no identity certificate",
			give:    tlsChain(&v3tlspb.DownstreamTlsContext{CommonTlsContext: &v3tlspb.CommonTlsContext{ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: &v3tlspb.CertificateValidationContext{CaCertificateProviderInstance: provider("root", "r")}}}}),
			wantErr: "transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance: missing",
		},
		{
			rule:    "R-26.4",
			name:    "validation context without roots",
			give:    tlsChain(&v3tlspb.DownstreamTlsContext{CommonTlsContext: validationContext(&v3tlspb.CertificateValidationContext{})}),
			wantErr: "validation_context.ca_certificate_provider_instance: missing",
		},
		{
			rule: "R-26.4",
			name: "system root certificates on a server",
			give: tlsChain(&v3tlspb.DownstreamTlsContext{CommonTlsContext: validationContext(&v3tlspb.CertificateValidationContext{
				SystemRootCerts: &v3tlspb.CertificateValidationContext_SystemRootCerts{},
			})}),
			wantErr: "validation_context.system_root_certs: not supported on a server",
		},
		{
			rule: "R-26.4",
			name: "SAN matchers on a server",
			give: tlsChain(&v3tlspb.DownstreamTlsContext{CommonTlsContext: rootVC(func(vc *v3tlspb.CertificateValidationContext) {
				vc.MatchSubjectAltNames = []*v3matcherpb.StringMatcher{{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "x"}}}
			})}),
			wantErr: "validation_context.match_subject_alt_names: not supported on a server",
		},
		{
			rule: "R-26.4",
			name: "client certificates required without roots",
			give: tlsChain(&v3tlspb.DownstreamTlsContext{
				CommonTlsContext:         &v3tlspb.CommonTlsContext{TlsCertificateProviderInstance: provider("id", "c")},
				RequireClientCertificate: wrapperspb.Bool(true),
			}),
			wantErr: "transport_socket.typed_config.require_client_certificate: true without a root certificate provider instance",
		},
		{
			rule: "R-26.4",
			name: "tls_params",
			give: tlsChain(func() *v3tlspb.DownstreamTlsContext {
				c := mtlsContext()
				c.CommonTlsContext.TlsParams = &v3tlspb.TlsParameters{}
				return c
			}()),
			wantErr: "transport_socket.typed_config.common_tls_context.tls_params: not supported",
		},
	}
}

// TestListener_ServerCertificateProviders checks that, with the
// bootstrap's instances, a server-side Listener naming another instance in
// a filter chain's TLS context is invalid, as a Cluster is
//
func TestListener_ServerCertificateProviders(t *testing.T) {
	typ := func(names ...string) ResourceType {
		for _, rt := range BuiltinTypes(WithCertificateProviderInstances(names...)) {
			if rt.TypeURL() == ListenerTypeURL {
				return rt
			}
		}
		t.Fatal("no Listener type")
		return nil
	}
	mtls := serverListener("s", chain(t, "c", serverHCM(t), withDownstreamTLS(t, mtlsContext())))
	withDefault := &v3listenerpb.Listener{Name: "s", Address: socketAddr("0.0.0.0", 8080),
		DefaultFilterChain: chain(t, "d", serverHCM(t), withDownstreamTLS(t, mtlsContext()))}
	for _, tc := range []struct {
		name      string
		give      proto.Message
		instances []string
		wantErr   string
	}{
		{name: "both known", give: mtls, instances: []string{"id", "root"}},
		{name: "identity unknown", give: mtls, instances: []string{"root"}, wantErr: `filter_chains[0].transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: identity certificate provider instance "id" is not in the bootstrap's certificate_providers`},
		{name: "root unknown in the default chain", give: withDefault, instances: []string{"id"}, wantErr: `default_filter_chain.transport_socket.typed_config.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name: root certificate provider instance "root"`},
		{name: "client listener unaffected", give: listener(t, "l", hcm(t, "r")), instances: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := typ(tc.instances...).Decode(mustAny(t, tc.give))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode() error = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ve) {
				t.Fatalf("Decode() error = %v, want a ValidationError containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestFilterChain_SameConfig checks that chains are equal when their messages
// are, which tells a server which connections an update may keep.
func TestFilterChain_SameConfig(t *testing.T) {
	decode := func(l *v3listenerpb.Listener) *ServerListener {
		t.Helper()
		_, v, err := ListenerType.DecodeTyped(mustAny(t, l))
		if err != nil {
			t.Fatal(err)
		}
		return v.Server
	}
	a := decode(serverListener("s", chain(t, "a", serverHCM(t)), chain(t, "b", hcm(t, "r"), withMatchOf(&v3listenerpb.FilterChainMatch{SourcePorts: []uint32{9}}))))
	b := decode(serverListener("s", chain(t, "a", serverHCM(t)), chain(t, "b", hcm(t, "other"), withMatchOf(&v3listenerpb.FilterChainMatch{SourcePorts: []uint32{9}}))))
	if !a.FilterChains[0].SameConfig(&b.FilterChains[0]) {
		t.Errorf("unchanged chain a: SameConfig() = false, want true")
	}
	if a.FilterChains[1].SameConfig(&b.FilterChains[1]) {
		t.Errorf("chain b with another RDS name: SameConfig() = true, want false")
	}
	if a.FilterChains[0].SameConfig(nil) || !(*FilterChain)(nil).SameConfig(nil) {
		t.Errorf("SameConfig with nil: want only nil to equal nil")
	}
}

// TestFilterChainMatch_Unsupported checks which fields make a chain never
// match (gRFC A36).
func TestFilterChainMatch_Unsupported(t *testing.T) {
	for _, tc := range []struct {
		m    FilterChainMatch
		want string
	}{
		{FilterChainMatch{}, ""},
		{FilterChainMatch{TransportProtocol: "raw_buffer", SourceType: SourceTypeExternal, SourcePorts: []uint32{1}}, ""},
		{FilterChainMatch{DestinationPort: 80}, "destination_port"},
		{FilterChainMatch{ServerNames: []string{"a"}}, "server_names"},
		{FilterChainMatch{TransportProtocol: "tls"}, "transport_protocol"},
		{FilterChainMatch{ApplicationProtocols: []string{"h2"}}, "application_protocols"},
		{FilterChainMatch{DirectSourcePrefixRanges: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "direct_source_prefix_ranges"},
	} {
		if got := tc.m.Unsupported(); got != tc.want {
			t.Errorf("%+v.Unsupported() = %q, want %q", tc.m, got, tc.want)
		}
	}
	for st, want := range map[SourceType]string{SourceTypeAny: "ANY", SourceTypeSameIPOrLoopback: "SAME_IP_OR_LOOPBACK", SourceTypeExternal: "EXTERNAL", 9: "SourceType(9)"} {
		if got := st.String(); got != want {
			t.Errorf("SourceType(%d).String() = %q, want %q", st, got, want)
		}
	}
}
