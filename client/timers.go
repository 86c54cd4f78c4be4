// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"
)

// expiryTimer is the does-not-exist timer of the names one written
// request started timing: they were all requested at the same moment, so
// they share one timer, which a mesh of 10,000 clusters would otherwise
// need 20,000 of. An entry it times points to it (resourceState.timer)
// until the entry stops being timed (stopTimerLocked): received, dropped,
// its stream ended, or timed again by another request. The timer stops
// once no entry points to it. Guarded by Client.mu, except t and entries,
// which are set before the timer can fire and read-only afterwards.
type expiryTimer struct {
	c       *Client
	entries []*resourceState // the entries the request started timing, in request order
	live    int              // how many of entries still point to this timer
	t       *time.Timer
}

// timeLocked adds rs, subscribed and never received (timerStarted), to
// the does-not-exist timer *et of the request just written, creating the
// timer on first use; startExpiryLocked starts it once every name of the
// request is added.
func (c *Client) timeLocked(et **expiryTimer, rs *resourceState) {
	rs.stopTimerLocked()
	if *et == nil {
		*et = &expiryTimer{c: c}
	}
	g := *et
	g.entries = append(g.entries, rs)
	g.live++
	rs.timer = g
	rs.timerState = timerRequested
}

// startExpiryLocked starts et, if any, built by timeLocked: it fires after
// the watch expiry timeout (15 s by default, R-9.2).
func (c *Client) startExpiryLocked(et *expiryTimer) {
	if et != nil {
		et.t = time.AfterFunc(c.opts.watchExpiryTimeout, et.expired)
	}
}

// stopTimerLocked stops timing rs; the shared timer stops with its last
// entry.
func (rs *resourceState) stopTimerLocked() {
	g := rs.timer
	if g == nil {
		return
	}
	rs.timer = nil
	if g.live--; g.live == 0 && g.t != nil {
		g.t.Stop()
	}
}

// expired runs when the does-not-exist timer fires: no response named its
// entries within the watch expiry timeout after they were requested on a
// connected stream. Each entry still timed by it (not received, dropped,
// stopped or timed anew meanwhile) gets DOES_NOT_EXIST, and its watchers
// ResourceError wrapping ErrResourceNotFound, in request order; it is not
// timed again. These calls are not flow controlled.
func (et *expiryTimer) expired() {
	c := et.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	reason := ""
	for _, rs := range et.entries {
		if rs.timer != et || !rs.cachedLocked() {
			continue // stopped, replaced or unsubscribed meanwhile
		}
		if reason == "" {
			reason = fmt.Sprintf("not received within %v of being requested", c.opts.watchExpiryTimeout)
		}
		rs.timer = nil
		et.live--
		rs.timerState = timerReceived
		rs.status = statusDoesNotExist
		rs.extLocked().dneReason = reason
		c.logger.Warn("resource does not exist: watch expired", "type", rs.typ.TypeName(), "resource", rs.name)
		err := c.notFoundError(rs)
		for _, we := range rs.watchers {
			c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
		}
	}
}
