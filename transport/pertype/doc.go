// SPDX-License-Identifier: Apache-2.0

// Package pertype speaks the per-type variants of the xDS transport
// protocol (xDS protocol, "Variants of the xDS Transport Protocol",
// variants 1 and 2): one gRPC stream per resource type, each on the type's
// own service (ListenerDiscoveryService.StreamListeners or DeltaListeners,
// RouteDiscoveryService, ClusterDiscoveryService, EndpointDiscoveryService),
// instead of one aggregated (ADS) stream for every type.
//
// It is a transport.Transport wrapper, so the client's engine (cache,
// validation, ACK/NACK, does-not-exist timers, flow control, watchers) is
// the same for every transport:
//
//	b := pertype.NewBuilder(grpctransport.NewBuilder())
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
// SotW or delta follows the client as for ADS (client.WithDelta, or the
// server feature "delta_ads"): the engine asks for an ADS method and the
// wrapper answers with a mux stream that fans out by type URL.
//
// # The mux stream
//
// NewStream(transport.ADSMethod or transport.DeltaADSMethod) returns at
// once, without network I/O. The stream of a type is opened on the wrapped
// Transport on the first request of that type; each request goes to the
// stream of its type_url and responses of every stream are merged into
// Recv, in arrival order per type. What stays per stream, as the protocol
// wants it for per-type streams:
//
//   - Nonces: the engine keeps a nonce per type already. A request
//     whose nonce was not received on the current stream of its type (the
//     stream was reopened meanwhile) is sent with the nonce cleared, so
//     that a server that ignores stale nonces does not drop it.
//   - The node: the first request of every per-type stream carries the
//     node, which the engine puts in the first request of its
//     (mux) stream only; the wrapper copies it.
//   - Versions: the engine keeps version_info per type (SotW) and per
//     resource (delta); they do not depend on the stream.
//   - Backoff: each type's stream has its own (R-11.1 schedule: 1 s × 1.6ⁿ
//     ± 20 %, at most 120 s).
//
// # When one type's stream fails
//
// While the mux stream has received nothing yet, the failure of any
// type's stream fails the mux stream: the engine then reports the
// connection error to every watcher of the server and retries with its
// own backoff, exactly as for a failed ADS stream. So does a
// failure wrapping transport.ErrMessageTooLarge at any time, which the
// engine reports whenever it happens.
//
// Once the mux stream has received a response, a failed type's stream is
// reopened by itself, the others go on: at once when the failed stream was
// healthy (it received a response and lived at least 10 s, R-11.2), else
// after the type's backoff. The new stream gets a replay of the type's
// subscription, with no nonce:
//
//   - SotW: the last request the engine sent for the type, with its
//     version_info (the last ACKed version: a NACK carries it too, R-7.3)
//     and its full name list; error_detail is dropped.
//   - Delta: resource_names_subscribe is every name the engine subscribed
//     on the type and has not unsubscribed since (tracked from the
//     requests, "*" included), and initial_resource_versions the version
//     last received for each of them (tracked from the responses: from
//     resources[].version, forgotten on removed_resources or unsubscribe;
//     the engine's own initial_resource_versions seed it). A resource the
//     engine NACKed is listed at the version received, so the server does
//     not resend the same invalid version.
//
// Nothing is replayed for a type whose last subscription is empty: an
// empty first request would be a legacy wildcard.
//
// # Caveats
//
//   - The engine's "stream" is the mux: its connectivity reports
//     and the backoff of apply to the first response of the mux,
//     not of every type. Once any type answered, a type whose stream keeps
//     failing before answering is retried with its own backoff silently:
//     its watchers keep their cached values and see no connection error;
//     an uncached resource of that type gets the does-not-exist timer
//     (15 s, R-9) instead. Failing the mux in that case would restart
//     every type's stream, and would not be reported either, since the
//     mux did receive responses. Reporting a connection error for
//     one type needs an engine that knows of per-type streams.
//   - A type with no service (not built in, no WithService) fails like an
//     unreachable service, with an error naming the type URL.
//   - ADS ordering guarantees across types (make-before-break, R-7.9) do
//     not hold between independent streams; the engine still waits for
//     dependencies through its watchers.
package pertype
