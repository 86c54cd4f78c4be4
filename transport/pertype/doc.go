// SPDX-License-Identifier: Apache-2.0

// Package pertype speaks the per-type variants of the xDS transport
// protocol (xDS protocol, "Variants of the xDS Transport Protocol",
// variants 1 and 2): one gRPC stream per resource type, each on the type's
// own service (ListenerDiscoveryService.StreamListeners or DeltaListeners,
// RouteDiscoveryService, ClusterDiscoveryService, EndpointDiscoveryService),
// instead of one aggregated (ADS) stream for every type.
//
//	b := pertype.NewBuilder(grpctransport.NewBuilder())
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
// The Builder speaks over the byte-level Transports of a
// transport.Dialer (grpctransport.NewBuilder(), or one of your own), which
// it dials with the client's options. Its transport.XDS (a Transport of
// this package) has per-type streams: the client's engine opens the
// stream of a type when the type gets its first subscription, closes it
// when the type has none left, and keeps every piece of protocol state
// itself, as for ADS: the subscription sent again on a new stream, versions
// nonces, ACK/NACK, the node in each stream's first request
// . Each type's stream has its own backoff and its own
// failures: a stream that fails before any response is reported to the
// watchers of its type's resources, and fallback considers
// them. SotW or delta follows the client as for ADS (client.WithDelta, or
// the server feature "delta_ads").
//
// The built-in types' services are DefaultServices; WithService sets the
// service of a custom type or moves a built-in one. A type with no
// service fails its stream with an error naming the type URL. The client's
// logs and errors name each stream by its service and method
// ("ClusterDiscoveryService.StreamClusters stream"). Load reporting
// (transport.XDS.NewLRSStream) uses the wrapped Transport, so with
// grpctransport the connection of the per-type streams.
package pertype
