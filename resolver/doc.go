// SPDX-License-Identifier: Apache-2.0

// Package resolver is a gRPC name resolver for xDS targets: a
// google.golang.org/grpc/resolver.Builder that turns the xDS configuration
// of a target, watched through a client of package client, into the
// endpoints and load balancing policy of a grpc.ClientConn. It is
// registered explicitly, never by an init function:
//
//	c, err := client.New(cfg)                           // cfg from bootstrap.FromEnv
//	defer c.Close()                                     // after every ClientConn
//	cc, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(resolver.NewBuilder(c)),
//		grpc.WithTransportCredentials(insecure.NewCredentials()))
//
// Each resolver starts a dependency manager (package depmgr, gRFC A74) on
// its target's Listener, and converts each complete configuration it
// publishes into a resolver.State: the endpoints the channel balances
// over, and a service config that names the balancer.
//
// The channel gets the endpoints of one route, with one balancer: a
// resolver cannot choose a cluster per RPC, which gRPC's own xDS resolver
// does with an internal API (its config selector). Read "What is
// honoured" before relying on routing features.
//
// # Targets
//
// A target "xds:///name" (or "xds:name") names the Listener made from the
// bootstrap's client_default_listener_resource_name_template ("%s" by
// default, so the Listener "name"), and "xds://authority/name" the one
// made from that authority's client_listener_resource_name_template; the
// name is percent-encoded when the template is an xdstp:// name (R-5.4,
// gRFC A47; see bootstrap.Config.ListenerResourceName). Build fails
// when the authority is not in the bootstrap's "authorities" (the error
// wraps bootstrap.ErrUnknownAuthority), or when the target has no name.
// The virtual host is selected for the data-plane authority "name": the
// target's path without its leading "/", whatever the channel's
// own authority (grpc.WithAuthority) is; gRPC Go uses the channel's
// authority, which is the same unless overridden. WithScheme serves
// another scheme.
//
// # What is honoured
//
// The route. The resolver uses one route of the selected virtual host,
// its default route: the first route whose match takes every RPC (path
// prefix "" or "/", no header matcher, no runtime fraction below 100%),
// or, when no route does, the last route. Every RPC of the channel goes
// where that route says, whatever its method and metadata: per-RPC route
// matching is not done, and the other routes are ignored (though depmgr
// watches their clusters). Its action must be cluster or
// weighted_clusters; cluster_specifier_plugin (RLS), non_forwarding and
// the other actions are errors wrapping ErrUnsupported.
//
// The clusters. For each cluster of the route the resolver picks the
// endpoints of one priority: the highest priority (lowest number) that
// has a usable endpoint. Usable means health status HEALTHY or UNKNOWN,
// as in gRPC (gRFC A27; gRPC Go's cluster resolver): UNHEALTHY, DRAINING,
// TIMEOUT and DEGRADED endpoints are left out (Envoy would use DEGRADED
// ones as a last resort; gRPC does not). So when every endpoint of
// priority 0 is UNHEALTHY the channel fails over to priority 1, and back
// when one recovers. Every usable endpoint of that priority becomes one
// resolver.Endpoint with all its addresses (gRFC A61), in locality order,
// then endpoint order. For an aggregate cluster, its leaf clusters are
// taken in priority order and the first one with a usable endpoint is
// used, with its own load balancing policy (gRFC A37, A75). A LOGICAL_DNS
// cluster gives the addresses its host resolves to, as one endpoint.
//
// Weighted clusters. The State holds the union of the endpoints of the
// route's clusters (an endpoint whose addresses are already there, from
// another cluster, is left out). round_robin, least_request and
// weighted_round_robin ignore endpoint weights, so they spread RPCs by
// endpoint count, not by cluster weight: weighted splitting is not
// honoured with them. ring_hash and pick_first's shuffle read the weight
// each endpoint carries (below), which includes the cluster's share. A
// cluster of the route with an error or no usable endpoint is left out
// and its share goes to the others (gRPC would fail its share of RPCs);
// the channel fails only when every cluster does. The clusters the
// resolver uses must have the same load balancing policy, since a
// channel has one: else the configuration is an error wrapping
// ErrUnsupported.
//
// Weights and attributes. Each resolver.Endpoint carries an EndpointInfo
// (EndpointInfoFromEndpoint: clusters, locality, priority, locality and
// endpoint weights, health status), its A76 hash key
// (resolver/ringhash.SetHashKey) when the endpoint has one, and a
// weight (experimental/balancer/weight): the endpoint's share of the
// cluster (its weight over its locality's usable endpoints, times its
// locality's weight over the localities of the priority that have usable
// endpoints) times its cluster's share of the route, in the UQ1.31 fixed
// point gRPC Go uses (gRFC A113). Locality weights (xds_wrr_locality) are
// not honoured by round_robin and least_request, which see one flat list.
//
// The load balancing policy becomes the service config: ROUND_ROBIN →
// round_robin; LEAST_REQUEST → least_request_experimental (choiceCount);
// RING_HASH → ring_hash_experimental (minRingSize, maxRingSize; grpc caps
// the ring at GRPC_RING_HASH_CAP, 4096 by default); PICK_FIRST →
// pick_first (shuffleAddressList); WEIGHTED_ROUND_ROBIN →
// weighted_round_robin (its periods and penalty). The balancer must be
// registered in the program: this package imports every one of them, so
// they are; a policy whose balancer is not registered would be an error
// wrapping ErrUnsupported that names the package to import.
//
// Ring hash. gRPC computes an RPC's hash from the route's hash policies
// in its config selector, which a resolver cannot reach; the resolver
// uses ring_hash's requestHashHeader (gRFC A76) instead. A route with one
// hash policy on a header (without regex_rewrite) hashes that header,
// exactly as gRPC would: its values joined with ",", a random hash when
// the RPC does not carry it. Policies on "-bin" headers are skipped, as
// gRPC skips them. A route without hash policies gives every RPC a
// random hash, as in gRPC, unless WithRingHashRequestHashHeader names a
// header to hash; to get it, the resolver configures a header RPCs do not
// carry, "x-proxyless-xds-random-hash". A filter_state (channel ID)
// policy, several header policies and regex_rewrite cannot be expressed:
// errors wrapping ErrUnsupported. requestHashHeader needs
// GRPC_EXPERIMENTAL_RING_HASH_SET_REQUEST_HASH_KEY, which is on by
// default; turned off, ring_hash fails every RPC.
//
// Not honoured, and not reported as errors, because a resolver cannot
// act on them: the route's and virtual host's retry policies, timeouts
// (max_stream_duration) and the HTTP filters (fault injection); the
// cluster's TLS settings (the channel's transport credentials apply),
// circuit breaking (max_requests), outlier detection and load reporting
// (LRS); the ClusterLoadAssignment's drop_overloads. A
// grpc.WithDisableServiceConfig dial option makes the channel ignore the
// resolver's balancer (it then uses grpc.WithDefaultServiceConfig's or
// pick_first); without it the resolver's service config replaces
// grpc.WithDefaultServiceConfig's.
//
// # Errors
//
// When the configuration cannot be used, new RPCs fail with status
// UNAVAILABLE and a message that starts with "name resolver error:
// resolver: <target>:" and names what failed: the Listener or
// RouteConfiguration (a resource error reported by depmgr, such as
// `xds: Listener "svc": resource does not exist`), a missing virtual host
// (depmgr.ErrNoVirtualHost), a virtual host without route (ErrNoRoute),
// the cluster of the route (its resource error, or ErrNoUsableEndpoints
// with the health statuses found), or what the resolver cannot express
// (ErrUnsupported). To make RPCs fail even though the channel had
// endpoints, the resolver first gives the channel no endpoint and
// pick_first, then reports the error (resolver.ClientConn.ReportError),
// as gRPC Go's xDS resolver does: the channel drops its connections and
// RPCs fail at once (or wait, with grpc.WaitForReady) until a usable
// configuration comes. Ambient errors (a rejected update of a resource
// in use, a lost connection to the management server) keep the last
// State and are only logged (WithLogger). The resolver never panics on a
// configuration.
//
// # Concurrency
//
// NewBuilder's Builder is immutable and safe for concurrent use; grpc
// calls Build once per ClientConn (and again when the channel leaves
// idle mode). A resolver makes all its calls to the ClientConn from its
// dependency manager's goroutine, one at a time, in the order the
// configurations come; it calls the ClientConn from no other goroutine,
// and never after Close returns. Close cancels every watch the resolver
// started (the client unsubscribes from the resources no one else
// watches) and waits for a call to the ClientConn in progress; ResolveNow
// resolves the hosts of LOGICAL_DNS clusters again and returns at once.
// The client must outlive every resolver: close the ClientConns, then the
// client.
//
// # Experimental
//
// The package depends on grpc's experimental balancer and attribute APIs
// (ring_hash_experimental, least_request_experimental,
// experimental/balancer/weight, resolver/ringhash), which may change in a
// later grpc release.
package resolver
