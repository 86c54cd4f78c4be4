// SPDX-License-Identifier: Apache-2.0

// Package xdsresolver is a gRPC name resolver for xDS targets: a
// google.golang.org/grpc/resolver.Builder that turns the xDS configuration
// of a target, watched through a client of package client, into the
// endpoints and load balancing policy of a grpc.ClientConn. It is
// registered explicitly, never by an init function. The one way to make a
// channel is DialOptions, which gives it everything:
//
//	c, err := client.New(cfg)                 // cfg from bootstrap.FromEnv
//	defer c.Close()                           // after every ClientConn
//	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c)...)
//
// Each resolver starts a dependency manager (package depmgr, gRFC A74) on
// its target's Listener, and hands each complete configuration it
// publishes to the channel: a service config naming an LB policy of this
// package, the router, and the configuration itself in the State's
// attributes. The router does per RPC what gRPC's own xDS channel does
// with its internal config selector and LB tree, using only gRPC's public
// balancer API. NewBuilder registers the router with grpc (once per
// process, under the name "proxyless_xds_router_experimental"); nothing
// is registered by an init function. The router lives in the package's
// internal/router; the data-plane configuration it routes with (routes,
// clusters, priorities, localities, endpoints) and every per-RPC decision
// that is not gRPC's (route matching, weighted clusters, drops, circuit
// breaking, the request hash, faults, session cookies, outlier
// detection's algorithm) are the module's internal/dataplane, which the
// module's other data paths share: this package holds the resolver, its
// dial options and interceptors, the conversion of a configuration for
// the router, retries and load reporting.
//
// DialOptions(c) returns the resolver (NewBuilder(c)), interceptors for
// what a resolver and a balancer cannot do (route timeouts, fault
// injection, stateful sessions, routes kept from retries, header
// rewriting) and transport credentials that do the TLS a cluster's xDS
// configuration asks for (package xdscreds, gRFC A29). NewBuilder alone is for where dial options
// cannot be given, for example resolver.Register for channels made by code
// you do not own; its channels lack what needs the interceptors and log
// once per channel, at Warn, when their configuration asks for it.
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
// The virtual host is selected for the channel's authority, as
// gRPC Go's and gRPC C++'s xDS resolvers select it: grpc.WithAuthority
// when given, else the target's path without its leading "/",
// percent-encoded as gRPC encodes a channel's default authority (so
// "xds:///svc/v2 beta" selects the domain "svc%2Fv2%20beta", while its
// Listener is "svc/v2%20beta" with an xdstp template, "svc/v2 beta"
// with "%s"). WithScheme serves another scheme.
//
// # What is honoured
//
// Routing, per RPC (gRFC A28). The virtual host is selected by depmgr for
// the target's authority. Each RPC is matched against its routes
// in order: the path (prefix, path or safe_regex; case_sensitive applies
// to prefix and path), every header matcher (exact, prefix, suffix,
// contains, with ignore_case; safe_regex; range; present; invert_match;
// case_sensitive false and ignore_case ignore ASCII case only, as gRPC
// C++ does),
// read from the RPC's outgoing metadata with the values of a header
// joined by ","; "-bin" headers are invisible to matchers and
// content-type reads "application/grpc"; then runtime_fraction. An RPC
// that matches no route fails with UNAVAILABLE, as does one matching a
// route whose action is non_forwarding or another action gRPC does not
// forward.
//
// Cluster specifier plugins (gRFC A28, "RLS in xDS"). A route whose
// action is cluster_specifier_plugin, of the route lookup plugin
// (grpc.lookup.v1.RouteLookupClusterSpecifier), sends its RPCs to gRPC's
// own RLS LB policy (google.golang.org/grpc/balancer/rls, which this
// package imports) with the plugin's route_lookup_config, as gRPC's xDS
// channel does: RLS asks its lookup_service for the target of each RPC
// (from its keys: headers, the method), caches the answer, and routes the
// RPC to the target, which is a cluster of this configuration. The
// channel subscribes to each target cluster as RLS names it (depmgr's
// dynamic subscriptions) and until RLS forgets it; such a cluster is
// balanced as a route's cluster (priorities, localities, drops, circuit
// breaking, load reports, outlier detection, TLS), its state reported to
// RLS, which falls back to its other targets, or its default_target. An
// RPC whose target cluster does not exist fails UNAVAILABLE naming it
// once the client knows (the does-not-exist timer). Unknown plugins: a
// route using an optional one is left out; a RouteConfiguration using a
// required one is NACKed (package resources). A plugin config gRPC's RLS
// policy rejects (a lookup_service whose scheme has no resolver in the
// program) fails its routes' RPCs with UNAVAILABLE saying why. The RLS
// control channel uses the channel's transport credentials (for xDS
// credentials, their fallback).
//
// Weighted clusters. Each RPC of a weighted_clusters route picks its
// cluster at random by weight, whatever the clusters' endpoint policies.
// An RPC routed to a cluster that has an error (it does not exist, is
// invalid, has no usable endpoint) fails with UNAVAILABLE naming it; the
// other RPCs are not affected.
//
// Clusters, priorities and localities. A cluster (for an aggregate
// cluster, each of its leaf clusters in priority order, gRFC A37, A75)
// is a list of priorities; each priority is the localities that have a
// usable endpoint (health HEALTHY or UNKNOWN, as in gRPC, gRFC A27).
// The router uses the first priority that is READY or IDLE, or that is
// CONNECTING for less than 10 s (the failover timer of gRFC A56); a
// priority in TRANSIENT_FAILURE, or whose timer fired, is skipped until
// it becomes READY again, and RPCs go back to a higher priority as soon
// as it is READY. A priority's balancers are created the first time the
// router needs it, so lower priorities are not connected to while higher
// ones serve; once created they stay, ready for the next failover, for
// 15 minutes after a higher priority is used again (the child retention
// of gRFC A56), or until a configuration no longer has them; then they
// are closed, and created again if a failover reaches them. Within a
// priority, an RPC
// picks a READY locality at random by locality weight (weighted target),
// then the locality's endpoint policy picks the endpoint.
//
// Endpoint policies: ROUND_ROBIN → round_robin; LEAST_REQUEST →
// least_request_experimental (choiceCount); PICK_FIRST → pick_first
// (shuffleAddressList); WEIGHTED_ROUND_ROBIN → weighted_round_robin (its
// periods and penalty); RING_HASH → ring_hash_experimental (minRingSize,
// maxRingSize; grpc caps the ring at GRPC_RING_HASH_CAP, 4096 by
// default); a custom policy (gRFC A52: a TypedStruct in
// load_balancing_policy whose type_url's last segment names a balancer
// registered with grpc in this program) → that balancer, with the
// TypedStruct's value as its JSON config: gRPC's public balancers through
// balancer.Get. As in gRPC's xDS LB tree, a policy under wrr_locality
// (lb_policy ROUND_ROBIN, or a load_balancing_policy WrrLocality) runs
// one instance per locality, under a pick by locality weight; any other
// (RING_HASH, lb_policy LEAST_REQUEST, a load_balancing_policy policy on
// its own, a custom one) runs one instance per priority over every
// locality, each endpoint weighted by its locality's weight times its
// share of the locality. A policy whose balancer is not registered, or
// whose ParseConfig rejects its config, makes the cluster's RPCs fail
// (ErrUnsupported, naming the package to import; this package imports
// gRPC's).
//
// Ring hash (gRFC A42). The hash of an RPC comes from the hash policies
// of the route it matched, for each RPC: header policies (the values
// joined with ",", after regex_rewrite; "-bin" headers skipped) and the
// filter_state channel ID policy (a random number per channel), combined
// and ended by terminal policies as gRPC does; with no hash, a random
// one. WithRingHashRequestHashHeader names a header to hash for routes
// without hash policies. The ring is gRPC's own (ring_hash_experimental:
// endpoint addresses or hash_key, weights, minimum and maximum sizes), so
// that an RPC lands on the endpoint gRPC's xDS channel picks for the same
// configuration. The router hands the hash to ring_hash in a header of the
// pick's context (ring_hash's requestHashHeader, gRFC A76), as the 8
// bytes whose XXH64 is the hash (ring_hash hashes that header with
// XXH64; gRPC's xDS channel gives it the hash through a context key
// internal to grpc); GRPC_EXPERIMENTAL_RING_HASH_SET_REQUEST_HASH_KEY (on
// by default) must allow the header. The header is not sent.
//
// Drops and circuit breaking. Before a pick, each drop_overloads category
// of the cluster's ClusterLoadAssignment drops its share of RPCs (gRFC
// A27), which fail with UNAVAILABLE naming the category, even with
// WaitForReady. An RPC that would exceed the cluster's max_requests
// (circuit_breakers, default priority, 1024 when unset, gRFC A32) in
// flight fails with UNAVAILABLE; the count is shared by the channels of a
// Builder (gRPC shares it per xDS client).
//
// Load reporting (LRS, R-22). For a cluster whose lrs_server is "self",
// the router records per locality the RPCs issued, succeeded, errored and
// in progress, and the drops by category, in a Store shared by the
// channels of the Builder; one lrs.Client per management server reports
// them to the server the cluster came from (the first server of its
// authority), by default on the client's ADS connection to it (R-22.1,
// through client.Client.TransportBuilder): see package lrs and
// WithLoadReportTransport.
//
// Timeouts and faults, with DialOptions only. The route's
// max_stream_duration (grpc_timeout_header_max when set, else
// max_stream_duration; else the Listener's) caps each RPC's deadline
// (gRFC A31). The fault injection filters of the Listener (HTTPFault),
// with the virtual host's, route's and weighted cluster's overrides
// (typed_per_filter_config, the most specific first, gRFC A39), delay
// and abort RPCs with their percentages, header matchers,
// x-envoy-fault-* headers and max_active_faults (gRFC A33; the faults in
// progress are counted for the whole process, as A33 says). The
// interceptors choose the cluster of a weighted_clusters route, so that
// its overrides apply; the router sends the RPC there. A fault config or
// override inside a TypedStruct is rejected with its resource (package
// resources, as gRPC does): it never reaches the channel.
//
// Header rewriting, with DialOptions only (beyond gRPC's xDS channels,
// which ignore these fields). request_headers_to_add and
// request_headers_to_remove of the RPC's weighted cluster, route, virtual
// host and RouteConfiguration become the RPC's outgoing metadata, as
// Envoy's router rewrites a request's headers (see docs/http.md, "Header
// mutations", for the order of the levels, most_specific_header_mutations_wins
// and the append actions): the interceptors apply them to a copy of the
// RPC's metadata (the application's are unchanged). Routing, the request
// hash, RLS keys and the session cookie read the metadata the application
// sent, as Envoy picks before it rewrites. gRPC's metadata rules apply,
// and what breaks them is left out, with a warning once per channel:
// keys starting with "grpc-" (reserved for gRPC), content-type,
// user-agent and te (gRPC sets them), keys with other characters than
// 0-9 a-z - _ . and, for keys not ending in "-bin", values that are not
// printable ASCII; pseudo-headers and host are rejected with the
// RouteConfiguration (package resources). The value of a "-bin" key is
// the base64 that goes on the wire, as in Envoy, so gRPC's metadata get
// it decoded (padded or not; not base64: left out). Values are literal:
// Envoy's %…% command operators are not evaluated. response_headers_to_add
// and response_headers_to_remove are not applied (a warning says so
// once): they are what a proxy does to the response it forwards, and a
// gRPC client forwards none. A channel of NewBuilder alone applies no
// header rewriting (a resolver and a balancer cannot change an RPC's
// metadata) and warns once.
//
// Updates. A new configuration replaces the picker at once: routes and
// weights take effect on the next RPC; children of clusters and
// localities that stay keep their connections and get the new endpoints;
// the children of a cluster that the new configuration no longer has stay
// while an RPC picked for that cluster is in flight (from its pick to its
// end), serve the cluster again if a configuration brings it back, and
// are closed when the last of those RPCs ends, as gRPC's cluster manager
// keeps a child its config selector still refers to (gRFC A28, A31);
// other children no longer referred to are closed at once, and RPCs in
// flight on their connections complete.
//
// Security (gRFC A29, R-25). A leaf cluster whose Cluster has a
// transport_socket (an UpstreamTlsContext) gets TLS or mTLS with the
// credentials of package xdscreds (xdscreds.NewClientCredentials,
// given to the channel with grpc.WithTransportCredentials): the children
// of its priorities acquire the certificate providers its security config
// names from the Builder's xdscreds.ProviderStore (by default one of
// the client's bootstrap; WithCertificateProviders), and put them, with
// its SAN matchers, in the attributes of every address of its endpoints,
// where the credentials read them at each handshake. A cluster whose
// security config names an instance the store cannot run (an unknown
// plugin, an invalid config) fails its RPCs with UNAVAILABLE naming it. A
// change of a cluster's security config gives it new children, and so new
// connections. Clusters without transport_socket, and every cluster with
// other transport credentials, use the channel's credentials (for xDS
// credentials, their fallback). Each address also carries its endpoint's
// host name (EDS Endpoint.hostname; a LOGICAL_DNS cluster's DNS name and
// port), from which the credentials take the SNI of auto_host_sni (gRFC
// A101; else the cluster's sni, else none; see package xdscreds).
//
// HTTP CONNECT (gRFC A86), with a client made with client.WithHTTPConnect.
// The endpoints of a Cluster whose transport_socket is the HTTP/1.1 proxy
// socket, with a proxy address in their metadata (else their locality's),
// are reached through an HTTP CONNECT tunnel to that proxy, opened by
// HTTPConnectDialer (part of DialOptions for such a client); the TLS the
// socket wraps, if any, is done with the endpoint through the tunnel.
// Other endpoints are dialled directly. A channel of NewBuilder alone
// needs grpc.WithContextDialer's HTTPConnectDialer, else it dials them
// directly and warns once.
//
// GCP authentication (gRFC A83), with DialOptions and
// WithGCPAuthentication. The Listener's GCP authentication filters give
// an RPC, sent to a cluster whose metadata has an audience for the
// filter (typed_filter_metadata under the filter's name), the call
// credentials of that audience: with package gcpauthn, an ID token of the
// GCE metadata server ("authorization: Bearer ..."), cached per filter
// instance in an LRU cache of the filter's cache_size; only over
// connections with transport security. Package gcpauthn is apart so that
// programs that do not use the filter do not link Google's credentials.
// Without WithGCPAuthentication, such RPCs fail with UNAVAILABLE naming
// it; a route of a cluster specifier plugin gets none, as in gRPC.
//
// Authority rewriting (gRFC A81). An RPC of a route with
// auto_host_rewrite, in a RouteConfiguration of an authority all of whose
// management servers list trusted_xds_server in the bootstrap
// (bootstrap.FeatureTrustedXDSServer; the top-level xds_servers for a name
// that is not xdstp), has as :authority the host name of the endpoint it
// is sent to (a LOGICAL_DNS cluster's DNS name and port), when it has one;
// grpc.CallAuthority on the RPC wins. grpc has the channel's credentials
// validate it: TLS credentials, xdscreds' included, require the server's
// certificate to be valid for it, as grpc-go's xDS channel does.
//
// Moving from gRPC Go's xDS channel: replace grpc-go's credentials/xds
// with xdscreds.NewClientCredentials (the same ClientOptions), or use
// DialOptions. grpc-go's credentials/xds read a cluster's TLS
// configuration only from grpc-go's own xDS balancers; with this
// resolver they would connect to every cluster with their fallback
// credentials, plaintext where the cluster asks for TLS. So Build
// refuses them (credentials whose UsesXDS reports true): the channel's
// RPCs fail with UNAVAILABLE and ErrGRPCXDSCredentials, which names
// xdscreds.NewClientCredentials.
//
// Retries (gRFC A44), with NewBuilder alone or DialOptions. The retry
// policy of a route (else of its virtual host) becomes the retryPolicy of
// gRPC's service config (gRFC A6) for the methods of its RPCs:
// maxAttempts num_retries + 1, initialBackoff and maxBackoff the
// retry_back_off intervals, multiplier 2, the retry_on codes
// (cancelled, deadline-exceeded, internal, resource-exhausted,
// unavailable; a policy without any retries nothing). So grpc itself
// retries, as for gRPC's xDS channel: not once response headers came,
// within its retry buffer (grpc.MaxRetryRPCBufferSize), with
// grpc-previous-rpc-attempts and server pushback, and each attempt is
// picked again by the router (another endpoint of the same cluster,
// counted by circuit breaking and load reports); a pick's error is never
// retried. grpc caps maxAttempts at 5 unless the channel has
// grpc.WithMaxCallAttempts (gRPC's xDS channel does not cap it);
// grpc.WithDisableRetry turns retries off. A service config names
// methods, not routes: when RPCs of one method can match routes with
// different policies (routes told apart by headers, runtime_fraction, a
// regex or a prefix shorter or longer than a whole service), the service
// config gives that method no policy. With NewBuilder alone, such a
// method is not retried, and a warning names the routes, once per
// channel. With DialOptions, a route without a policy does not conflict:
// its method keeps the others' policy, and the interceptors keep the
// route's RPCs from being retried (grpc.MaxRetryRPCBufferSize(0), which
// also stops grpc's transparent retries of those RPCs); and the
// interceptors retry, per RPC, each RPC whose route's policy is not its
// method's in the service config, with the route's policy.
//
// So, with DialOptions, an RPC takes one of two paths, by its route and
// method: (A) when the service config gives its method its route's
// policy, grpc retries it (gRFC A6, as above); (B) otherwise the
// interceptors do, each attempt being an RPC of the channel (picked
// again by the router, retried transparently by grpc when it never left
// the client, with no policy of grpc's), with the semantics of A6 for the
// route's policy: its retry_on codes, num_retries + 1 attempts (at most
// 5, as A44 says), a random backoff up to retry_back_off's base interval
// times 2 per retry, at most its max interval (at least 1 ms each), or
// the server's grpc-retry-pushback-ms (negative, or several values: no
// retry), grpc-previous-rpc-attempts on retries, no retry once response
// headers or a message came or after a pick the router failed (a drop,
// circuit breaking, a cluster error), and for streams the messages sent
// replayed to the next attempt, up to the retry buffer
// (grpc.MaxRetryRPCBufferSize of the call, 256 KiB by default; a message
// that is not a protobuf message ends retries); the context's deadline
// covers every attempt. grpc.WithDisableRetry does not reach path B:
// give routes no policy to turn it off. An application's interceptors
// (given after DialOptions) see each attempt of path B.
//
// Outlier detection (gRFC A50). A leaf cluster's outlier_detection
// watches the endpoints of each of its priorities, as gRPC's
// outlier_detection policy does in its xDS LB tree (grpc-go's is
// internal; this package has its own, on the public balancer API): the
// result of every RPC is counted for the endpoint it went to; every
// interval, the success rate and failure percentage algorithms (with
// their request volume, minimum hosts, stdev factor, threshold and
// enforcement percentage) eject outliers, at most max_ejection_percent
// of the priority's endpoints; an ejection lasts base_ejection_time times
// the endpoint's ejections (decayed by one per interval without), at most
// max(base_ejection_time, max_ejection_time). An ejected endpoint's
// connections stay up but report TRANSIENT_FAILURE to the endpoint
// policy, through the health listener gRPC's endpoint policies register
// (round_robin, ring_hash, least_request and weighted_round_robin), which
// then do not pick it; pick_first registers none and is not affected, as
// in gRPC. Adding or removing outlier detection (one that ejects
// something) gives the cluster's priorities new balancers, and so new
// connections; changing its settings does not.
//
// Stateful session affinity (gRFC A55, A60), with DialOptions only. The
// Listener's stateful session filter with a cookie session state (and
// the virtual host's and route's StatefulSessionPerRoute overrides) pins
// the RPCs of a session to an endpoint: the interceptors read the cookie
// of RPCs whose path the cookie's path matches (RFC 6265), base64 of the
// endpoint's addresses and its cluster ("10.0.0.1:8080;cluster-svc", gRPC
// C++'s format); the RPC goes to that cluster when the route has it, and
// the router picks the endpoint when its SubConn is READY (or waits while
// it connects) and its health is in the cluster's override_host_status
// (UNKNOWN and HEALTHY by default; DRAINING may be added: a DRAINING
// endpoint gets no new RPCs, but its connection stays for its sessions
// while READY); else the endpoint policy picks. The response's headers
// (the trailers, when there are none) then carry a set-cookie naming the
// endpoint and cluster that served it, unless the RPC's cookie did
// (HttpOnly, Path, Max-Age from the cookie's ttl), for the application to
// send back with the next RPCs of the session: to a unary RPC through
// grpc.Header (or grpc.Trailer), to a stream through Header (or Trailer).
// The session stays on its endpoint across priorities only within the
// priority in use, as in gRPC C++.
//
// Metrics. On a channel made with DialOptions, every RPC's context holds
// a calllabels.Holder, which the picker sets, for each attempt, to the
// locality and leaf cluster of the endpoint it picked (cleared when the
// pick fails): stats handlers read them as gRPC's xDS channel hands them
// to its OpenTelemetry plugin (grpc.lb.locality, gRFC A78;
// grpc.lb.backend_service, A89; otelxds.DialOption records them). Child
// balancers record through the channel's metrics recorder with those
// labels filled in (weighted_round_robin's, gRFC A78), and outlier
// detection counts its ejections (gRFC A91); the A91 counters are
// registered with grpc's metrics registry by NewBuilder.
//
// ORCA in LRS (gRFC A64, A85). For a cluster with lrs_server and
// lrs_report_endpoint_metrics, each RPC's ORCA report (the backend's
// trailer, parsed by grpc's orca package into balancer.DoneInfo) adds the
// selected fields to its locality's load report (lrs.AddBackendMetrics).
//
// The resolver logs a warning once per channel when, without
// DialOptions, a configuration uses fault injection, max_stream_duration,
// stateful sessions, HTTP CONNECT or the GCP authentication filter.
//
// Service config is required: the resolver names the router in the
// service config it gives the channel, as gRPC Go's own xDS resolver
// does. On a channel made with grpc.WithDisableServiceConfig, Build fails
// with ErrServiceConfigDisabled, whose message the channel's RPCs carry.
//
// # Errors
//
// When the configuration cannot be used as a whole, new RPCs fail with
// status UNAVAILABLE and a message "xdsresolver: <target>: " (after
// grpc's "name resolver error: " once the channel had a configuration)
// that names what failed: the Listener or
// RouteConfiguration (a resource error reported by depmgr, such as
// `xds: Listener "svc": resource does not exist`), a missing virtual host
// (depmgr.ErrNoVirtualHost), or a virtual host without route
// (ErrNoRoute). A cluster's error (its resource error, or
// ErrNoUsableEndpoints with the health statuses found) fails only the
// RPCs routed to it. To make RPCs fail even though the channel had
// endpoints, the resolver first gives such a channel no endpoint and
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
// client. The router's picker is safe for concurrent picks and takes no
// lock; grpc calls the router's other methods one at a time, and its
// failover, child retention and outlier detection timers fire on their
// own goroutines, under the router's lock. The router's goroutines (its
// timers', and those it starts for work it cannot do where it is found)
// are its own: the router's Close, which grpc calls when the channel
// closes or changes policy, waits for them.
// Close also ends the resolver's LRS streams after a final report.
//
// # Experimental
//
// The package depends on grpc's experimental balancer and attribute APIs
// (ring_hash_experimental and its requestHashHeader,
// least_request_experimental, experimental/balancer/weight,
// resolver/ringhash), which may change in a later grpc release.
package xdsresolver
