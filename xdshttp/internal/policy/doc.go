// SPDX-License-Identifier: Apache-2.0

// Package policy is what the HTTP data path (package xdshttp) decides per
// request from a route's configuration, as Envoy's router decides it
// (docs/http.md, R-17.7): whether an attempt is retried and after what
// back-off (Retry), the path and Host an attempt sends (RewritePath,
// RewriteHost), the time a request may take (RouteTimeout), and its hash
// for ring_hash (RequestHash). It has no transport of its own: pure
// functions and immutable values, built once per configuration and safe
// for concurrent use.
//
// The reference is Envoy's documented behaviour, cited where each piece
// is defined: the router filter's x-envoy-retry-on conditions and retry
// semantics, RouteAction (prefix_rewrite, regex_rewrite,
// host_rewrite_literal, timeout) and RouteAction.HashPolicy. Where the
// gRPC path computes the same thing (the request hash), the functions
// agree with package dataplane's.
package policy
