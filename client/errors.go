// SPDX-License-Identifier: Apache-2.0

package client

import (
	"errors"
	"fmt"
)

var (
	// ErrResourceNotFound is wrapped by errors delivered to ResourceError
	// when the management server does not have the resource: a SotW
	// response of a type with AllResourcesRequiredInSotW (LDS, CDS) left
	// it out, or no response named it within the watch expiry
	// timeout. The resource's status in Dump is DOES_NOT_EXIST.
	ErrResourceNotFound = errors.New("resource does not exist")

	// ErrResourceInvalid is wrapped by errors delivered when a received
	// version of the resource failed validation, or its name appeared more
	// than once in one response, and was NACKed. It comes to
	// AmbientError when an earlier valid version is still in use, to
	// ResourceError otherwise.
	ErrResourceInvalid = errors.New("resource invalid")

	// ErrConnection is wrapped by errors delivered when the stream to the
	// management server failed before it received any response and before
	// it was healthy, or could not be created. It comes to AmbientError for resources that
	// have a cached value, to ResourceError otherwise.
	ErrConnection = errors.New("connection error")

	// ErrServerReported is wrapped by errors delivered when the management
	// server reported an error for the resource in a response's
	// resource_errors (xRFC TP3, gRFC A88, R-19); the error also wraps the
	// server's status (status.FromError finds it). It comes to AmbientError
	// while a cached value is kept, to ResourceError otherwise. With code
	// NOT_FOUND the error wraps ErrResourceNotFound too.
	ErrServerReported = errors.New("error reported by the management server")

	// ErrTimeout is wrapped by the ResourceError delivered when a resource
	// is not received within twice the watch expiry timeout (30 s by
	// default) from a management server with the server feature
	// resource_timer_is_transient_error (gRFC A88, R-2.5): such a server
	// reports missing resources itself (resource_errors, R-19), so the
	// timeout is a transient error, not a does-not-exist; the resource is
	// delivered if it comes later. Dump shows TIMEOUT.
	ErrTimeout = errors.New("resource not received in time")

	// ErrStale is wrapped by the AmbientError delivered with a value loaded
	// from persistence (WithStore, WithPersistence) because no management
	// server could be reached on start: the value may be out of date. It
	// stays stale until a server sends the resource.
	ErrStale = errors.New("stale value from persistence: no management server reachable")

	// ErrUnsupported is wrapped by errors delivered at once to a watch that
	// cannot be served: a type not registered with the client, a malformed
	// xdstp name, or an authority absent from the bootstrap.
	ErrUnsupported = errors.New("watch not supported")

	// ErrClosed is wrapped by the ResourceError delivered to a watch
	// registered after the client was closed (Watch, WatchAll,
	// WatchVersioned; so the ResourceError of depmgr.New's watcher too),
	// on a goroutine of its own, soon after the call.
	ErrClosed = errors.New("client closed")
)

// ResourceError is the error type delivered to watchers: it names the
// resource and the node, and wraps one of the Err… values above (test with
// errors.Is; get the details with errors.As).
type ResourceError struct {
	// TypeURL is the watched type URL.
	TypeURL string
	// TypeName is the short type name ("Cluster").
	TypeName string
	// Name is the resource name, canonical for xdstp names.
	Name string
	// NodeID is the bootstrap node ID.
	NodeID string
	// Err wraps one of ErrResourceNotFound, ErrResourceInvalid,
	// ErrServerReported, ErrConnection, ErrTimeout, ErrStale,
	// ErrUnsupported, ErrClosed.
	Err error
}

// Error returns, for example,
// `xds: Cluster "c1": resource does not exist: not received within 15s (node "n1")`.
func (e *ResourceError) Error() string {
	return fmt.Sprintf("xds: %s %q: %v (node %q)", e.TypeName, e.Name, e.Err, e.NodeID)
}

// Unwrap returns e.Err.
func (e *ResourceError) Unwrap() error { return e.Err }
