// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 IstioInboundListener sends the deprecated certificate provider fields Istio sends, which gRPC still reads.

package xdsbuild

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3streampb "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// The server-side builders make the Listeners of xDS-enabled gRPC servers
// (gRFC A36; package server of this module, grpc-go's xds.GRPCServer):
// a Listener without api_listener, at the server's listening address,
// whose filter chains carry an HttpConnectionManager with the routes and
// HTTP filters (RBAC, router) of the RPCs and, for TLS, a
// DownstreamTlsContext.

// IstioInboundListenerPrefix is the prefix of the Listener names Istio's
// gRPC generator serves a proxyless server: its bootstrap's
// server_listener_resource_name_template is this prefix followed by "%s".
const IstioInboundListenerPrefix = "xds.istio.io/grpc/lds/inbound/"

// ServerRouteConfig returns a RouteConfiguration named name for a
// server: one virtual host for every authority ("*") with one route,
// every path (prefix "/"), whose action is non_forwarding_action (gRFC
// A36), the shape Istio sends.
func ServerRouteConfig(name string) *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{Name: name, VirtualHosts: []*v3routepb.VirtualHost{{
		Name:    "inbound",
		Domains: []string{"*"},
		Routes: []*v3routepb.Route{{
			Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
			Action: &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}},
		}},
	}}}
}

// FilterChainOptions describe one filter chain of a server Listener.
type FilterChainOptions struct {
	// Name is the chain's name. Default "chain".
	Name string
	// Match is filter_chain_match; nil matches every connection.
	Match *v3listenerpb.FilterChainMatch
	// RouteConfigName, when set, makes the HttpConnectionManager fetch
	// that RouteConfiguration over ADS (rds); otherwise RouteConfig is
	// inlined, or ServerRouteConfig("inbound") when RouteConfig is nil.
	RouteConfigName string
	// RouteConfig is the inline route_config, when RouteConfigName is "".
	RouteConfig *v3routepb.RouteConfiguration
	// HTTPFilters run before the router, which is added last: for
	// example RBACFilter.
	HTTPFilters []*v3httppb.HttpFilter
	// TLS, when set, is the chain's transport socket (DownstreamTLS);
	// nil is plaintext (the server's fallback credentials).
	TLS *v3corepb.TransportSocket
}

// ServerFilterChain returns the filter chain o describes: one network
// filter, an HttpConnectionManager named "hcm".
func ServerFilterChain(o FilterChainOptions) *v3listenerpb.FilterChain {
	name := o.Name
	if name == "" {
		name = "chain"
	}
	hcm := &v3httppb.HttpConnectionManager{HttpFilters: append(append([]*v3httppb.HttpFilter(nil), o.HTTPFilters...), &v3httppb.HttpFilter{
		Name:       "router",
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: MarshalAny(&v3routerpb.Router{})},
	})}
	switch {
	case o.RouteConfigName != "":
		hcm.RouteSpecifier = &v3httppb.HttpConnectionManager_Rds{Rds: &v3httppb.Rds{ConfigSource: adsConfigSource(), RouteConfigName: o.RouteConfigName}}
	case o.RouteConfig != nil:
		hcm.RouteSpecifier = &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: o.RouteConfig}
	default:
		hcm.RouteSpecifier = &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: ServerRouteConfig("inbound")}
	}
	return &v3listenerpb.FilterChain{
		Name:             name,
		FilterChainMatch: o.Match,
		Filters: []*v3listenerpb.Filter{{
			Name:       "hcm",
			ConfigType: &v3listenerpb.Filter_TypedConfig{TypedConfig: MarshalAny(hcm)},
		}},
		TransportSocket: o.TLS,
	}
}

// ServerListener returns a server-side Listener named name at address
// ("IP:port", the listening address of the server) with the filter
// chains chains (see ServerFilterChain). It panics if address is not
// "host:port" with a numeric port (a test's mistake).
func ServerListener(name, address string, chains ...*v3listenerpb.FilterChain) *v3listenerpb.Listener {
	host, port := splitAddress(address)
	return &v3listenerpb.Listener{
		Name: name,
		Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
			Address:       host,
			PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains: chains,
	}
}

func splitAddress(address string) (string, uint32) {
	host, p, err := net.SplitHostPort(address)
	if err != nil {
		panic(fmt.Sprintf("xdsbuild: server address %q: %v", address, err))
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		panic(fmt.Sprintf("xdsbuild: server address %q: port: %v", address, err))
	}
	return host, uint32(port)
}

// DownstreamTLSOptions describe the DownstreamTlsContext of DownstreamTLS
// (gRFC A29): the certificate provider instances of the bootstrap that
// give the server's certificate and the roots of client certificates.
type DownstreamTLSOptions struct {
	// IdentityInstance and IdentityCertName are
	// tls_certificate_provider_instance (required).
	IdentityInstance, IdentityCertName string
	// RootInstance and RootCertName are
	// validation_context.ca_certificate_provider_instance; "" asks for no
	// client certificate (TLS rather than mTLS).
	RootInstance, RootCertName string
	// RequireClientCertificate is require_client_certificate.
	RequireClientCertificate bool
}

// DownstreamTLS returns an envoy.transport_sockets.tls transport socket
// holding the DownstreamTlsContext that o describes, with the gRFC A29
// fields.
func DownstreamTLS(o DownstreamTLSOptions) *v3corepb.TransportSocket {
	common := &v3tlspb.CommonTlsContext{
		TlsCertificateProviderInstance: &v3tlspb.CertificateProviderPluginInstance{InstanceName: o.IdentityInstance, CertificateName: o.IdentityCertName},
	}
	if o.RootInstance != "" {
		common.ValidationContextType = &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: &v3tlspb.CertificateValidationContext{
			CaCertificateProviderInstance: &v3tlspb.CertificateProviderPluginInstance{InstanceName: o.RootInstance, CertificateName: o.RootCertName},
		}}
	}
	return downstreamSocket(&v3tlspb.DownstreamTlsContext{CommonTlsContext: common, RequireClientCertificate: wrapperspb.Bool(o.RequireClientCertificate)})
}

func downstreamSocket(ctx *v3tlspb.DownstreamTlsContext) *v3corepb.TransportSocket {
	return &v3corepb.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: MarshalAny(ctx)},
	}
}

// RBACFilter returns an RBAC HTTP filter (gRFC A41) named name with rules
// (nil: the filter enforces nothing).
func RBACFilter(name string, rules *v3rbacconfigpb.RBAC) *v3httppb.HttpFilter {
	return &v3httppb.HttpFilter{
		Name:       name,
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: MarshalAny(&v3rbacpb.RBAC{Rules: rules})},
	}
}

// RBACPerRoute returns the typed_per_filter_config entry that replaces
// an RBAC filter's rules on a route or virtual host (nil rules: the
// filter enforces nothing there).
func RBACPerRoute(rules *v3rbacconfigpb.RBAC) *v3rbacpb.RBACPerRoute {
	if rules == nil {
		return &v3rbacpb.RBACPerRoute{}
	}
	return &v3rbacpb.RBACPerRoute{Rbac: &v3rbacpb.RBAC{Rules: rules}}
}

// RBACRules returns RBAC rules with action and one policy per entry of
// policies (policy name → the SPIFFE IDs, or other principal names, of
// the clients it matches, by exact match of authenticated.principal_name;
// any permission). An empty list of names matches any client.
func RBACRules(action v3rbacconfigpb.RBAC_Action, policies map[string][]string) *v3rbacconfigpb.RBAC {
	r := &v3rbacconfigpb.RBAC{Action: action, Policies: make(map[string]*v3rbacconfigpb.Policy, len(policies))}
	for name, ids := range policies {
		p := &v3rbacconfigpb.Policy{Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Any{Any: true}}}}
		if len(ids) == 0 {
			p.Principals = []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}}
		}
		for _, id := range ids {
			p.Principals = append(p.Principals, PrincipalName(id))
		}
		r.Policies[name] = p
	}
	return r
}

// PrincipalName returns the principal whose client certificate's URI SAN
// (or DNS SAN, or subject) is exactly name (gRFC A41).
func PrincipalName(name string) *v3rbacconfigpb.Principal {
	return &v3rbacconfigpb.Principal{Identifier: &v3rbacconfigpb.Principal_Authenticated_{Authenticated: &v3rbacconfigpb.Principal_Authenticated{
		PrincipalName: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: name}},
	}}}
}

// StdoutAuditLogger returns the audit logger config of the standard
// stdout logger of gRFC A59 (StdoutAuditLog), for the
// audit_logging_options of RBAC rules.
func StdoutAuditLogger() *v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig {
	return &v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{
		AuditLogger: &v3corepb.TypedExtensionConfig{Name: "stdout_logger", TypedConfig: MarshalAny(&v3streampb.StdoutAuditLog{})},
	}
}

// TypedStructAuditLogger returns the config of a custom audit logger
// (gRFC A59): a TypedStruct whose type URL's last path segment names the
// logger's builder, with value (nil: none) as its JSON config. It panics
// if value does not convert to a protobuf Struct (a test's mistake).
func TypedStructAuditLogger(typeURL string, value map[string]any, optional bool) *v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig {
	ts := &v3xdstypepb.TypedStruct{TypeUrl: typeURL}
	if value != nil {
		s, err := structpb.NewStruct(value)
		if err != nil {
			panic(fmt.Sprintf("xdsbuild: TypedStructAuditLogger: %v", err))
		}
		ts.Value = s
	}
	return &v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{
		AuditLogger: &v3corepb.TypedExtensionConfig{Name: "logger", TypedConfig: MarshalAny(ts)},
		IsOptional:  optional,
	}
}

// IstioInboundOptions describe IstioInboundListener: the mTLS mode and
// AuthorizationPolicies of the workload.
type IstioInboundOptions struct {
	// Plaintext is Istio's DISABLE (or PERMISSIVE, which its gRPC
	// generator serves as DISABLE): no transport socket. Otherwise STRICT
	// mTLS with the certificate provider instance "default" (certificate
	// "default" for the server, "ROOTCA" for the roots).
	Plaintext bool
	// Deny and Allow are the SPIFFE IDs of the clients of a DENY and an
	// ALLOW AuthorizationPolicy rule; empty leaves the filter out (Istio
	// sends an RBAC filter only for policies that exist).
	Deny, Allow []string
}

// IstioInboundListener returns the inbound Listener of a proxyless gRPC
// server at address ("IP:port") in the shape Istio's gRPC generator
// (pilot/pkg/networking/grpcgen) sends it: named
// IstioInboundListenerPrefix+address; one filter chain without match,
// "inbound-mtls" (or "inbound-plaintext"), whose HttpConnectionManager
// "inbound-hcm…" inlines the RouteConfiguration "inbound" (one virtual
// host without a name, domains "*", a non_forwarding_action route for
// every path) with the RBAC filters "envoy.filters.http.rbac.DENY" and
// "envoy.filters.http.rbac" (policies named "ns-name-0" whose principals
// are and_ids of or_ids of authenticated principal names) and the router
// "envoy.filters.http.router"; in STRICT mTLS, a DownstreamTlsContext
// with both the deprecated certificate provider fields and the gRFC A29
// ones, naming the instance "default", and require_client_certificate.
// The bootstrap must have a certificate provider instance "default"
// (Istio's agent writes a file_watcher one).
func IstioInboundListener(address string, o IstioInboundOptions) *v3listenerpb.Listener {
	suffix := "mtls"
	if o.Plaintext {
		suffix = "plaintext"
	}
	var filters []*v3httppb.HttpFilter
	if len(o.Deny) > 0 {
		filters = append(filters, RBACFilter("envoy.filters.http.rbac.DENY", istioRules(v3rbacconfigpb.RBAC_DENY, o.Deny)))
	}
	if len(o.Allow) > 0 {
		filters = append(filters, RBACFilter("envoy.filters.http.rbac", istioRules(v3rbacconfigpb.RBAC_ALLOW, o.Allow)))
	}
	filters = append(filters, &v3httppb.HttpFilter{
		Name:       "envoy.filters.http.router",
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: MarshalAny(&v3routerpb.Router{})},
	})
	rc := ServerRouteConfig("inbound")
	rc.VirtualHosts[0].Name = ""
	hcm := &v3httppb.HttpConnectionManager{
		RouteSpecifier: &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: rc},
		HttpFilters:    filters,
	}
	fc := &v3listenerpb.FilterChain{
		Name: "inbound-" + suffix,
		Filters: []*v3listenerpb.Filter{{
			Name:       "inbound-hcm" + suffix,
			ConfigType: &v3listenerpb.Filter_TypedConfig{TypedConfig: MarshalAny(hcm)},
		}},
	}
	if !o.Plaintext {
		fc.TransportSocket = downstreamSocket(&v3tlspb.DownstreamTlsContext{
			CommonTlsContext: &v3tlspb.CommonTlsContext{
				TlsCertificateProviderInstance:            &v3tlspb.CertificateProviderPluginInstance{InstanceName: "default", CertificateName: "default"},
				TlsCertificateCertificateProviderInstance: &v3tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "default", CertificateName: "default"},
				ValidationContextType: &v3tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &v3tlspb.CommonTlsContext_CombinedCertificateValidationContext{
					ValidationContextCertificateProviderInstance: &v3tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "default", CertificateName: "ROOTCA"},
					DefaultValidationContext: &v3tlspb.CertificateValidationContext{
						CaCertificateProviderInstance: &v3tlspb.CertificateProviderPluginInstance{InstanceName: "default", CertificateName: "ROOTCA"},
					},
				}},
			},
			RequireClientCertificate: wrapperspb.Bool(true),
		})
	}
	return ServerListener(IstioInboundListenerPrefix+address, address, fc)
}

// istioRules are the rules of one Istio AuthorizationPolicy rule whose
// source principals are ids, as Istio's authz builder writes them.
func istioRules(action v3rbacconfigpb.RBAC_Action, ids []string) *v3rbacconfigpb.RBAC {
	var or []*v3rbacconfigpb.Principal
	for _, id := range ids {
		or = append(or, PrincipalName(id))
	}
	return &v3rbacconfigpb.RBAC{Action: action, Policies: map[string]*v3rbacconfigpb.Policy{
		"ns-policy-0": {
			Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_AndRules{AndRules: &v3rbacconfigpb.Permission_Set{
				Rules: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Any{Any: true}}},
			}}}},
			Principals: []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_AndIds{AndIds: &v3rbacconfigpb.Principal_Set{Ids: []*v3rbacconfigpb.Principal{
				{Identifier: &v3rbacconfigpb.Principal_OrIds{OrIds: &v3rbacconfigpb.Principal_Set{Ids: or}}},
			}}}}},
		},
	}}
}

// WithServerListenerTemplate returns the bootstrap JSON b (from
// Bootstrap) with server_listener_resource_name_template set to tmpl
// (for example IstioInboundListenerPrefix+"%s"). It returns an error
// when b is not a JSON object.
func WithServerListenerTemplate(b []byte, tmpl string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("xdsbuild: the bootstrap is not a JSON object: %w", err)
	}
	js, err := json.Marshal(tmpl)
	if err != nil {
		return nil, fmt.Errorf("xdsbuild: encoding the template: %w", err)
	}
	doc["server_listener_resource_name_template"] = js
	return json.MarshalIndent(doc, "", "  ")
}
