// SPDX-License-Identifier: Apache-2.0

// Package resources holds the xDS resource types and their decoders: it
// turns the *anypb.Any resources of a DiscoveryResponse into validated,
// immutable Go values. It does no I/O and needs no network or client, so it
// can be used offline, for example to check a management server's output
// in CI.
//
// # Types and the registry
//
// A resource type is a Type[T]: its type URL, a short name, whether a SotW
// response must carry every subscribed resource, and a decoder
// producing values of Go type T. The four types a gRPC client uses are
// built in, as constants of type BuiltinType[T], each a Type[T] (no
// importer can reassign them):
//
//	ListenerType     Type[*Listener]     LDS  envoy.config.listener.v3.Listener
//	RouteConfigType  Type[*RouteConfig]  RDS  envoy.config.route.v3.RouteConfiguration
//	ClusterType      Type[*Cluster]      CDS  envoy.config.cluster.v3.Cluster
//	EndpointsType    Type[*Endpoints]    EDS  envoy.config.endpoint.v3.ClusterLoadAssignment
//
// NewType makes custom types, given to a client with
// client.WithResourceTypes; the set of types a client knows is fixed when
// it is made. BuiltinTypes lists the built-in ones in the order
// LDS, RDS, CDS, EDS.
//
// # Decoding contract
//
// For each resource of a response, the client:
//
//  1. calls Unwrap to remove an envoy.service.discovery.v3.Resource
//     wrapper; an error is a top-level error of the response;
//  2. calls the type's Name to read the resource name without decoding, so
//     that it can skip resources whose bytes did not change;
//  3. calls Decode (or DecodeTyped), which checks the type URL, decodes,
//     validates and returns the canonical name, the value and an error.
//
// An error with an empty name (an undecodable resource, a wrong type URL,
// an empty resource name) is a top-level error of the response; an error
// with a name makes only that resource invalid. Either way the
// response is NACKed. A panic in a decoder is recovered and reported
// as a per-resource error.
//
// Decoded values are immutable and shared by every watcher of the
// resource: do not modify them. Each has a Raw method returning the
// resource exactly as received (after unwrapping), for CSDS and tools.
//
// # Names
//
// Resource names are either old-style opaque strings or new-style
// "xdstp://authority/type/id?params" names (gRFC A47). ParseName parses
// the latter; CanonicalName returns the canonical form (context parameters
// sorted, R-5.2) that the client uses as the key of a resource, both for
// watched names and for names in responses. Only the "xdstp:"
// scheme selects an authority; any other name is opaque.
//
// # Offline validation
//
// Check and Validate decode and validate one resource, possibly wrapped,
// exactly as the client does on receiving it: a control plane can lint
// its output in CI (the xdsctl validate command is built on Check). What
// a client knows beyond the resource is given as options: with
// WithCertificateProviderInstances (the bootstrap's certificate provider
// instances), a Cluster whose transport socket names another instance is
// invalid, as in a client, whose registry holds the Cluster type that
// BuiltinTypes returns with that option.
//
// # Errors
//
// The built-in decoders report invalid resources with a *ValidationError,
// found with errors.As, whose Field is the proto field path of the problem
// (for example "virtual_hosts[0].routes[3].route.weighted_clusters") and
// whose Reason says what is wrong, so that a control-plane author can act
// on it. An undecodable resource, an empty name or a wrong type URL is a
// top-level error of the response instead.
//
// # Validation rules
//
// The decoders apply the client-side rules of gRPC's xDS clients (R-17 in
// docs/protocol.md; grpc-go v1.85's unmarshal_*.go with its default
// environment, and the gRFCs cited on each rule). In brief:
//
//   - Listener: an api_listener holding an HttpConnectionManager;
//     rds from ads or self with a name, or an inline route_config validated
//     as RDS; xff_num_trusted_hops 0 and no original_ip_detection_extensions
//     (gRFC A41); HTTP filters with unique names, configs resolved through
//     TypedStruct, unknown or server-only filters (RBAC) dropped when
//     optional and rejected otherwise, configs of known filters decoded,
//     the router last and only last (gRFC A39). The filters a client runs
//     are the router and fault injection, a default grpc-go build's, the
//     stateful session filter with a cookie session state (gRFC A55, as
//     gRPC C++; StatefulSession reads its config) and the GCP
//     authentication filter (gRFC A83; GCPAuthnCacheSize reads its
//     config).
//   - Server-side Listener (R-17.2, R-26; gRFC A36), one without
//     api_listener, decoded into Listener.Server: a TCP socket_address;
//     no listener_filters nor use_original_dst; filter chains whose
//     matches are normalized (CIDR ranges masked and clamped) and must not
//     overlap, fields a server cannot see making a chain never match; at
//     least one chain that can match, or a default_filter_chain; each
//     chain's network filters exactly one HttpConnectionManager (rules as
//     for a client, with the HTTP filters a server runs: RBAC and the
//     router); a DownstreamTlsContext with an identity certificate
//     provider, roots required for require_client_certificate, no SAN
//     matchers, system roots, SNI requirement or strict OCSP stapling;
//     given the bootstrap's instances, the certificate provider instances
//     it names.
//   - RouteConfiguration: path and header matchers, with RE2
//     regexes compiled once with full-match semantics; runtime fractions;
//     cluster, weighted_clusters (zero weights skipped, sum within uint32
//     and not zero) and cluster_specifier_plugin actions (the RLS plugin,
//     whose config is checked as the RLS LB policy would); routes gRPC
//     cannot use left out; retry policies with gRPC's defaults and bounds
//     (gRFC A44); hash policies (gRFC A42); max_stream_duration;
//     non-forwarding and other actions kept; typed_per_filter_config
//     overrides validated at the virtual host, route and weighted cluster
//     level, including RBAC overrides (gRFC A41); auto_host_rewrite
//     (gRFC A81).
//   - Cluster: lb_policy ROUND_ROBIN, RING_HASH (XX_HASH,
//     ring sizes within 8Mi and ordered) or LEAST_REQUEST (choice count ≥ 2);
//     load_balancing_policy (gRFC A52: round_robin, ring_hash,
//     least_request, pick_first, client-side weighted round robin,
//     wrr_locality, a TypedStruct naming a balancer registered with gRPC,
//     16 levels at most); override_host_status (gRFC A55); the TLS
//     transport socket of gRFC A29
//     and its unsupported fields, system_root_certs (gRFC A82), SNI (gRFC
//     A101), and, given the bootstrap's instances, the certificate
//     provider instances it names; with WithHTTPConnect, the HTTP/1.1
//     proxy transport socket (gRFC A86); audiences in metadata (gRFC A83);
//     outlier detection (gRFC A50); lrs_server
//     self; EDS (ads or self, service_name required for xdstp names),
//     LOGICAL_DNS (one locality, one endpoint) and aggregate (gRFC A37)
//     clusters; circuit breakers.
//   - ClusterLoadAssignment: localities with a locality, weight-0
//     localities dropped before priorities are checked for gaps, locality
//     and endpoint weight sums within uint32, endpoint weights not 0, no
//     duplicate address (additional addresses included, gRFC A61), no
//     duplicate locality in a priority, drop overloads; hash keys from
//     "envoy.lb" metadata (gRFC A76); with WithHTTPConnect, proxy
//     addresses from endpoint and locality metadata (gRFC A86).
//   - A panic in a decoder is a per-resource error.
//
// Where this package deliberately differs from grpc-go, it is stricter on
// input that names nothing or is malformed, and says so where the rule is
// applied: empty cluster names in route actions, endpoints without a
// usable socket address (grpc-go turns them into ":0"), unknown
// runtime_fraction denominators, invalid or negative durations, repeated
// cluster specifier plugin names, RING_HASH ring sizes (which grpc-go
// accepts and then fails the channel on; gRPC C++ rejects them). It does
// not know the data plane's registries, so RBAC audit loggers and the
// resolver scheme of an RLS lookup_service are not checked; custom LB
// policies in a TypedStruct are looked up in gRPC's balancer registry of
// the program, as grpc-go does; features behind grpc-go environment
// variables that default to off are treated as off (ext_proc,
// ext_authz), except system root certificates, SNI and the GCP
// authentication filter, which are on, and HTTP CONNECT, which
// WithHTTPConnect turns on.
//
// # Performance
//
// Decoding a resource costs about as much as proto.Unmarshal of its bytes
// (see bench_test.go). The usual client Listener and the child policies of
// wrr_locality are read straight from the wire after a check that accepts
// exactly what proto.Unmarshal accepts, without allocating the nested
// messages; other shapes take the proto.Unmarshal path, and fuzz tests
// check that both paths agree. Decoded values hold compiled regular
// expressions, so that data planes do not compile them per RPC.
package resources
