// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// Watch registers w for the resource of type typ named name and returns a
// func that cancels the watch.
//
// The first watch of a resource subscribes to it on the ADS stream of the
// management server that serves it (opening the stream if needed). A watch
// of a resource that is already cached gets the cached value at once
// through ResourceChanged, followed by the last NACK error, if any, through
// AmbientError; a watch of a resource known not to exist gets ResourceError
// . Then w receives every change, as the watcher package describes.
//
// Watches that cannot be served (typ not registered with the client, or
// registered with another Go type; a malformed xdstp name; an authority that
// is not in the bootstrap) get one ResourceError wrapping ErrUnsupported, and
// a no-op cancel. After Close, Watch does nothing and returns a no-op
// cancel.
//
// cancel is idempotent. Once it returns, w receives no callback that had
// not started yet. The last cancel of a resource unsubscribes from it and
// drops its cache entry, unless the wildcard of its type is subscribed
// (WatchAll) and the resource is cached. Watch and cancel may be called
// from a watcher method. Watch is safe for concurrent use.
func Watch[T any](c *Client, typ resources.Type[T], name string, w watcher.Watcher[T]) (cancel func()) {
	return c.watch(typ, name, newWatchEntry(w))
}

// newWatchEntry erases the type of w.
func newWatchEntry[T any](w watcher.Watcher[T]) *watchEntry {
	return &watchEntry{
		changed:  func(v any, done func()) { w.ResourceChanged(v.(T), done) },
		resErr:   w.ResourceError,
		ambErr:   w.AmbientError,
		sameType: func(rt resources.ResourceType) bool { _, ok := rt.(resources.Type[T]); return ok },
	}
}

// watchEntry is one watch, with the watcher's methods type-erased.
type watchEntry struct {
	changed   func(v any, done func())
	resErr    func(err error, done func())
	ambErr    func(err error, done func())
	sameType  func(resources.ResourceType) bool
	cancelled atomic.Bool // set by cancel; callbacks check it before running
}

func (c *Client) watch(typ resources.ResourceType, name string, we *watchEntry) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return func() {}
	}
	failLocked := func(err error) func() {
		c.scheduleLocked(we, nil, func(done func()) {
			we.resErr(c.resourceError(typ, name, err), done)
		})
		return func() {}
	}
	rt, ok := c.registry.Lookup(typ.TypeURL())
	if !ok || !we.sameType(rt) {
		// name the type URL that was asked for.
		return failLocked(fmt.Errorf("%w: resource type %q is not registered with the client", ErrUnsupported, typ.TypeURL()))
	}
	name = resources.CanonicalName(name)
	byName := c.resources[rt.TypeURL()]
	rs := byName[name]
	if rs == nil {
		ch, err := c.channelForLocked(name)
		if err != nil {
			return failLocked(err)
		}
		if byName == nil {
			byName = make(map[string]*resourceState)
			c.resources[rt.TypeURL()] = byName
		}
		rs = &resourceState{typ: rt, name: name, ch: ch, status: v3adminpb.ClientResourceStatus_REQUESTED}
		byName[name] = rs
	}
	rs.watchers = append(rs.watchers, we)
	if len(rs.watchers) == 1 {
		// A new entry, or one received through the wildcard only: its
		// name joins the subscription.
		rs.ch.subscribeLocked(rs)
	}

	c.replayLocked(rs, we)
	return sync.OnceFunc(func() { c.unwatch(rs, we) })
}

// replayLocked tells a new watcher we the current state of rs at once
// the cached value, then the last NACK error as an AmbientError
// (gRFC A88's order); or, with nothing cached, ResourceError when the
// resource does not exist or its last version was NACKed; nothing while it
// is only requested. These calls are not tied to a response, so their
// done is not flow control.
func (c *Client) replayLocked(rs *resourceState, we *watchEntry) {
	switch {
	case rs.value != nil:
		v := rs.value
		c.scheduleLocked(we, nil, func(done func()) { we.changed(v, done) })
		if rs.nackErr != nil {
			err := c.invalidError(rs)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
	case rs.status == v3adminpb.ClientResourceStatus_DOES_NOT_EXIST:
		err := c.notFoundError(rs)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case rs.nackErr != nil:
		err := c.invalidError(rs)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	}
}

func (c *Client) unwatch(rs *resourceState, we *watchEntry) {
	we.cancelled.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(rs.watchers, we)
	if i < 0 {
		return
	}
	rs.watchers = slices.Delete(rs.watchers, i, i+1)
	if len(rs.watchers) > 0 || c.closed {
		return
	}
	byName := c.resources[rs.typ.TypeURL()]
	if byName[rs.name] != rs {
		return
	}
	rs.stopTimerLocked()
	// While the wildcard is subscribed, a cached resource stays, as
	// received through it: the server will send it again or remove it
	// (xDS protocol, "Unsubscribing from Resources").
	ts := rs.ch.types[rs.typ.TypeURL()]
	keep := len(ts.wildcard) > 0 && rs.value != nil
	if !keep {
		delete(byName, rs.name)
	}
	rs.ch.unsubscribeLocked(rs, !keep)
}

// scheduleLocked queues call for watcher we on the serializer. fc, if not
// nil, is the flow control of the response that caused the call: its done
// is what call receives. The call is skipped (and done called) if the
// watch was cancelled before the call started.
func (c *Client) scheduleLocked(we *watchEntry, fc *flowControl, call func(done func())) {
	done := func() {}
	if fc != nil {
		done = fc.add()
	}
	ok := c.serializer.Schedule(func() {
		if we.cancelled.Load() {
			done()
			return
		}
		call(done)
	})
	if !ok {
		done()
	}
}

// resourceError wraps err for delivery to a watcher of name.
func (c *Client) resourceError(typ resources.ResourceType, name string, err error) error {
	return &ResourceError{TypeURL: typ.TypeURL(), TypeName: typ.TypeName(), Name: name, NodeID: c.node.GetId(), Err: err}
}

// notFoundError is the error for watchers of a resource that does not exist.
func (c *Client) notFoundError(rs *resourceState) error {
	return c.resourceError(rs.typ, rs.name, fmt.Errorf("%w: %s", ErrResourceNotFound, rs.dneReason))
}

// invalidError is the error for watchers of a resource whose last received
// version was NACKed.
func (c *Client) invalidError(rs *resourceState) error {
	return c.resourceError(rs.typ, rs.name, fmt.Errorf("%w: version %q rejected: %w", ErrResourceInvalid, rs.nackVersion, rs.nackErr))
}
