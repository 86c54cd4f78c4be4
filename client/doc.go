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
// The client speaks the aggregated discovery service (ADS) of the xDS
// transport protocol
// (https://www.envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol), in
// its state-of-the-world (SotW) variant by default, as gRPC's clients do
// (gRFC A27, A46, A53, A57, A88), or in its incremental (delta) variant
// (see Incremental below), with these rules (IDs refer to the project's
// docs/protocol.md):
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
//     registry order. An empty list is the first request of a type
//     on a stream only for the wildcard (R-11.5, see WatchAll).
//   - A resource whose last watch is cancelled keeps its cache entry until
//     the request that unsubscribes from it is written: a watch made again
//     before that gets the cached value at once; one made after is a new
//     subscription, which the server answers. When nothing is
//     watched on a management server any more, its stream is closed and
//     what it served is forgotten; the next watch opens a new stream
//     . The connection (transport) stays until Close.
//   - A requested resource that no response names within the watch expiry
//     timeout (15 s) after the request was sent on a connected stream does
//     not exist. The timer does not run for cached resources, stops
//     when the stream fails and starts afresh on the next stream.
//   - Cached resources survive reconnects. A SotW Listener or
//     Cluster response that leaves out a cached resource deletes it, unless
//     the server has the ignore_resource_deletion feature;
//     RouteConfiguration and ClusterLoadAssignment resources are never
//     deleted by omission.
//   - Streams are retried with exponential backoff (1 s × 1.6ⁿ ± 20 %, at
//     most 120 s; ), which starts over, and the next stream starts
//     at once, after a healthy stream: one that accepted a response (as
//     grpc-go), or, while the client awaits nothing on it (every
//     resource watched there received from that server, or known not to
//     exist), stayed open for 1 s after its first request was written (a
//     delta server to which the client is up to date rightly sends
//     nothing); the same for every transport and both variants. A flapping server is reconnected to each time it
//     answered; a healthy stream, or one that had responses, that ends
//     is replaced silently. A stream that fails before any response and
//     before it is healthy is reported to watchers as ErrConnection
//     and so is every failure caused by a message size limit,
//     whenever it happens, which backs off as well: at most one error per
//     watcher per failed stream.
//   - Responses of unknown type URLs, and messages that do not decode, are
//     ignored: no ACK, no NACK, and the stream keeps reading.
//   - WatchAll (or Watch of the name "*") subscribes to the wildcard, next
//     to the names watched with Watch ("How the client specifies what
//     resources to return"): for Listener and Cluster in its legacy form,
//     an empty list, when it is subscribed at the type's first request on
//     a stream (which every server understands); explicitly as "*"
//     otherwise, and always for the other types, for which the protocol
//     defines no legacy form. A Watch of an xdstp glob
//     collection ("xdstp://auth/type/path/*", xRFC TP1) is a wildcard
//     scoped to the authority, on the authority's servers.
//   - A name no request could carry (not valid UTF-8, or longer than
//     MaxNameLength) fails its own watch alone, with ErrUnsupported
//
//
// # Resilience
//
//   - Fallback (gRFC A71, R-15): when the active server of a server list
//     (top-level xds_servers, or an authority's) fails before any response
//     while a watched resource was never received, the next server of the
//     list is used; watchers hear of the failure only when the last server
//     fails. The first response of a higher-priority server reverts to it,
//     asking it for every watched resource, and closes the lower-priority
//     stream. WatchAll and glob collections follow the same servers
//     . ResourceOrigin says which server sent a cached value.
//   - Server-reported errors (resource_errors, xRFC TP3, gRFC A88; R-19)
//     reach the named resource's watchers, wrapping ErrServerReported and
//     the server's status; NOT_FOUND is a does-not-exist. With the server
//     feature fail_on_data_errors, a NACK or a server-reported NOT_FOUND
//     or PERMISSION_DENIED drops the cached value.
//   - TTLs and heartbeats (xDS protocol "TTL"; R-18): a resource sent with
//     a ttl expires (ResourceError wrapping ErrResourceNotFound) unless an
//     update or a heartbeat arrives within it.
//   - Last-known-good persistence (WithPersistence, WithStore; ):
//     accepted values are saved; on start, when no server answers within
//     WithPersistenceTimeout, watchers get the saved values, marked stale
//     (AmbientError wrapping ErrStale), until a server sends them.
//
// # Transports
//
// The engine reaches each server through the transport.XDS that the
// transport builder (WithTransportBuilder; by default ADS over gRPC)
// builds for it, and through nothing else: one aggregated stream for every
// type (ADS), or one stream per type (package transport/pertype, REST-JSON
// polling, files), as the transport says. A builder that decorates
// another keeps its layout. The engine keeps every piece of protocol
// state, for either layout: subscriptions, versions and nonces, ACK/NACK,
// the subscription sent again on a new stream, backoff and flow control,
// per stream; a per-type stream's failures are reported to the watchers
// of its type. Logs (the "stream" attribute) and connection errors name a
// stream as its transport does ("ADS stream", "REST-JSON polling of
// /v3/discovery:clusters"), with the server. The transports log through
// the client's logger unless given their own.
//
// # Incremental
//
// With WithDelta, or for a server whose bootstrap entry lists the
// "delta_ads" server feature, the client opens one
// DeltaAggregatedResources stream to that server instead (R-6.2; xDS
// protocol, "Incremental xDS"). Watchers, the cache, timers, flow control,
// deletion and Dump behave as with SotW; only the wire differs:
//
//   - Requests carry changes: resource_names_subscribe and
//     resource_names_unsubscribe, sorted. The first request of a type on a
//     stream subscribes to every name again (and "*" for WatchAll; the
//     wildcard alone is the legacy empty list) and lists the version of
//     every resource cached from that server in
//     initial_resource_versions. ACKs carry the response's nonce, NACKs
//     also an error_detail as in SotW; the node is in the first request of
//     a stream only.
//   - Every resource has its own version, which the cache and Dump keep;
//     system_version_info is informational. Unchanged bytes are not
//     decoded again, and a body-less resource at the cached version is a
//     heartbeat (it re-arms the resource's TTL, R-18).
//   - removed_resources deletes (ResourceError wrapping
//     ErrResourceNotFound, status DOES_NOT_EXIST), for every type, unless
//     the server has ignore_resource_deletion and the resource is cached.
//     A requested name the server never answers still meets the
//     does-not-exist timer.
//   - A name repeated among the resources, or both among them and in
//     removed_resources, makes the response a NACK; the name is treated as
//     invalid and the rest applied.
//   - A resource whose name is not watched but one of whose aliases is,
//     goes to the watchers of that alias, cached under the alias; the
//     server may remove it by its name or by any of its aliases.
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
// ErrResourceNotFound, ErrResourceInvalid, ErrServerReported,
// ErrConnection, ErrTimeout, ErrStale, ErrUnsupported or ErrClosed; test
// them with errors.Is.
//
// # Limits
//
// A response may be at most 4 MiB over the default gRPC transport, and
// over this module's other transports (a REST-JSON body, a file); raise
// the limit with WithMaxRecvMsgSize, which the transports apply unless
// built with a limit of their own. A SotW response carries every
// resource of its type that the client asked for, so a large subscription
// (or a wildcard) makes large responses. Requests are limited by the
// management server (4 MiB by default for a gRPC server): a SotW request
// names every subscribed resource of its type, so some 100 000 names of 40
// bytes reach it. A stream that fails on either limit is reported to the
// watchers with an error wrapping ErrConnection and
// transport.ErrMessageTooLarge, in which the transport names its receive
// limit and the option that raises it, or the size of the largest request
// sent, and is retried with the backoff above; it fails again until the
// limit is raised or the subscription shrinks.
//
// # Metrics
//
// The client keeps gRPC's XdsClient metrics (gRFC A78, with gRFC A88's
// cache states; R-21): WithMetrics reports the counters
// (resource_updates_valid, resource_updates_invalid, server_failure) to a
// MetricsRecorder and registers the gauges (connected, resources), which
// Gauges computes when they are collected. The nested module
// github.com/proxyless/xds/otelxds records them to OpenTelemetry.
//
// # Related packages
//
// Package csds serves Dump as the CSDS service on the application's gRPC
// server (gRFC A40, R-20.3). Package lrs reports load; the
// resolver's data path feeds it and, by default, sends it on the client's
// own connection to the management server (TransportBuilder).
//
// # Not supported
//
// gRFC A88's "keep on deletion" default (R-14.4: a deletion drops the
// cached value) is not implemented. Only xDS v3 is spoken.
package client
