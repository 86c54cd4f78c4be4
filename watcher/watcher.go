// SPDX-License-Identifier: Apache-2.0

package watcher

// Watcher receives the events of one watch. T is the decoded resource type,
// for example *resources.Listener for a client watch, or *depmgr.XDSConfig
// for a dependency manager. See the package doc for the delivery contract.
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
