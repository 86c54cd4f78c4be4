// SPDX-License-Identifier: Apache-2.0

// Package transport defines how the xDS client reaches a management server.
// A Builder makes one Transport per management server. There are two levels:
//
//   - Transport moves serialized protobuf messages over gRPC-like streams,
//     one per RPC method: the aggregated discovery service (ADS), the
//     per-type discovery services, load reporting (LRS). It keeps gRPC out
//     of the client's engine and makes fakes (in-memory transports,
//     fuzzers) cheap. Package grpctransport holds the gRPC implementation
//     the client uses by default; package mgmtserver holds an in-memory one.
//   - XDS is the seam the client's engine speaks: streams of typed xDS
//     requests and responses, either one aggregated stream for every
//     resource type (ADS) or one stream per type. ADS and PerTypeStreams
//     implement it over any Transport; a Transport that is not a gRPC
//     server (REST-JSON polling, files) implements XDS itself. The engine
//     keeps every piece of protocol state (subscriptions, versions,
//     nonces, ACK/NACK, replay on a new stream); an XDS implementation only
//     carries messages, and needs to parse none of the engine's requests.
//
// The client uses a Transport's XDS implementation when it has one, else
// ADS(tr).
//
// # Concurrency
//
// Builder.Build and Transport methods may be called concurrently. On one
// Stream (or XDSStream), Send may be called concurrently with Recv, but
// neither Send nor Recv may be called concurrently with itself (the same
// contract as a gRPC stream).
package transport
