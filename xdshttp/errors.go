// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"errors"
	"fmt"
	"strings"
)

// The errors a Transport's requests fail with, wrapped in an *Error that
// names the host, and the route and cluster when known; test with
// errors.Is. docs/http.md ("Errors") lists them with the errors of the
// client and of depmgr they may wrap instead (client.ErrResourceNotFound,
// client.ErrResourceInvalid, client.ErrConnection,
// depmgr.ErrNoVirtualHost) and the request's context errors.
var (
	// ErrNoRoute: no route of the virtual host matches the request.
	ErrNoRoute = errors.New("no route matches the request")
	// ErrRouteAction: the matched route does not forward to a cluster
	// (non_forwarding_action, redirect, direct_response,
	// cluster_specifier_plugin).
	ErrRouteAction = errors.New("the route does not forward requests to a cluster")
	// ErrClusterUnavailable: the route's cluster has an error (it does not
	// exist, is invalid, its aggregate graph is broken, the HTTP path
	// cannot run its policy or its TLS configuration).
	ErrClusterUnavailable = errors.New("cluster unavailable")
	// ErrNoHealthyEndpoint: the cluster has no endpoint a request may be
	// sent to (none usable, or all ejected by outlier detection).
	ErrNoHealthyEndpoint = errors.New("no healthy endpoint")
	// ErrDropped: the request was dropped by the cluster's drop_overloads
	// (gRFC A27).
	ErrDropped = errors.New("request dropped by the cluster's drop_overloads")
	// ErrCircuitBreakerOpen: the cluster's max_requests are in flight
	// (gRFC A32).
	ErrCircuitBreakerOpen = errors.New("circuit breaker open: max_requests in flight")
	// ErrFaultAbort: the fault injection filter aborted the request
	// (gRFC A33); the *FaultAbortError in the chain has the status.
	ErrFaultAbort = errors.New("request aborted by fault injection")
	// ErrTimeout: the route's timeout or max_stream_duration expired.
	ErrTimeout = errors.New("route timeout")
	// ErrClosed: the Transport is closed.
	ErrClosed = errors.New("xdshttp: transport closed")
	// ErrUnsupportedScheme: the URL's scheme is neither http nor https.
	ErrUnsupportedScheme = errors.New("unsupported URL scheme")
)

// Error is the error of a request the Transport could not send, or whose
// attempts all failed: what happened (Err), and where.
type Error struct {
	// Host is the request's URL host, which names the Listener.
	Host string
	// Route describes the matched route ("route 2 (\"name\")"), "" before
	// one was matched.
	Route string
	// Cluster is the route cluster the request went to, "" before one was
	// chosen.
	Cluster string
	// Err is what happened; errors.Is and errors.As see through Error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "xdshttp: host %q", e.Host)
	if e.Route != "" {
		fmt.Fprintf(&b, ", %s", e.Route)
	}
	if e.Cluster != "" {
		fmt.Fprintf(&b, ", cluster %q", e.Cluster)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// FaultAbortError is the error of a request aborted by fault injection
// (gRFC A33): the HTTP status the fault filter's abort gives (http_status,
// or the x-envoy-fault-abort-request header). It wraps ErrFaultAbort.
type FaultAbortError struct {
	// Status is the HTTP status code, 200 to 599.
	Status int
}

func (e *FaultAbortError) Error() string {
	return fmt.Sprintf("%v: HTTP status %d", ErrFaultAbort, e.Status)
}

func (e *FaultAbortError) Unwrap() error { return ErrFaultAbort }
