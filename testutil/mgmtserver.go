// SPDX-License-Identifier: Apache-2.0

package testutil

// The management server and the resource builders moved to package
// mgmtserver; these names keep the tests that use them through testutil
// unchanged.

import "github.com/proxyless/xds/mgmtserver"

const InMemoryAddress = mgmtserver.InMemoryAddress
const IstioInboundListenerPrefix = mgmtserver.IstioInboundListenerPrefix

var AggregateCluster = mgmtserver.AggregateCluster
var Canary = mgmtserver.Canary
var Chain = mgmtserver.Chain
var Cluster = mgmtserver.Cluster
var ClusterRoute = mgmtserver.ClusterRoute
var CookieSessionFilter = mgmtserver.CookieSessionFilter
var DownstreamTLS = mgmtserver.DownstreamTLS
var Endpoints = mgmtserver.Endpoints
var ExactSAN = mgmtserver.ExactSAN
var IstioInboundListener = mgmtserver.IstioInboundListener
var Listener = mgmtserver.Listener
var ListenerInline = mgmtserver.ListenerInline
var LogicalDNSCluster = mgmtserver.LogicalDNSCluster
var MarshalAny = mgmtserver.MarshalAny
var NewLRSServer = mgmtserver.NewLRSServer
var NewManagementServer = mgmtserver.NewManagementServer
var PrefixSAN = mgmtserver.PrefixSAN
var PrincipalName = mgmtserver.PrincipalName
var RBACFilter = mgmtserver.RBACFilter
var RBACPerRoute = mgmtserver.RBACPerRoute
var RBACRules = mgmtserver.RBACRules
var RouteConfig = mgmtserver.RouteConfig
var RouteConfigToClusters = mgmtserver.RouteConfigToClusters
var RouteConfigWithVirtualHosts = mgmtserver.RouteConfigWithVirtualHosts
var ServerFilterChain = mgmtserver.ServerFilterChain
var ServerListener = mgmtserver.ServerListener
var ServerRouteConfig = mgmtserver.ServerRouteConfig
var SessionDisabled = mgmtserver.SessionDisabled
var StartManagementServer = mgmtserver.StartManagementServer
var UpstreamTLS = mgmtserver.UpstreamTLS
var VirtualHost = mgmtserver.VirtualHost
var WeightedClustersRoute = mgmtserver.WeightedClustersRoute
var WithCertificateProviders = mgmtserver.WithCertificateProviders
var WithHTTPFilter = mgmtserver.WithHTTPFilter
var WithServerListenerTemplate = mgmtserver.WithServerListenerTemplate
var WithUpstreamTLS = mgmtserver.WithUpstreamTLS

type BootstrapOptions = mgmtserver.BootstrapOptions
type CanaryOptions = mgmtserver.CanaryOptions
type ChainOptions = mgmtserver.ChainOptions
type ClusterWeight = mgmtserver.ClusterWeight
type DownstreamTLSOptions = mgmtserver.DownstreamTLSOptions
type FileWatcher = mgmtserver.FileWatcher
type FilterChainOptions = mgmtserver.FilterChainOptions
type IstioInboundOptions = mgmtserver.IstioInboundOptions
type LRSServer = mgmtserver.LRSServer
type LRSServerOptions = mgmtserver.LRSServerOptions
type ManagementServer = mgmtserver.ManagementServer
type NamedResource = mgmtserver.NamedResource
type Request = mgmtserver.Request
type Resources = mgmtserver.Resources
type ServerOptions = mgmtserver.ServerOptions
type UpstreamTLSOptions = mgmtserver.UpstreamTLSOptions
