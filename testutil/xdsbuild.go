// SPDX-License-Identifier: Apache-2.0

package testutil

// The resource builders are package xdsbuild's (mgmtserver/xdsbuild); these
// names keep the tests that use them through testutil unchanged.

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/mgmtserver/xdsbuild"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// IstioInboundListenerPrefix is xdsbuild.IstioInboundListenerPrefix.
const IstioInboundListenerPrefix = xdsbuild.IstioInboundListenerPrefix

// CanaryOptions is xdsbuild.CanaryOptions.
type CanaryOptions = xdsbuild.CanaryOptions

// ChainOptions is xdsbuild.ChainOptions.
type ChainOptions = xdsbuild.ChainOptions

// ClusterWeight is xdsbuild.ClusterWeight.
type ClusterWeight = xdsbuild.ClusterWeight

// DownstreamTLSOptions is xdsbuild.DownstreamTLSOptions.
type DownstreamTLSOptions = xdsbuild.DownstreamTLSOptions

// FileWatcher is xdsbuild.FileWatcher.
type FileWatcher = xdsbuild.FileWatcher

// FilterChainOptions is xdsbuild.FilterChainOptions.
type FilterChainOptions = xdsbuild.FilterChainOptions

// IstioInboundOptions is xdsbuild.IstioInboundOptions.
type IstioInboundOptions = xdsbuild.IstioInboundOptions

// UpstreamTLSOptions is xdsbuild.UpstreamTLSOptions.
type UpstreamTLSOptions = xdsbuild.UpstreamTLSOptions

// AggregateCluster is xdsbuild.AggregateCluster.
func AggregateCluster(name string, children ...string) *v3clusterpb.Cluster {
	return xdsbuild.AggregateCluster(name, children...)
}

// Canary is xdsbuild.Canary.
func Canary(o CanaryOptions) Resources {
	return xdsbuild.Canary(o)
}

// Chain is xdsbuild.Chain.
func Chain(o ChainOptions) Resources {
	return xdsbuild.Chain(o)
}

// Cluster is xdsbuild.Cluster.
func Cluster(name, edsServiceName string) *v3clusterpb.Cluster {
	return xdsbuild.Cluster(name, edsServiceName)
}

// ClusterRoute is xdsbuild.ClusterRoute.
func ClusterRoute(prefix, cluster string) *v3routepb.Route {
	return xdsbuild.ClusterRoute(prefix, cluster)
}

// CookieSessionFilter is xdsbuild.CookieSessionFilter.
func CookieSessionFilter(cookieName, path string, ttl time.Duration) *v3httppb.HttpFilter {
	return xdsbuild.CookieSessionFilter(cookieName, path, ttl)
}

// DownstreamTLS is xdsbuild.DownstreamTLS.
func DownstreamTLS(o DownstreamTLSOptions) *v3corepb.TransportSocket {
	return xdsbuild.DownstreamTLS(o)
}

// Endpoints is xdsbuild.Endpoints.
func Endpoints(clusterName, host string, ports ...uint32) *v3endpointpb.ClusterLoadAssignment {
	return xdsbuild.Endpoints(clusterName, host, ports...)
}

// ExactSAN is xdsbuild.ExactSAN.
func ExactSAN(san string) *v3matcherpb.StringMatcher {
	return xdsbuild.ExactSAN(san)
}

// IstioInboundListener is xdsbuild.IstioInboundListener.
func IstioInboundListener(address string, o IstioInboundOptions) *v3listenerpb.Listener {
	return xdsbuild.IstioInboundListener(address, o)
}

// Listener is xdsbuild.Listener.
func Listener(name, routeConfigName string) *v3listenerpb.Listener {
	return xdsbuild.Listener(name, routeConfigName)
}

// ListenerInline is xdsbuild.ListenerInline.
func ListenerInline(name string, rc *v3routepb.RouteConfiguration) *v3listenerpb.Listener {
	return xdsbuild.ListenerInline(name, rc)
}

// LogicalDNSCluster is xdsbuild.LogicalDNSCluster.
func LogicalDNSCluster(name, host string, port uint32) *v3clusterpb.Cluster {
	return xdsbuild.LogicalDNSCluster(name, host, port)
}

// MarshalAny is xdsbuild.MarshalAny.
func MarshalAny(m proto.Message) *anypb.Any {
	return xdsbuild.MarshalAny(m)
}

// PrefixSAN is xdsbuild.PrefixSAN.
func PrefixSAN(prefix string) *v3matcherpb.StringMatcher {
	return xdsbuild.PrefixSAN(prefix)
}

// PrincipalName is xdsbuild.PrincipalName.
func PrincipalName(name string) *v3rbacconfigpb.Principal {
	return xdsbuild.PrincipalName(name)
}

// RBACFilter is xdsbuild.RBACFilter.
func RBACFilter(name string, rules *v3rbacconfigpb.RBAC) *v3httppb.HttpFilter {
	return xdsbuild.RBACFilter(name, rules)
}

// RBACPerRoute is xdsbuild.RBACPerRoute.
func RBACPerRoute(rules *v3rbacconfigpb.RBAC) *v3rbacpb.RBACPerRoute {
	return xdsbuild.RBACPerRoute(rules)
}

// RBACRules is xdsbuild.RBACRules.
func RBACRules(action v3rbacconfigpb.RBAC_Action, policies map[string][]string) *v3rbacconfigpb.RBAC {
	return xdsbuild.RBACRules(action, policies)
}

// RouteConfig is xdsbuild.RouteConfig.
func RouteConfig(name, domain, cluster string) *v3routepb.RouteConfiguration {
	return xdsbuild.RouteConfig(name, domain, cluster)
}

// RouteConfigToClusters is xdsbuild.RouteConfigToClusters.
func RouteConfigToClusters(name, domain string, clusters ...string) *v3routepb.RouteConfiguration {
	return xdsbuild.RouteConfigToClusters(name, domain, clusters...)
}

// RouteConfigWithVirtualHosts is xdsbuild.RouteConfigWithVirtualHosts.
func RouteConfigWithVirtualHosts(name string, vhs ...*v3routepb.VirtualHost) *v3routepb.RouteConfiguration {
	return xdsbuild.RouteConfigWithVirtualHosts(name, vhs...)
}

// ServerFilterChain is xdsbuild.ServerFilterChain.
func ServerFilterChain(o FilterChainOptions) *v3listenerpb.FilterChain {
	return xdsbuild.ServerFilterChain(o)
}

// ServerListener is xdsbuild.ServerListener.
func ServerListener(name, address string, chains ...*v3listenerpb.FilterChain) *v3listenerpb.Listener {
	return xdsbuild.ServerListener(name, address, chains...)
}

// ServerRouteConfig is xdsbuild.ServerRouteConfig.
func ServerRouteConfig(name string) *v3routepb.RouteConfiguration {
	return xdsbuild.ServerRouteConfig(name)
}

// SessionDisabled is xdsbuild.SessionDisabled.
func SessionDisabled() *anypb.Any {
	return xdsbuild.SessionDisabled()
}

// UpstreamTLS is xdsbuild.UpstreamTLS.
func UpstreamTLS(o UpstreamTLSOptions) *v3corepb.TransportSocket {
	return xdsbuild.UpstreamTLS(o)
}

// VirtualHost is xdsbuild.VirtualHost.
func VirtualHost(name string, domains []string, routes ...*v3routepb.Route) *v3routepb.VirtualHost {
	return xdsbuild.VirtualHost(name, domains, routes...)
}

// WeightedClustersRoute is xdsbuild.WeightedClustersRoute.
func WeightedClustersRoute(prefix string, clusters ...ClusterWeight) *v3routepb.Route {
	return xdsbuild.WeightedClustersRoute(prefix, clusters...)
}

// WithCertificateProviders is xdsbuild.WithCertificateProviders.
func WithCertificateProviders(b []byte, providers map[string]FileWatcher) ([]byte, error) {
	return xdsbuild.WithCertificateProviders(b, providers)
}

// WithHTTPFilter is xdsbuild.WithHTTPFilter.
func WithHTTPFilter(l *v3listenerpb.Listener, f *v3httppb.HttpFilter) *v3listenerpb.Listener {
	return xdsbuild.WithHTTPFilter(l, f)
}

// WithServerListenerTemplate is xdsbuild.WithServerListenerTemplate.
func WithServerListenerTemplate(b []byte, tmpl string) ([]byte, error) {
	return xdsbuild.WithServerListenerTemplate(b, tmpl)
}

// WithUpstreamTLS is xdsbuild.WithUpstreamTLS.
func WithUpstreamTLS(c *v3clusterpb.Cluster, o UpstreamTLSOptions) *v3clusterpb.Cluster {
	return xdsbuild.WithUpstreamTLS(c, o)
}
