// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// This file holds watches: their registration (Watch, WatchAll,
// WatchVersioned, glob collections) on the authority of their name, the
// delivery of watcher calls on the client's serializer (flow-controlled,
// R-12), and, at its end, what watchers are told and the rest of what a
// step of a cache entry asks (stepLocked).

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
// The name "*" is the wildcard: Watch(c, typ, "*", w) is WatchAll(c, typ, w).
//
// Watches that cannot be served (typ not registered with the client, or
// registered with another Go type; a malformed xdstp name; an authority that
// is not in the bootstrap) get one ResourceError wrapping ErrUnsupported, and
// a no-op cancel. After Close, w gets one ResourceError wrapping ErrClosed,
// on a goroutine of its own, and cancel is a no-op.
//
// cancel is idempotent. Once it returns, w receives no callback that had
// not started yet, even one queued before cancel was called; a callback
// running meanwhile (on another goroutine) may still be running when
// cancel returns. The last cancel of a resource unsubscribes from it. Its
// cache entry stays until the request that unsubscribes is written,
// so a watch made again before that gets the cached value at once, and one
// made after is a new subscription, which the server answers; while the
// wildcard of its type is subscribed (WatchAll), a cached resource stays
// for good. When nothing is watched on a management server any more, its
// ADS stream is closed and the cache of what it served is dropped; the next
// watch opens a new stream. Watch and cancel may be called from a
// watcher method. Watch is safe for concurrent use.
func Watch[T any](c *Client, typ resources.Type[T], name string, w watcher.Watcher[T]) (cancel func()) {
	return c.watch(typ, name, newWatchEntry(w))
}

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
// wrapping ErrResourceInvalid. When the stream fails, w
// gets one AmbientError whose ResourceError.Name is "*", wrapping
// ErrConnection. A new WatchAll learns the resources already cached at
// once, in name order.
//
// The wildcard is subscribed on the stream of the bootstrap's top-level
// servers (those of old-style names), alongside any names watched with
// Watch. When the wildcard is subscribed at a type's first request on a
// stream, that request subscribes to it in the legacy form, an empty name
// list, which every server understands (go-control-plane v0.14's snapshot
// cache takes an explicit "*" for a name); in SotW the requests of the type
// keep the empty list while the wildcard stays, since it covers every name
// . Otherwise "*" is sent explicitly. Resources received
// through the wildcard are cached like watched ones, appear in Dump, and
// share one cache entry with a Watch of the same name. Cancelling a Watch
// of a name while the wildcard is subscribed keeps the cached resource (the
// server resends or removes it). There is no does-not-exist timer for the
// wildcard itself. Flow control and ordering are as for Watch.
//
// The last cancel of the type's wildcard unsubscribes from "*" and forgets,
// once that is written, the resources that no Watch names. If the wildcard
// went out in the legacy form, an empty list cannot unsubscribe from it,
// so the stream is restarted at once, without backoff, asking for what is
// still watched; if nothing is, the stream is closed.
//
// Errors and cancellation behave as for Watch. WatchAll is safe for
// concurrent use and may be called from a watcher method.
func WatchAll[T any](c *Client, typ resources.Type[T], w watcher.Watcher[T]) (cancel func()) {
	return c.watch(typ, wildcardName, newWatchEntry(w))
}

// Versioned is a resource value with the version it was received with: the
// version_info of the SotW response that carried it, or the resource's own
// version in delta (what Dump shows as version_info).
type Versioned[T any] struct {
	Value   T
	Version string
}

// WatchVersioned is Watch for watchers that need the version of each value
// they are given: ResourceChanged gets the value with its version, taken
// when the delivery was queued, so that value and version always belong
// together (even for a cached value replayed to a new watcher while a
// newer response is being applied). The name "*" watches every resource,
// as WatchAll.
func WatchVersioned[T any](c *Client, typ resources.Type[T], name string, w watcher.Watcher[Versioned[T]]) (cancel func()) {
	return c.watch(typ, name, newEntry(versionedWatcher[T]{w}))
}

// newWatchEntry erases the type of w.
func newWatchEntry[T any](w watcher.Watcher[T]) *watchEntry {
	return newEntry(typedWatcher[T]{w})
}

// newEntry returns a watch of ew, not cancelled.
func newEntry(ew erasedWatcher) *watchEntry {
	we := &watchEntry{erasedWatcher: ew}
	we.target.Store(notByName)
	return we
}

func sameType[T any](rt resources.ResourceType) bool { _, ok := rt.(resources.Type[T]); return ok }

// watchEntry is one watch, with the watcher's methods type-erased. A
// watch by name costs three small allocations (the entry, the adapter
// behind erasedWatcher, and its cancel, the method value we.cancel, two
// words), which matters at tens of thousands of watches.
type watchEntry struct {
	erasedWatcher
	c *Client // set by watch, for cancel
	// target is the cache entry a watch by name watches (set by watch),
	// notByName for any other watch, and nil once the watch is cancelled:
	// callbacks check it before running (cancelled).
	target atomic.Pointer[entry]
}

// notByName is the target of a watch that is not by name: a WatchAll, a
// glob collection, or one that failed.
var notByName = new(entry)

// cancelled reports whether the watch was cancelled.
func (we *watchEntry) cancelled() bool { return we.target.Load() == nil }

// cancel cancels a watch by name. It is idempotent: the first call takes
// the target.
func (we *watchEntry) cancel() {
	if e := we.target.Swap(nil); e != nil && e != notByName {
		we.c.unwatch(e, we)
	}
}

// erasedWatcher is a watcher.Watcher[T] with T erased: values are passed
// as any, of the Go type of the resource type that sameType accepts.
type erasedWatcher interface {
	changed(v any, version string, done func())
	resErr(err error, done func())
	ambErr(err error, done func())
	// sameType reports whether rt decodes to the watcher's T.
	sameType(rt resources.ResourceType) bool
}

// typedWatcher adapts a watcher.Watcher[T] to erasedWatcher.
type typedWatcher[T any] struct{ w watcher.Watcher[T] }

func (t typedWatcher[T]) changed(v any, _ string, done func())  { t.w.ResourceChanged(v.(T), done) }
func (t typedWatcher[T]) resErr(err error, done func())         { t.w.ResourceError(err, done) }
func (t typedWatcher[T]) ambErr(err error, done func())         { t.w.AmbientError(err, done) }
func (typedWatcher[T]) sameType(rt resources.ResourceType) bool { return sameType[T](rt) }

// versionedWatcher adapts a watcher.Watcher[Versioned[T]] to
// erasedWatcher, for WatchVersioned.
type versionedWatcher[T any] struct{ w watcher.Watcher[Versioned[T]] }

func (t versionedWatcher[T]) changed(v any, version string, done func()) {
	t.w.ResourceChanged(Versioned[T]{Value: v.(T), Version: version}, done)
}
func (t versionedWatcher[T]) resErr(err error, done func())         { t.w.ResourceError(err, done) }
func (t versionedWatcher[T]) ambErr(err error, done func())         { t.w.AmbientError(err, done) }
func (versionedWatcher[T]) sameType(rt resources.ResourceType) bool { return sameType[T](rt) }

// MaxNameLength is the longest resource name a watch may name, in bytes:
// 4096. A longer name, or one that is not valid UTF-8 (protobuf strings
// must be, so no request could carry it), gets a ResourceError wrapping
// ErrUnsupported for that watch alone, and nothing is sent.
const MaxNameLength = 4096

// checkName returns why name cannot be watched, or nil.
func checkName(name string) error {
	switch {
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: resource name of %d bytes is longer than the limit of %d (client.MaxNameLength)", ErrUnsupported, len(name), MaxNameLength)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: resource name %q is not valid UTF-8", ErrUnsupported, name)
	}
	return nil
}

// watch registers we for the resource typ/name, or for the wildcard of typ
// when name is "*".
func (c *Client) watch(typ resources.ResourceType, name string, we *watchEntry) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		// Not on the serializer, which Close stopped.
		err := c.resourceError(typ, resources.CanonicalName(name), ErrClosed)
		go we.resErr(err, func() {})
		return func() {}
	}
	if err := checkName(name); err != nil {
		return c.failWatchLocked(we, typ, name, err)
	}
	name = resources.CanonicalName(name)
	rt, ok := c.registry.Lookup(typ.TypeURL())
	if !ok || !we.sameType(rt) {
		// name the type URL that was asked for.
		return c.failWatchLocked(we, typ, name, fmt.Errorf("%w: resource type %q is not registered with the client", ErrUnsupported, typ.TypeURL()))
	}
	if isGlob(name) || name == wildcardName {
		cancel, err := c.watchCollectionLocked(rt, name, we)
		if err != nil {
			return c.failWatchLocked(we, typ, name, err)
		}
		return cancel
	}
	a, err := c.authorityForLocked(name)
	if err == nil {
		err = a.attachLocked()
	}
	if err != nil {
		return c.failWatchLocked(we, typ, name, err)
	}
	e, first := a.watchLocked(rt, name, we)
	if first {
		// A new entry, one held by a collection only, or one whose
		// unsubscription is not written yet: its name joins the
		// subscription.
		c.stepLocked(e, evWatched, &input{}, nil)
		a.subscriptionChangedLocked(rt, name, true)
	}
	c.replayLocked(e, we)
	c.servePersistedLocked(e)
	we.c = c
	we.target.Store(e)
	return we.cancel
}

// failWatchLocked gives we, a watch of typ/name that cannot be served, one
// ResourceError wrapping err, and returns its no-op cancel.
func (c *Client) failWatchLocked(we *watchEntry, typ resources.ResourceType, name string, err error) func() {
	rerr := c.resourceError(typ, name, err)
	c.scheduleLocked(we, nil, func(done func()) { we.resErr(rerr, done) })
	return func() {}
}

// unwatch removes we, just cancelled, from the watchers of e. The last
// one unsubscribes e's name; the entry stays until that is written
// . The does-not-exist timer keeps running meanwhile: if the name
// is watched again before the unsubscription is written, the server never
// heard of it.
func (c *Client) unwatch(e *entry, we *watchEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !e.auth.unwatchLocked(e, we) {
		return // not the last, or dropped meanwhile
	}
	c.unsubscribeEntryLocked(e)
	e.auth.subscriptionChangedLocked(e.typ, e.name, false)
}

// unsubscribeEntryLocked records that e, which lost its last watcher (or
// the collection that held it), is no longer subscribed: its serving
// channel owes the server its unsubscription, and keeps it until that is
// written; without one, it is released at once.
func (c *Client) unsubscribeEntryLocked(e *entry) {
	ch := e.auth.servingLocked()
	c.stepLocked(e, evUnwatched, &input{unserved: ch == nil}, nil)
	if ch != nil && e.guard.owed() {
		ch.pendingLocked(e)
	}
}

// scheduleLocked queues call for watcher we on the serializer. fc, if not
// nil, is the flow control of the response that caused the call: call then
// receives a done func that releases it once. The call is skipped (and
// done called) if the watch was cancelled before the call started.
func (c *Client) scheduleLocked(we *watchEntry, fc *flowControl, call func(done func())) {
	if fc == nil {
		c.serializer.Schedule(func() {
			if !we.cancelled() {
				call(noop)
			}
		})
		return
	}
	c.deliverLocked(&delivery{we: we, fc: fc, call: call})
}

// scheduleChangedLocked is scheduleLocked for a ResourceChanged call with
// v and version, the most common call, without a closure of its own when
// flow controlled.
func (c *Client) scheduleChangedLocked(we *watchEntry, fc *flowControl, v any, version string) {
	if fc == nil {
		c.scheduleLocked(we, nil, func(done func()) { we.changed(v, version, done) })
		return
	}
	c.deliverLocked(&delivery{we: we, fc: fc, v: v, version: version})
}

// noop is the done func of calls that are not flow controlled.
func noop() {}

// delivery is one flow-controlled watcher call queued on the serializer.
// Its run method value is both the func the serializer runs and the done
// func the watcher gets: a mesh's response makes tens of thousands of
// calls, and each then costs two allocations (the delivery and the method
// value), where a closure, its done func and sync.OnceFunc took four.
type delivery struct {
	we      *watchEntry
	fc      *flowControl
	call    func(done func()) // nil: we.changed(v, version, done)
	v       any
	version string
	step    func()        // d.run, set by deliverLocked
	state   atomic.Uint32 // deliveryQueued, then deliveryCalled, then deliveryDone
}

const (
	deliveryQueued uint32 = iota // in the serializer's queue
	deliveryCalled               // the call was made; done not called yet
	deliveryDone                 // done was called: fc released
)

// deliverLocked takes a reference on d's flow control and queues d.
func (c *Client) deliverLocked(d *delivery) {
	d.fc.add()
	d.step = d.run
	if !c.serializer.Schedule(d.step) {
		d.fc.release()
	}
}

// run makes d's call, the first time it runs (from the serializer); every
// later run is a call of done by the watcher: the first releases d's flow
// control, the others do nothing, as watchers may call done more than
// once. A cancelled watch is not called, and done at once.
func (d *delivery) run() {
	if d.state.CompareAndSwap(deliveryQueued, deliveryCalled) {
		switch {
		case d.we.cancelled():
			d.run()
		case d.call != nil:
			d.call(d.step)
		default:
			d.we.changed(d.v, d.version, d.step)
		}
		return
	}
	if d.state.CompareAndSwap(deliveryCalled, deliveryDone) {
		d.fc.release()
	}
}

// watchCollectionLocked registers we for a collection: the wildcard ("*",
// WatchAll) of the top-level servers, or the glob collection name of its
// authority's servers (glob.go), and returns its cancel. The cached
// members are delivered at once, in name order. It returns the
// error of a watch that cannot be served.
func (c *Client) watchCollectionLocked(rt resources.ResourceType, name string, we *watchEntry) (func(), error) {
	var (
		a   *authority
		err error
	)
	if name == wildcardName {
		a = c.authorityOfLocked(c.cfg.Servers)
	} else {
		a, err = c.authorityForLocked(name)
	}
	if err == nil {
		err = a.attachLocked()
	}
	if err != nil {
		return nil, err
	}
	first := a.watchCollectionLocked(rt, name, we)
	if first {
		a.subscriptionChangedLocked(rt, name, true)
	}
	for _, e := range a.sortedEntriesLocked(rt.TypeURL()) {
		if e.value != nil && (name == wildcardName || globMatch(name, e.name)) {
			c.replayLocked(e, we)
		}
	}
	if first {
		c.servePersistedCollectionLocked(a, rt)
	}
	return func() { c.unwatchCollection(a, rt, name, we) }, nil // idempotent: a second call finds we gone
}

// unwatchCollection cancels a watch of a collection. The last one
// unsubscribes from it, and the members that nothing else wants are
// unsubscribed: forgotten once that is written.
func (c *Client) unwatchCollection(a *authority, rt resources.ResourceType, name string, we *watchEntry) {
	we.target.Store(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	url := rt.TypeURL()
	if !a.unwatchCollectionLocked(url, name, we) {
		return
	}
	for e := range a.entriesLocked(url) {
		if len(e.watchers) == 0 && !e.guard.owed() && (name == wildcardName || globMatch(name, e.name)) && !a.wantsLocked(url, e.name) {
			c.unsubscribeEntryLocked(e)
		}
	}
	a.subscriptionChangedLocked(rt, name, false)
}

// What watchers are told, and the rest of what an entry's step asks
// (entry.step): stepLocked is the one place where an event of an entry
// reaches timers, TTLs, persistence, the log, the watchers and the cache.

// stepLocked applies ev, with what in brings, to e, and carries out the
// effects of the step, in this order: the does-not-exist timer, the
// TTL, persistence, the log, the watchers (in the entry's
// watcher order, flow-controlled by fc when it is not nil, R-12), and the
// release of the entry when nothing keeps it any more.
func (c *Client) stepLocked(e *entry, ev event, in *input, fc *flowControl) {
	fx := e.step(ev, in)
	if fx.fx&fxStopTimer != 0 {
		e.stopTimerLocked()
	}
	if fx.fx&fxTime != 0 {
		c.timeLocked(in.et, e)
	}
	if fx.fx&fxStopTTL != 0 {
		e.stopTTLLocked()
	}
	if fx.fx&fxSetTTL != 0 {
		c.setTTLLocked(e, in.ttl, in.now)
	}
	if fx.fx&fxPersist != 0 {
		c.persistLocked(e)
	}
	if fx.log.msg != "" {
		c.logStepLocked(e, ev, in, fx.log)
	}
	if fx.fx&fxNotify != 0 {
		c.notifyLocked(e, ev, in, fx.n, fc)
	}
	if fx.fx&fxRelease != 0 {
		e.auth.releaseLocked(e)
	}
}

// logStepLocked logs n for a step of e.
func (c *Client) logStepLocked(e *entry, ev event, in *input, n note) {
	logger := c.logger
	if in.logger != nil {
		logger = in.logger
	}
	attrs := []any{xdslog.KeyTypeURL, e.typ.TypeURL(), xdslog.KeyResource, e.name}
	switch ev {
	case evServerError, evServerNotFound:
		attrs = append(attrs, xdslog.KeyError, status.ErrorProto(in.status), xdslog.KeyCachedValueKept, e.value != nil)
	case evTTLExpired:
		attrs = append(attrs, xdslog.KeyTTL, in.ttl)
	}
	logger.Log(c.ctx, n.level, n.msg, attrs...)
}

// notifyLocked tells the watchers of e what n says, through AmbientError
// while a value is cached and ResourceError otherwise. A timer's
// does-not-exist goes to the watchers of the name only, not to
// the collections, which never had the resource.
func (c *Client) notifyLocked(e *entry, ev event, in *input, n notice, fc *flowControl) {
	ws := e.auth.watchersLocked(e)
	if ev == evTimerFired {
		ws = e.watchers
	}
	switch n {
	case noticeChanged:
		v, version := e.value, e.version
		for _, we := range ws {
			c.scheduleChangedLocked(we, fc, v, version)
		}
	case noticeReplay:
		for _, we := range ws {
			c.replayLocked(e, we)
		}
	case noticeInvalid:
		c.notifyErrorLocked(ws, e.value != nil, c.invalidError(e), fc)
	case noticeServer:
		c.notifyErrorLocked(ws, e.value != nil, c.resourceError(e.typ, e.name, e.ext().serverErr.err), fc)
	case noticeNotFound:
		c.notifyErrorLocked(ws, e.value != nil, c.notFoundError(e), fc)
	case noticeTimeout:
		err := fmt.Errorf("%w: not received within %v of being requested (resource_timer_is_transient_error)", ErrTimeout, in.timeout)
		c.notifyErrorLocked(ws, e.value != nil, c.resourceError(e.typ, e.name, err), fc)
	}
}

// notifyErrorLocked gives err to the watchers ws: through AmbientError
// when a value is cached, ResourceError otherwise.
func (c *Client) notifyErrorLocked(ws []*watchEntry, ambient bool, err error, fc *flowControl) {
	for _, we := range ws {
		if ambient {
			c.scheduleLocked(we, fc, func(done func()) { we.ambErr(err, done) })
		} else {
			c.scheduleLocked(we, fc, func(done func()) { we.resErr(err, done) })
		}
	}
}

// replayLocked tells a new watcher we the current state of e at once
// the cached value, then the last NACK error as an AmbientError
// (gRFC A88's order), or the error the server reported for it; or,
// with nothing cached, ResourceError when the resource does not exist, its
// last version was NACKed or the server reported an error; nothing while it
// is only requested. These calls are not tied to a response, so their
// done is not flow control.
func (c *Client) replayLocked(e *entry, we *watchEntry) {
	x := e.ext()
	switch {
	case e.state.hasValue():
		v, version := e.value, e.version
		c.scheduleLocked(we, nil, func(done func()) { we.changed(v, version, done) })
		if e.stale() {
			err := c.staleError(e)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
		if x.nack != nil {
			err := c.invalidError(e)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
		if x.serverErr != nil {
			err := c.resourceError(e.typ, e.name, x.serverErr.err)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
	case e.state == stMissing || e.state == stExpired:
		err := c.notFoundError(e)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case x.nack != nil:
		err := c.invalidError(e)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case x.serverErr != nil:
		err := c.resourceError(e.typ, e.name, x.serverErr.err)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case e.state == stTimedOut:
		err := c.resourceError(e.typ, e.name, fmt.Errorf("%w: not received in time (resource_timer_is_transient_error)", ErrTimeout))
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	}
}

// tellFailureLocked tells the watchers of es, entries of type t of the
// authorities told, and the WatchAll and glob collection watchers of t of
// those authorities, that their server's stream failed with cerr:
// each watcher of an entry gets ResourceError when no value is cached,
// AmbientError otherwise, in name order; each collection watcher one
// AmbientError naming the collection ("*", or the glob). These calls are
// not flow controlled.
func (c *Client) tellFailureLocked(t resources.ResourceType, es []*entry, told []*authority, cerr error) {
	slices.SortFunc(es, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
	for _, e := range es {
		rerr := c.resourceError(e.typ, e.name, cerr)
		for _, we := range e.watchers {
			if e.value == nil {
				c.scheduleLocked(we, nil, func(done func()) { we.resErr(rerr, done) })
			} else {
				c.scheduleLocked(we, nil, func(done func()) { we.ambErr(rerr, done) })
			}
		}
	}
	for _, a := range told {
		a.eachCollectionLocked(t.TypeURL(), func(name string, ws []*watchEntry) {
			werr := c.resourceError(t, name, cerr)
			for _, we := range ws {
				c.scheduleLocked(we, nil, func(done func()) { we.ambErr(werr, done) })
			}
		})
	}
}

// resourceError wraps err for delivery to a watcher of name.
func (c *Client) resourceError(typ resources.ResourceType, name string, err error) error {
	return &ResourceError{TypeURL: typ.TypeURL(), TypeName: typ.TypeName(), Name: name, NodeID: c.node.GetId(), Err: err}
}

// notFoundError is the error for watchers of a resource that does not exist.
func (c *Client) notFoundError(e *entry) error {
	return c.resourceError(e.typ, e.name, fmt.Errorf("%w: %s", ErrResourceNotFound, e.ext().dneReason))
}

// invalidError is the error for watchers of a resource whose last received
// version was NACKed.
func (c *Client) invalidError(e *entry) error {
	x := e.ext()
	return c.resourceError(e.typ, e.name, fmt.Errorf("%w: version %q rejected: %w", ErrResourceInvalid, x.nack.version, x.nack.err))
}
