// SPDX-License-Identifier: Apache-2.0

package client

import (
	"time"

	"github.com/proxyless/xds/bootstrap"
)

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

// timeLocked adds e, subscribed and never received (phaseRequested), to
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
		if e.timer != et || e.auth.types[e.typ.TypeURL()].entries[e.name] != e {
			continue // stopped, replaced or dropped meanwhile
		}
		e.stopTimerLocked()
		c.transitionLocked(e, evTimerFired, &in, nil)
	}
}
