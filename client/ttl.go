// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
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

// heartbeat is a body-less Resource wrapper of a SotW response.
type heartbeat struct {
	name string // canonical
	ttl  time.Duration
}

// unwrapSotW removes the Resource wrapper of r, if any. It returns
// the resource, the wrapper's ttl (0 when none), or, for a wrapper with a
// name and no resource, the heartbeat (inner nil). An undecodable wrapper,
// or one with neither resource nor name, is an error.
func unwrapSotW(r *anypb.Any) (inner *anypb.Any, ttl time.Duration, hb *heartbeat, err error) {
	if r.GetTypeUrl() != resources.ResourceWrapperTypeURL {
		return r, 0, nil, nil
	}
	w := &v3discoverypb.Resource{}
	if err := proto.Unmarshal(r.GetValue(), w); err != nil {
		return nil, 0, nil, fmt.Errorf("decoding resource wrapper: %w", err)
	}
	ttl = w.GetTtl().AsDuration()
	if w.GetResource() == nil {
		if w.GetName() == "" {
			return nil, 0, nil, fmt.Errorf("resource wrapper has neither resource nor name")
		}
		return nil, 0, &heartbeat{name: resources.CanonicalName(w.GetName()), ttl: ttl}, nil
	}
	return w.GetResource(), ttl, nil, nil
}

// applyHeartbeatsLocked re-arms the TTLs of the cached resources the
// heartbeats name; the others are ignored.
func (c *Client) applyHeartbeatsLocked(ts *typeState, beats []heartbeat, now time.Time) {
	for _, hb := range beats {
		if rs := ts.entries[hb.name]; rs != nil && rs.value != nil {
			c.heartbeatLocked(rs, hb.ttl, now)
		}
	}
}

// heartbeatLocked re-arms the TTL of the cached value of rs with ttl
// . A heartbeat that adds or removes the TTL changes what is
// persisted: a value with a TTL is not (see persistLocked).
func (c *Client) heartbeatLocked(rs *resourceState, ttl time.Duration, now time.Time) {
	had := rs.ext().ttl != nil
	c.setTTLLocked(rs, ttl, now)
	if had != (rs.ext().ttl != nil) {
		c.persistLocked(rs)
	}
}

// setTTLLocked times the cached value of rs to expire ttl after now (the
// arrival of the response that carried it), replacing any running TTL;
// ttl <= 0 removes it.
func (c *Client) setTTLLocked(rs *resourceState, ttl time.Duration, now time.Time) {
	rs.stopTTLLocked()
	if ttl <= 0 || c.closed {
		return
	}
	t := &ttlState{d: ttl}
	t.timer = time.AfterFunc(time.Until(now.Add(ttl)), func() { c.ttlExpired(rs, t) })
	rs.extLocked().ttl = t
}

// stopTTLLocked stops the TTL timer of rs, if any.
func (rs *resourceState) stopTTLLocked() {
	if e := rs.extra; e != nil && e.ttl != nil {
		e.ttl.timer.Stop()
		e.ttl = nil
		rs.tidyExtLocked()
	}
}

// ttlExpired runs when the TTL of rs's cached value ran out: the value is
// dropped and its watchers told that it does not exist.
func (c *Client) ttlExpired(rs *resourceState, t *ttlState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || rs.ext().ttl != t || rs.value == nil || !rs.cachedLocked() {
		return // re-armed, stopped, or no longer cached
	}
	ttl := t.d
	rs.extra.ttl = nil
	rs.tidyExtLocked()
	rs.ch.logger.Warn("resource expired: its TTL ran out without an update or heartbeat", xdslog.KeyTypeURL, rs.typ.TypeURL(),
		xdslog.KeyResource, rs.name, "ttl", ttl)
	c.resourceDeletedLocked(rs, fmt.Sprintf("TTL of %v expired without an update or heartbeat", ttl), nil)
	rs.ttlExpired = true
	c.forgetDeletedLocked(rs)
}
