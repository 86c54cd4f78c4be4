// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"slices"
	"sync"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// WatchAll registers w for every resource of type typ that the management
// server sends, through a wildcard subscription (the resource name "*":
// xDS protocol, "How the client specifies what resources to return"), and
// returns a func that cancels the watch. The server decides what "every
// resource" is, typically from the node; servers commonly offer wildcards
// for Listener and Cluster only.
//
// w gets ResourceChanged for each resource received, whose value carries
// its name (Listener.Name, Cluster.Name, …), and ResourceError, a
// *ResourceError naming the resource and wrapping ErrResourceNotFound, when
// the server deletes one it had sent: by leaving it out of a SotW Listener
// or Cluster response or naming it in a delta response's
// removed_resources, unless the server has
// ignore_resource_deletion. A resource received invalid gets
// AmbientError (a valid version is cached) or ResourceError (none is),
// wrapping ErrResourceInvalid. When the stream fails before any
// response, w gets one AmbientError whose ResourceError.Name is
// "*", wrapping ErrConnection. A new WatchAll learns the resources already
// cached at once, in name order.
//
// The wildcard is subscribed on the stream of the bootstrap's top-level
// servers (those of old-style names), alongside any names watched with
// Watch, as the protocol requires: the client always sends "*"
// explicitly, never the legacy empty list. Resources received through it
// are cached like watched ones, appear in Dump, and share one cache entry
// with a Watch of the same name; a Watch of such a name gets the cached
// value at once. Cancelling a Watch of a name while the wildcard is
// subscribed keeps the cached resource (the server resends or removes it).
// There is no does-not-exist timer for the wildcard itself. Flow control
// and ordering are as for Watch.
//
// Errors and cancellation behave as for Watch: an unregistered type gets
// one ResourceError wrapping ErrUnsupported and a no-op cancel; cancel is
// idempotent, and the last cancel of the type's wildcard unsubscribes from
// "*" and forgets the resources that no Watch names. WatchAll is safe for
// concurrent use and may be called from a watcher method.
func WatchAll[T any](c *Client, typ resources.Type[T], w watcher.Watcher[T]) (cancel func()) {
	return c.watchAll(typ, newWatchEntry(w))
}

func (c *Client) watchAll(typ resources.ResourceType, we *watchEntry) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return func() {}
	}
	failLocked := func(err error) func() {
		c.scheduleLocked(we, nil, func(done func()) {
			we.resErr(c.resourceError(typ, wildcardName, err), done)
		})
		return func() {}
	}
	rt, ok := c.registry.Lookup(typ.TypeURL())
	if !ok || !we.sameType(rt) {
		return failLocked(fmt.Errorf("%w: resource type %q is not registered with the client", ErrUnsupported, typ.TypeURL()))
	}
	ch, err := c.channelForLocked("") // an old-style name: the top-level servers
	if err != nil {
		return failLocked(err)
	}
	ts := ch.typeStateLocked(rt)
	ts.wildcard = append(ts.wildcard, we)
	if len(ts.wildcard) == 1 {
		ch.subscriptionChangedLocked(ts, wildcardName, true)
	}
	// the cached resources at once, in name order; names without
	// a cached value are another watch's business.
	for _, name := range sortedKeys(ts.entries) {
		if rs := ts.entries[name]; rs.value != nil {
			c.replayLocked(rs, we)
		}
	}
	return sync.OnceFunc(func() { c.unwatchAll(ts, we) })
}

func (c *Client) unwatchAll(ts *typeState, we *watchEntry) {
	we.cancelled.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(ts.wildcard, we)
	if i < 0 {
		return
	}
	ts.wildcard = slices.Delete(ts.wildcard, i, i+1)
	if len(ts.wildcard) > 0 || c.closed {
		return
	}
	for _, rs := range ts.entries {
		if len(rs.watchers) == 0 {
			c.dropEntryLocked(rs)
		}
	}
	ts.ch.subscriptionChangedLocked(ts, wildcardName, false)
}
