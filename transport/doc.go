// SPDX-License-Identifier: Apache-2.0

// Package transport defines how the xDS client reaches a management
// server: the seam between the client's engine and the ways of reaching a
// server, and the byte-level streams below it.
//
//   - Builder and XDS are the seam. client.WithTransportBuilder takes a
//     Builder, which builds one XDS per management server; the engine
//     speaks to it only: streams of typed xDS requests and responses,
//     either one aggregated stream for every resource type (ADS) or one
//     stream per type, and the load reporting stream where the server has
//     one (NewLRSStream, for package lrs). The engine keeps every piece of
//     protocol state (subscriptions, versions, nonces, ACK/NACK, replay on
//     a new stream); an XDS implementation only carries messages, and
//     needs to parse none of the engine's requests. The Builders of this
//     module are grpctransport.Builder (ADS over gRPC, the client's
//     default), pertype.Builder, rest.Builder, file.Builder and
//     mixed.Builder.
//   - Dialer, Transport and Stream are the byte-level gRPC streams that
//     ADS, the per-type services and load reporting run on: serialized
//     protobuf messages, one stream per RPC method. They keep gRPC out of
//     the engine and make fakes (in-memory transports, fuzzers) cheap.
//     ADS and PerTypeStreams implement XDS over any Transport, and
//     ADSBuilder is the Builder of ADS over any Dialer.
//     grpctransport.Builder is both a Builder and a Dialer, and so is
//     the in-memory transport of package mgmtserver.
//
// The client reaches every transport the same way, through Builder.Build
// and the XDS it returns, never by asking what else a transport is: a
// Builder that decorates another (logging, metrics, fault injection)
// builds the inner XDS and returns a wrapper that embeds it, and keeps its
// layout, streams and load reporting. BuildOptions carry the client's
// logger and receive limit to the transports, which use them unless given
// their own, and name their limits in the errors of a message over one
// (ErrMessageTooLarge).
//
//	b := pertype.NewBuilder(grpctransport.NewBuilder())       // per-type streams over gRPC
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
//	d := myInMemoryDialer{}                                    // a byte-level transport of your own
//	c, err := client.New(cfg, client.WithTransportBuilder(transport.ADSBuilder(d)))
//
// # Concurrency
//
// Builder.Build, Dialer.Dial and the methods of XDS and Transport may be
// called concurrently. On one Stream (or XDSStream), Send may be called
// concurrently with Recv, but neither Send nor Recv may be called
// concurrently with itself (the same contract as a gRPC stream).
package transport
