// SPDX-License-Identifier: Apache-2.0

package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// This file holds what SotW (ads_sotw.go) and delta (ads_delta.go)
// response handling share: the decode phase that runs outside c.mu, and the
// functions that apply a resource's fate to the cache and its watchers.

// decoded is one resource of a response after decoding. For a resource
// that is not subscribed, only name is set: it is not decoded.
type decoded struct {
	name  string
	value any
	raw   []byte // the unwrapped Any's value
	err   error  // per-resource validation error
	ttl   time.Duration
}

// pending is one resource of a response between the phases of response
// handling: unwrapped and, when known before decoding, named.
type pending struct {
	index       int
	inner       *anypb.Any    // unwrapped
	name        string        // "" when unknown before decoding
	nameBytes   []byte        // the canonical name inside inner.Value, when the type can find it without copying (SotW); aliases inner
	unrequested bool          // name is known and not subscribed: not decoded
	cachedRaw   string        // the cached resource of that name (its bytes), if any
	cachedValue any           // its decoded value
	ttl         time.Duration // Resource.ttl; 0 when none
}

// nameByteser is implemented by resource types that can find a resource's
// canonical name without copying it (resources.Type.NameBytes), which lets
// the client recognise an unchanged or unrequested resource without
// allocating.
type nameByteser interface {
	NameBytes(inner *anypb.Any) ([]byte, bool)
}

// lookupType returns the registered type of typeURL, or nil. The registry
// is immutable, so no lock is needed.
func (ch *channel) lookupType(typeURL string) resources.ResourceType {
	typ, ok := ch.c.registry.Lookup(typeURL)
	if !ok {
		return nil
	}
	return typ
}

// acceptResponse records that ss received a message and reports whether
// the response (decoded with decodeErr, of type typ, nil when unknown) is
// to be processed. Messages that do not decode and responses of unknown
// type URLs are ignored: no ACK, no NACK, the stream keeps reading.
// So are responses of types never requested on this stream:
// answering would be a subscription (an empty one even a wildcard).
func (ch *channel) acceptResponse(ss *streamState, decodeErr error, typ resources.ResourceType, typeURL, nonce string) (ok bool) {
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ss.gotResponse = true
	if ch.stream != ss || c.closed {
		return false
	}
	ch.messageReceivedLocked()
	defer func() { ss.accepted = ss.accepted || ok }()
	switch {
	case decodeErr != nil:
		ch.logger.Warn("ignoring undecodable response", xdslog.KeyStreamID, ss.id, xdslog.KeyError, decodeErr)
		return false
	case typ == nil:
		ch.logger.Warn("ignoring response of unknown type URL", xdslog.KeyTypeURL, typeURL, xdslog.KeyNonce, nonce)
		return false
	}
	if ts := ch.types[typ.TypeURL()]; ts == nil || !ts.sentOnStream {
		ch.logger.Warn("ignoring response of a type not requested on this stream", xdslog.KeyTypeURL, typeURL)
		return false
	}
	ch.revertLocked()
	return true
}

// lookupCachedLocked marks the named items that are not wanted, which
// decodeAll skips, and records for the others the cached resource of that
// name, so that decodeAll can skip unchanged bytes. While the wildcard is
// subscribed, every resource is wanted.
func (ch *channel) lookupCachedLocked(ts *typeState, items []pending) {
	for i := range items {
		it := &items[i]
		var rs *resourceState
		switch {
		case it.nameBytes != nil:
			// m[string(b)] does not allocate; an entry's name is reused.
			if rs = ts.entries[string(it.nameBytes)]; rs != nil {
				it.name = rs.name
			} else if len(ts.wildcard) > 0 || (len(ts.globs) > 0 && ts.wantsLocked(string(it.nameBytes))) {
				it.name = string(it.nameBytes)
			}
		case it.name != "":
			rs = ts.entries[it.name]
		default:
			continue
		}
		switch {
		case rs == nil:
			it.unrequested = !ts.wantsLocked(it.name)
		case rs.value != nil:
			it.cachedRaw, it.cachedValue = rs.raw, rs.value
		}
	}
}

// decodeAll decodes every item whose bytes differ from its cached value.
// Failures without a resource name are top-level errors; the others are in
// the results, in response order.
func decodeAll(typ resources.ResourceType, items []pending) (results []decoded, topErrs []error) {
	results = make([]decoded, 0, len(items))
	for _, p := range items {
		if p.unrequested {
			// Not decoded, validated, NACKed or counted: its name is no
			// entry's, so it cannot matter to the deletion rule either.
			continue
		}
		d, err := decodeOne(typ, p)
		if err != nil {
			topErrs = append(topErrs, err)
			continue
		}
		results = append(results, d)
	}
	return results, topErrs
}

// decodeOne decodes p unless its bytes equal the cached ones. A failure
// without a resource name is returned as err.
func decodeOne(typ resources.ResourceType, p pending) (decoded, error) {
	if p.cachedValue != nil && p.cachedRaw == string(p.inner.GetValue()) {
		// Same bytes as cached: not decoded again.
		return decoded{name: p.name, value: p.cachedValue, raw: p.inner.GetValue(), ttl: p.ttl}, nil
	}
	name, v, err := typ.Decode(p.inner)
	if name == "" {
		if err == nil {
			err = errors.New("resource has no name")
		}
		return decoded{}, fmt.Errorf("resource %d: %w", p.index, err)
	}
	return decoded{name: name, value: v, raw: p.inner.GetValue(), err: err, ttl: p.ttl}, nil
}

// entryForLocked returns the cache entry of ts that a received resource
// named name goes to: its entry if it has one, else, while the wildcard is
// subscribed, a new entry for it; nil when the resource is not wanted.
func (c *Client) entryForLocked(ts *typeState, name string) *resourceState {
	if rs := ts.entries[name]; rs != nil {
		return rs
	}
	if !ts.wantsLocked(name) {
		return nil
	}
	if c.entryLocked(ts.typ.TypeURL(), name) != nil {
		// Served by another channel (an xdstp name of another
		// authority): not this stream's to change.
		return nil
	}
	rs := &resourceState{typ: ts.typ, name: name, ch: ts.ch, status: statusRequested, timerState: timerReceived}
	ts.entries[name] = rs
	return rs
}

// dropEntryLocked forgets an entry that has no watcher of its own, in the
// cache of every channel that holds it (fallback.go).
func (c *Client) dropEntryLocked(rs *resourceState) {
	rs.stopTimerLocked()
	rs.stopTTLLocked()
	if rs.cachedLocked() {
		c.entryDroppedLocked(rs)
	}
	var buf [2]*channel
	for _, ch := range c.appendHoldersLocked(buf[:0], rs) {
		delete(ch.types[rs.typ.TypeURL()].entries, rs.name)
	}
}

// watchersLocked returns the watchers of rs: its own, in registration
// order, then the WatchAll and glob collection watchers of its type that
// hold its name: on its channel, and on the other channels of its server
// list. A wildcard stays on the server that was active when it was first
// watched, while a resource also watched by name follows its
// list's fallback and revert: its collection watchers keep hearing
// of it from the server that serves it.
func (c *Client) watchersLocked(rs *resourceState) []*watchEntry {
	var coll []*watchEntry
	add := func(ch *channel) {
		if ts := ch.types[rs.typ.TypeURL()]; ts != nil && (len(ts.wildcard) > 0 || len(ts.globs) > 0) {
			coll = append(coll, ts.collectionWatchersLocked(rs.name)...)
		}
	}
	if ts := rs.ch.types[rs.typ.TypeURL()]; ts != nil && ts.entries[rs.name] == rs {
		add(rs.ch)
	}
	if rs.list != nil && len(rs.list.keys) > 1 {
		for i, key := range rs.list.keys {
			if ch := c.channels[key]; ch != nil && ch != rs.ch && !slices.Contains(rs.list.keys[:i], key) {
				add(ch)
			}
		}
	}
	if len(coll) == 0 {
		return rs.watchers
	}
	all := make([]*watchEntry, 0, len(rs.watchers)+len(coll))
	return append(append(all, rs.watchers...), coll...)
}

// resourceValidLocked applies a valid resource. Watchers are told when it
// is the first value, a different value, or the same value after a NACK or
// deletion. The resource's TTL is set from d.
func (c *Client) resourceValidLocked(rs *resourceState, d decoded, version string, now time.Time, fc *flowControl) {
	rs.stopTimerLocked()
	hadTTL := rs.ext().ttl != nil
	c.setTTLLocked(rs, d.ttl, now)
	rs.timerState = timerReceived
	rs.skipDeletion = false
	rs.ttlExpired = false
	if rs.deletionIgnored {
		rs.deletionIgnored = false
		c.logger.Info("resource present again after an ignored deletion", xdslog.KeyResource, rs.name)
	}
	// decodeAll compared against the cache as it was before decoding;
	// compare again, as the entry may have been replaced since (a watch
	// cancelled and started anew). The bytes are already hot.
	ext := rs.ext()
	changed := rs.value == nil || ext.nack != nil || ext.serverErr != nil || rs.stale ||
		rs.raw != string(d.raw)
	rs.version = version
	rs.lastUpdated = unixNanos(now)
	rs.from = &rs.ch.sc.ServerURI
	rs.status = statusAcked
	rs.clearErrorsLocked()
	rs.stale = false
	if !changed {
		// The stored copy has the same bytes; its version may lag. A TTL
		// added or removed changes whether it is stored (persistLocked).
		if hadTTL != (ext.ttl != nil) {
			c.persistLocked(rs)
		}
		return
	}
	rs.value, rs.raw = d.value, rawString(d.raw)
	c.persistLocked(rs)
	v := rs.value
	for _, we := range c.watchersLocked(rs) {
		c.scheduleChangedLocked(we, fc, v, version)
	}
}

// resourceInvalidLocked records a NACKed resource. The cached value, if
// any, is kept and its watchers get AmbientError; otherwise ResourceError
// . When the server has fail_on_data_errors, the cached value is
// dropped first. Watchers are not told the same error twice in a
// row.
func (c *Client) resourceInvalidLocked(rs *resourceState, err error, version string, now time.Time, fc *flowControl) {
	rs.stopTimerLocked()
	rs.timerState = timerReceived // seen, even if invalid
	rs.skipDeletion = false
	rs.ttlExpired = false
	dropped := rs.ch.dropOnDataErrorLocked(rs)
	prev := rs.ext().nack
	repeat := !dropped && prev != nil && prev.err.Error() == err.Error()
	ext := rs.extLocked()
	ext.serverErr = nil
	ext.nack = &nackState{err: err, version: version, time: now}
	rs.status = statusNacked
	if repeat {
		return
	}
	werr := c.invalidError(rs)
	for _, we := range c.watchersLocked(rs) {
		if rs.value != nil {
			c.scheduleLocked(we, fc, func(done func()) { we.ambErr(werr, done) })
		} else {
			c.scheduleLocked(we, fc, func(done func()) { we.resErr(werr, done) })
		}
	}
}

// deleteLocked applies the server's deletion of rs (a SotW omission,
// or a delta removed_resources entry): ignored when the server has
// ignore_resource_deletion and rs has a value; otherwise the
// resource is deleted and an entry without watchers of its own is
// forgotten (forgetDeletedLocked).
func (ch *channel) deleteLocked(rs *resourceState, fc *flowControl) {
	if rs.value != nil && ch.sc.IgnoreResourceDeletion() {
		if !rs.deletionIgnored {
			rs.deletionIgnored = true
			ch.logger.Warn("ignoring deletion (ignore_resource_deletion)", xdslog.KeyTypeURL, rs.typ.TypeURL(), xdslog.KeyResource, rs.name)
		}
		return
	}
	ch.c.resourceDeletedLocked(rs, "removed by the management server", fc)
	ch.c.forgetDeletedLocked(rs)
}

// forgetDeletedLocked forgets rs, just deleted by its server or by its TTL
// when nothing else keeps its entry: one without watchers
// that the wildcard or a glob collection holds goes at once. One whose
// unsubscription is not written yet stays until it is, as a
// cached one does, so that a watch made again meanwhile learns at once
// that the resource does not exist: the server, which never
// heard of the unsubscription, will not say so again.
func (c *Client) forgetDeletedLocked(rs *resourceState) {
	if len(rs.watchers) > 0 {
		return
	}
	if ts := rs.ch.types[rs.typ.TypeURL()]; ts != nil && ts.entries[rs.name] == rs && !ts.wantsLocked(rs.name) {
		return // unsubscribed: dropped once that is written (dropUnsubscribedLocked)
	}
	c.dropEntryLocked(rs)
}

// resourceDeletedLocked deletes a resource the management server removed
// the cache entry keeps its watchers, loses its value, and
// shows DOES_NOT_EXIST, with reason in errors and Dump. A resource already
// known not to exist is not reported again. Also used when a TTL expires
//
func (c *Client) resourceDeletedLocked(rs *resourceState, reason string, fc *flowControl) {
	if rs.value == nil && rs.status == statusDoesNotExist {
		return
	}
	rs.stopTimerLocked()
	rs.stopTTLLocked()
	rs.timerState = timerReceived
	rs.ttlExpired = false
	c.dropValueLocked(rs)
	ext := rs.extLocked()
	ext.nack, ext.serverErr = nil, nil
	rs.status = statusDoesNotExist
	ext.dneReason = reason
	err := c.notFoundError(rs)
	for _, we := range c.watchersLocked(rs) {
		c.scheduleLocked(we, fc, func(done func()) { we.resErr(err, done) })
	}
}

// dropValueLocked forgets the cached value of rs and deletes its
// persisted copy. A value served from persistence (stale) goes
// too, from the store as well: the server's word replaces it, so a later
// start must not serve it again.
func (c *Client) dropValueLocked(rs *resourceState) {
	rs.value, rs.raw, rs.version = nil, "", ""
	rs.stale = false
	c.persistLocked(rs)
}

// nackMessage is the error_detail message of a NACK: top-level errors in
// response order, then per-resource errors sorted by resource name, so the
// text is deterministic.
func nackMessage(typ resources.ResourceType, topErrs []error, resErrs map[string]error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error parsing %q response:", typ.TypeName())
	sep := " "
	if len(topErrs) > 0 {
		b.WriteString(" top level errors: ")
		for i, err := range topErrs {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(err.Error())
		}
		sep = "; "
	}
	for _, name := range sortedKeys(resErrs) {
		fmt.Fprintf(&b, "%sresource %q: %v", sep, name, resErrs[name])
		sep = "; "
	}
	return b.String()
}
