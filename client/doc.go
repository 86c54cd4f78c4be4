// SPDX-License-Identifier: Apache-2.0

// Package client is the xDS client: it reads a bootstrap config, opens one
// ADS stream per management server, and delivers validated, typed resources
// to watchers.
//
//	cfg, err := bootstrap.FromEnv()
//	c, err := client.New(cfg)
//	defer c.Close()
//	cancel := client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{
//		OnChanged: func(l *resources.Listener) { ... },
//	})
//	defer cancel()
//
// # Protocol
//
// The client speaks the state-of-the-world (SotW) variant of the aggregated
// discovery service (ADS) of the xDS transport protocol
// (https://www.envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol), as
// gRPC's clients do (gRFC A27, A46, A53, A57, A88), with these rules (IDs
// refer to the project's RULES.md):
//
//   - One ADS stream per distinct management server, shared by every
//     resource type and authority. The node is sent in the first
//     request of each stream only.
//   - Per type URL, the last ACKed version_info survives stream restarts;
//     the nonce does not. ACKs carry the full, sorted subscription
//     list. NACKs carry the previous ACKed version and an
//     error_detail with code INVALID_ARGUMENT whose message lists the errors
//     in resource-name order. Valid resources of a NACKed
//     response are applied.
//   - A resource name that appears twice in one response is NACKed and
//     treated as invalid; the rest of the response is applied.
//   - Subscription changes are coalesced: a request always carries the full
//     current list of its type, and requests of several types go in
//     registry order. An empty list is never the first request of a
//     type on a stream.
//   - A requested resource that no response names within the watch expiry
//     timeout (15 s) after the request was sent on a connected stream does
//     not exist. The timer does not run for cached resources, stops
//     when the stream fails and starts afresh on the next stream.
//   - Cached resources survive reconnects. A SotW Listener or
//     Cluster response that leaves out a cached resource deletes it, unless
//     the server has the ignore_resource_deletion feature;
//     RouteConfiguration and ClusterLoadAssignment resources are never
//     deleted by omission.
//   - A stream that fails after a response is replaced silently; one that
//     fails before any response is reported to watchers as ErrConnection,
//     and retried with exponential backoff (1 s × 1.6ⁿ ± 20 %, at most 120 s;
//
//   - Responses of unknown type URLs, and messages that do not decode, are
//     ignored: no ACK, no NACK, and the stream keeps reading.
//
// # Concurrency
//
// Client methods and Watch are safe for concurrent use. Watcher methods are
// called serially on a goroutine the client owns, in response order, with
// deletions after updates; they may call Watch and cancel funcs.
// The stream that produced a call reads its next response only after every
// watcher called done (flow control, R-12). Close waits for every goroutine
// the client started.
//
// # Errors
//
// Errors given to watchers are *ResourceError values that wrap
// ErrResourceNotFound, ErrResourceInvalid, ErrConnection or ErrUnsupported;
// test them with errors.Is.
//
// # Not yet
//
// Incremental (delta) xDS, fallback between servers (gRFC A71), TTL,
// server-reported resource errors, metrics and load reporting are not
// implemented yet.
package client
