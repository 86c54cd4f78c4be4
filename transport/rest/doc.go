// SPDX-License-Identifier: Apache-2.0

// Package rest implements REST-JSON polling subscriptions (xDS protocol,
// "REST-JSON polling subscriptions"): each resource type is fetched with
// HTTP POST {base}/v3/discovery:{listeners|routes|clusters|endpoints}, the
// body a DiscoveryRequest in proto3 JSON, the answer a DiscoveryResponse
// in proto3 JSON. No gRPC stream is opened.
//
//	b := rest.NewBuilder(rest.WithInterval(10 * time.Second))
//	c, err := client.New(cfg, client.WithTransportBuilder(b)) // server_uri "http://xds.example.com:8080"
//
// Its Builder is a transport.Builder whose transport.XDS polls, one
// "stream" per type: the client's engine (subscriptions, validation,
// cache, ACK/NACK, does-not-exist timers, watchers) is the same as for ADS.
// Only the SotW variant exists over REST (and no ADS, nor any other gRPC
// service): a delta stream fails with an error wrapping
// transport.ErrDeltaUnsupported, and load reporting with one wrapping
// transport.ErrLRSUnsupported. The client's logs and errors name a type's
// polling by its endpoint ("REST-JSON polling of /v3/discovery:clusters").
// The transport logs through the client's logger unless given one
// (WithLogger), and limits a response body to the client's receive limit
// (client.WithMaxRecvMsgSize) unless given one (WithMaxResponseBytes).
//
// # Polling
//
// Per type, at most one request is outstanding at a time (the server may
// hold it: long polling). The first request of a type is posted at once;
// the next one when the client has answered the previous response (its
// ACK or NACK, which the client sends as for a stream,
// transport.Request.Answer) and the interval has passed (WithInterval, default DefaultInterval 30 s, ±20 % jitter so
// that many clients spread out), or at once when the type's subscription
// (resource_names) changes. Each request carries the node, the
// type's resource_names and the version_info the client last accepted;
// after a NACK, the next poll carries the client's error_detail. A poll
// that adds names to those of the last answered poll carries no
// version_info: a stateless server cannot tell that the client lacks them,
// and go-control-plane v0.14's gateway answers 304 to a current version
// whatever the names. A poll held by the server for 1 s or more is
// cancelled and posted again when the names change; one answered sooner
// is let finish (keeping its connection), the new names going at once
// after it. HTTP 304
// Not Modified (an empty body, as go-control-plane's HTTP gateway answers
// when the version is current) changes nothing. A response is given a
// nonce by the transport, so the client's bookkeeping is that of a stream.
// Nothing is polled for a type with no names subscribed (an empty list
// would be a wildcard, R-11.5).
//
// # Errors
//
// An HTTP error (no response, or a status other than 200 and 304), a body
// that is not a DiscoveryResponse of the requested type, a body larger
// than WithMaxResponseBytes, a poll not over within WithPollTimeout
// (default DefaultPollTimeout, 60 s, the body included; the error wraps
// context.DeadlineExceeded), or a redirect to another origin than the
// server URI's (scheme, host and port; ErrCrossOriginRedirect, never
// followed, so that neither the node nor the subscription goes there)
// ends the stream with the error. Redirects within the origin are
// followed. The client handles the error as a failed stream: when
// the stream had given responses it starts a new one at once without
// reporting anything (after its backoff for a body over the limit), which
// polls every type; when a stream fails before any response, its watchers
// get the error as a connection error (AmbientError with a cached value,
// ResourceError otherwise, R-11.3) and the client retries with its
// backoff (1 s × 1.6ⁿ ± 20 %, at most 120 s; ).
package rest
