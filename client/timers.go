// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"

	"github.com/proxyless/xds/bootstrap"
)

// This file holds the two timers of a cache entry: the does-not-exist
// timer of a resource requested and never received, shared by the
// names of one request, and the TTL of a cached value. When one
// fires, the entry takes a step (evTimerFired, evTTLExpired).

// expiryTimer is the does-not-exist timer of the names one written
// request started timing: they were all requested at the same moment, so
// they share one timer, which a mesh of 10,000 clusters would otherwise
// need 20,000 of. An entry it times points to it (entry.timer)
// until the entry stops being timed (stopTimerLocked): received, dropped,
// its stream ended, or timed again by another request. The timer stops
// once no entry points to it. Guarded by Client.mu, except t and entries,
// which are set before the timer can fire and read-only afterwards.
type expiryTimer struct {
	c         *Client
	entries   []*entry // the entries the request started timing, in request order
	live      int      // how many of entries still point to this timer
	t         *time.Timer
	timeout   time.Duration // how long it runs
	transient bool          // the server has resource_timer_is_transient_error: its expiry is a transient error
}

// timeLocked adds e, subscribed and never received (stRequested), to
// the does-not-exist timer *et of the request just written, creating the
// timer on first use; startExpiryLocked starts it once every name of the
// request is added.
func (c *Client) timeLocked(et **expiryTimer, e *entry) {
	e.stopTimerLocked()
	if *et == nil {
		*et = &expiryTimer{c: c}
	}
	g := *et
	g.entries = append(g.entries, e)
	g.live++
	e.timer = g
}

// startExpiryLocked starts et, if any, built by timeLocked for a request
// written to sc: it fires after the watch expiry timeout (15 s by
// default, R-9.2), or twice that (30 s by default) when sc has the server
// feature resource_timer_is_transient_error (gRFC A88, R-2.5).
func (c *Client) startExpiryLocked(et *expiryTimer, sc *bootstrap.ServerConfig) {
	if et == nil {
		return
	}
	et.timeout = c.opts.watchExpiryTimeout
	if sc.HasFeature(bootstrap.FeatureResourceTimerIsTransientError) {
		et.timeout, et.transient = 2*et.timeout, true
	}
	et.t = time.AfterFunc(et.timeout, et.expired)
}

// stopTimerLocked stops timing e; the shared timer stops with its last
// entry.
func (e *entry) stopTimerLocked() {
	g := e.timer
	if g == nil {
		return
	}
	e.timer = nil
	if g.live--; g.live == 0 && g.t != nil {
		g.t.Stop()
	}
}

// expired runs when the does-not-exist timer fires: no response named its
// entries within the watch expiry timeout after they were requested on a
// connected stream. Each entry still timed by it (not received, dropped,
// stopped or timed anew meanwhile) does not exist (evTimerFired), or, from
// a server with resource_timer_is_transient_error, timed out, in
// request order; it is not timed again. These calls are not flow
// controlled.
func (et *expiryTimer) expired() {
	c := et.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	in := input{timeout: et.timeout, transient: et.transient}
	for _, e := range et.entries {
		if e.timer != et || !e.auth.holdsLocked(e) {
			continue // stopped, replaced or dropped meanwhile
		}
		c.stepLocked(e, evTimerFired, &in, nil)
	}
}

// TTLs and heartbeats (xDS protocol, "TTL" and "SotW TTL"; R-18). The
// client advertises "xds.config.supports-resource-ttl"
// (bootstrap.ClientFeatures).
//
// A resource received with a ttl in its Resource wrapper (SotW, when the
// server wraps it; delta, always) expires when neither an update nor a
// heartbeat of it arrives within the TTL, timed from when the response that
// carried it arrived: its value is dropped, its status in Dump becomes
// DOES_NOT_EXIST, and its watchers get a ResourceError wrapping
// ErrResourceNotFound ("TTL of 30s expired"); these calls are not flow
// controlled. ignore_resource_deletion does not apply: expiry is
// what the server asked for. A resource resent with a new ttl is timed
// afresh; resent without one, it no longer expires. A heartbeat is a
// Resource with a name and no body (in delta, at the cached version; in
// SotW, whatever its version, which a SotW wrapper rarely carries): it
// re-arms the TTL of the cached resource of that name with the
// heartbeat's ttl (none: the TTL is removed) and calls no watcher. A SotW
// heartbeat counts as the resource being present in a Listener or Cluster
// response; one for a name without a cached value is ignored.
// TTLs keep running while the management server is unreachable, which is
// their point.

// ttlState is a running TTL: timer expires the value d after it
// was received. A replaced or stopped TTL is a new ttlState, which is how
// the timer's func tells that it is stale.
type ttlState struct {
	d     time.Duration
	timer *time.Timer
}

// heartbeatLocked re-arms the TTL of the cached value of e with ttl
// . A heartbeat that adds or removes the TTL changes what is
// persisted: a value with a TTL is not (see persistLocked).
func (c *Client) heartbeatLocked(e *entry, ttl time.Duration, now time.Time) {
	had := e.ext().ttl != nil
	c.setTTLLocked(e, ttl, now)
	if had != (e.ext().ttl != nil) {
		c.persistLocked(e)
	}
}

// setTTLLocked times the cached value of e to expire ttl after now (the
// arrival of the response that carried it), replacing any running TTL;
// ttl <= 0 removes it.
func (c *Client) setTTLLocked(e *entry, ttl time.Duration, now time.Time) {
	e.stopTTLLocked()
	if ttl <= 0 || c.closed {
		return
	}
	t := &ttlState{d: ttl}
	t.timer = time.AfterFunc(time.Until(now.Add(ttl)), func() { c.ttlExpired(e, t) })
	e.extLocked().ttl = t
}

// stopTTLLocked stops the TTL timer of e, if any.
func (e *entry) stopTTLLocked() {
	if x := e.extra; x != nil && x.ttl != nil {
		x.ttl.timer.Stop()
		x.ttl = nil
		e.tidyExtLocked()
	}
}

// ttlExpired runs when the TTL of e's cached value ran out: the value is
// dropped and its watchers told that it does not exist (evTTLExpired).
func (c *Client) ttlExpired(e *entry, t *ttlState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || e.ext().ttl != t || e.value == nil || !e.auth.holdsLocked(e) {
		return // re-armed, stopped, or no longer cached
	}
	in := input{ttl: t.d, reason: fmt.Sprintf("TTL of %v expired without an update or heartbeat", t.d)}
	c.stepLocked(e, evTTLExpired, &in, nil)
}
