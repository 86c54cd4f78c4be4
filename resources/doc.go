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
// built in:
//
//	ListenerType     Type[*Listener]     LDS  envoy.config.listener.v3.Listener
//	RouteConfigType  Type[*RouteConfig]  RDS  envoy.config.route.v3.RouteConfiguration
//	ClusterType      Type[*Cluster]      CDS  envoy.config.cluster.v3.Cluster
//	EndpointsType    Type[*Endpoints]    EDS  envoy.config.endpoint.v3.ClusterLoadAssignment
//
// NewType makes custom types. A Registry is the fixed, ordered set
// of types a client knows; BuiltinTypes lists the built-in ones in
// the order LDS, RDS, CDS, EDS.
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
// # Errors
//
// The built-in decoders report invalid resources with a *ValidationError,
// found with errors.As, whose Field is the proto field path of the problem
// (for example "virtual_hosts[0].routes[3].route.weighted_clusters").
//
// # Validation scope
//
// The built-in decoders enforce what makes a resource unusable and the
// cheap structural rules of. They do not
// yet compile regular expressions, validate retry or hash policies,
// outlier detection, TLS contexts, A52 load_balancing_policy, HTTP filter
// configs or per-filter overrides.
package resources
