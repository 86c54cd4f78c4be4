// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"

	"github.com/proxyless/xds/internal/xdslog"
)

// This file implements resource TTLs and heartbeats (xDS protocol, "TTL"
// and "SotW TTL"; R-18). The client advertises
// "xds.config.supports-resource-ttl" (bootstrap.ClientFeatures).
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
	if c.closed || e.ext().ttl != t || e.value == nil || e.auth.types[e.typ.TypeURL()].entries[e.name] != e {
		return // re-armed, stopped, or no longer cached
	}
	c.logger.Warn("resource expired: its TTL ran out without an update or heartbeat", xdslog.KeyTypeURL, e.typ.TypeURL(),
		xdslog.KeyResource, e.name, xdslog.KeyTTL, t.d)
	in := input{reason: fmt.Sprintf("TTL of %v expired without an update or heartbeat", t.d)}
	c.transitionLocked(e, evTTLExpired, &in, nil)
	c.releaseLocked(e)
}
