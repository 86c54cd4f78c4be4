// SPDX-License-Identifier: Apache-2.0

// Package xdsbuild builds xDS resources that gRPC accepts, for the
// snapshots of package mgmtserver: demos, tools and tests. Every builder
// returns a fresh message the caller owns and may modify, and its output
// decodes without error with the decoders of package resources, which
// apply gRPC's validation rules; the tests of this package check that.
//
// # Client side
//
// Listener (RDS) and ListenerInline build API Listeners, RouteConfig,
// RouteConfigToClusters, RouteConfigWithVirtualHosts, VirtualHost,
// ClusterRoute and WeightedClustersRoute RouteConfigurations, Cluster (EDS),
// LogicalDNSCluster and AggregateCluster Clusters, and Endpoints
// ClusterLoadAssignments. Chain builds a whole snapshot, one valid
// Listener → RouteConfiguration → Cluster → ClusterLoadAssignment chain,
// and Canary the snapshot of a canary deployment (routes by header and by
// path, weighted clusters). CookieSessionFilter, SessionDisabled and
// WithHTTPFilter add HTTP filters (gRFC A55).
//
// # Security
//
// UpstreamTLS and WithUpstreamTLS give a Cluster the transport socket of
// xDS mTLS (gRFC A29), ExactSAN and PrefixSAN its accepted server
// identities; WithCertificateProviders adds file_watcher certificate
// provider instances to a bootstrap (for example one from
// mgmtserver.Server.Bootstrap).
//
// # Server side
//
// ServerListener, ServerFilterChain, ServerRouteConfig and
// IstioInboundListener build the Listeners of xDS-enabled servers (gRFC
// A36), DownstreamTLS their TLS, RBACFilter, RBACRules, RBACPerRoute and
// PrincipalName their authorization (gRFC A41);
// WithServerListenerTemplate sets a bootstrap's
// server_listener_resource_name_template.
//
// The builders panic on a programming error, as regexp.MustCompile does:
// an address that is not IP:PORT (ServerListener), a Listener without an
// HttpConnectionManager (WithHTTPFilter), a message that cannot be
// marshalled (MarshalAny: a string field that is not UTF-8). The functions
// that edit a bootstrap return an error for input that is not a JSON
// object.
package xdsbuild
