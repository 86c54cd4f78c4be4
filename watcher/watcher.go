// SPDX-License-Identifier: Apache-2.0

// Package watcher defines how the xDS client delivers resources to
// application code: the Watcher interface of gRFC A88, with a done func on
// every call for flow control, and adapters that make it easy to implement.
//
// # Delivery contract
//
// For one client, all Watcher methods of all watches are called serially, on
// a goroutine the client owns, in the order the management server's
// responses were received (within one response: in response order, and
// deletions after updates). A method may call back into the client (start
// or cancel watches).
//
// Each method receives a done func. The client reads no further response
// from the management server stream that produced the call until done has
// been called by every watcher notified of that response (xDS flow control,
// done may be called from any goroutine, at any later time; calling
// it more than once has no effect. A watcher that never calls done stalls
// its stream.
//
// # Errors
//
// ResourceError means the resource is unusable: it does not exist, it was
// deleted, or it was never received valid (so there is no previous value to
// keep). The watcher should stop using any value it held. AmbientError means
// a problem (a NACKed update, a lost connection) that leaves the last value
// delivered by ResourceChanged valid; the watcher should keep using it.
// Errors wrap the client's sentinel errors (client.ErrResourceNotFound,
// client.ErrResourceInvalid, client.ErrConnection); test with errors.Is.
//
// This package imports nothing else of the module.
package watcher

// Watcher receives the events of one watch. T is the decoded resource type,
// for example *resources.Listener. See the package doc for the delivery
// contract.
type Watcher[T any] interface {
	// ResourceChanged delivers a new value of the resource: the first one,
	// or one that differs from the previous value, or the same value again
	// after an error was reported (which clears the error). The value is
	// immutable and shared between watchers; do not modify it.
	ResourceChanged(resource T, done func())

	// ResourceError reports that the resource is unusable (see the package
	// doc). The watch stays active: a later ResourceChanged brings it back.
	ResourceError(err error, done func())

	// AmbientError reports a problem that does not invalidate the last
	// value delivered by ResourceChanged.
	AmbientError(err error, done func())
}

// Funcs adapts plain functions to a Watcher. Each method calls its function,
// if set, and then done; a nil function means the event is ignored. Use it
// when the callback finishes its work before returning (the common case).
type Funcs[T any] struct {
	OnChanged       func(resource T)
	OnResourceError func(err error)
	OnAmbientError  func(err error)
}

// ResourceChanged calls f.OnChanged, then done.
func (f Funcs[T]) ResourceChanged(resource T, done func()) {
	defer done()
	if f.OnChanged != nil {
		f.OnChanged(resource)
	}
}

// ResourceError calls f.OnResourceError, then done.
func (f Funcs[T]) ResourceError(err error, done func()) {
	defer done()
	if f.OnResourceError != nil {
		f.OnResourceError(err)
	}
}

// AmbientError calls f.OnAmbientError, then done.
func (f Funcs[T]) AmbientError(err error, done func()) {
	defer done()
	if f.OnAmbientError != nil {
		f.OnAmbientError(err)
	}
}
