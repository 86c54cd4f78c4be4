// SPDX-License-Identifier: Apache-2.0

// Package xdshttp is proxyless HTTP: an http.RoundTripper whose requests
// are routed, balanced, retried and secured by the xDS configuration of
// the management server, as a sidecar would, and an xDS-enabled net/http
// server. See docs/http.md.
package xdshttp
