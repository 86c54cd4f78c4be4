// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"
	"unsafe"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// This file holds the cache entry of one resource and its state machine:
// one phase per entry, one transition function (transitionLocked), and
// the watcher calls each transition makes.
//
// # Phases
//
// Without a cached value:
//
//	phaseRequested  subscribed; no request naming it was written on a connected stream yet: not timed
//	phaseTimed      requested; the does-not-exist timer runs
//	phaseMissing    does not exist: deleted, timer fired, NOT_FOUND reported
//	phaseRejected   its last version was NACKed, and none was ever valid, or fail_on_data_errors dropped it
//	phaseErrored    the server reported an error for it
//	phaseExpired    its TTL ran out: does not exist, and counts as never received for fallback
//	phaseTimedOut   not received in time from a server with resource_timer_is_transient_error: a transient error, not a does-not-exist
//
// With a cached value (an earlier NACK or server error may be pending on
// it, ambient: extra.nack, extra.serverErr):
//
//	phaseStale      loaded from persistence, not received from a server yet
//	phaseCached     received; a SotW response of a type whose responses carry every resource deletes it by leaving it out
//	phaseIgnored    as phaseCached, and the server deleted it: kept for ignore_resource_deletion
//	phaseRewatched  watched again after its last watch was cancelled, and no request naming it written since: a SotW response that leaves it out answers an earlier request, no deletion
//	phaseUnsubRaced as phaseRewatched, and the request that unsubscribed it was written meanwhile (it was built before the new watch)
//	phaseSkipOmit   a request naming it again was written after phaseUnsubRaced: the server may still answer the unsubscription, so the next omission is no deletion
//
// # Transitions
//
// Events, and the phase each leads to (— : unchanged). "value" is a
// phase with a cached value; "guard" is phaseRewatched, phaseUnsubRaced
// or phaseSkipOmit.
//
//	event               from                          to
//	evWatched           phaseCached (re-watch, R-10.3) phaseRewatched
//	                    phaseUnsubRaced, phaseSkipOmit phaseUnsubRaced (the unsubscription written may be answered yet)
//	                    other                         — (Ignored keeps its mark, Stale is not the server's)
//	evRequested         phaseRequested (watched)      phaseTimed (the timer starts)
//	                    phaseRewatched                phaseCached
//	                    phaseUnsubRaced               phaseSkipOmit
//	evUnsubWritten      phaseRewatched                phaseUnsubRaced
//	evStreamEnded       phaseTimed                    phaseRequested (timer stopped, R-9.5)
//	evValid             guard other than SkipOmit     — (new value)
//	                    any other                     phaseCached
//	evInvalid           value                         — (SkipOmit → Cached), or phaseRejected when fail_on_data_errors drops it
//	                    no value                      phaseRejected
//	evServerError       value                         — (SkipOmit → Cached), or Missing/Errored when fail_on_data_errors drops it
//	                    no value                      phaseMissing (NOT_FOUND) or phaseErrored
//	evOmitted           phaseCached, phaseStale       phaseMissing, or phaseIgnored (ignore_resource_deletion; Stale stays)
//	                    phaseSkipOmit                 phaseCached
//	                    other                         — (R-9.7: no value, no deletion)
//	evRemoved           value                         phaseMissing, or phaseIgnored (ignore_resource_deletion)
//	                    no value                      phaseMissing
//	evTimerFired        phaseTimed                    phaseMissing, or phaseTimedOut (resource_timer_is_transient_error)
//	evTTLExpired        value                         phaseExpired
//	evPersisted         Requested, Timed, TimedOut    phaseStale
//
// Every event the server causes (evValid, evInvalid, evServerError, a
// deletion) stops the does-not-exist timer: the resource was seen.
// Watchers are told, in the entry's watcher order (its own, then the
// WatchAll and glob watchers of its authority), as the R-rules of each
// event say; nothing is told twice in a row.

// phase is where an entry is in its life; see the file comment.
type phase uint8

const (
	phaseRequested phase = iota
	phaseTimed
	phaseMissing
	phaseRejected
	phaseErrored
	phaseExpired
	phaseTimedOut
	phaseStale
	phaseCached
	phaseIgnored
	phaseRewatched
	phaseUnsubRaced
	phaseSkipOmit
)

// hasValue reports whether p is a phase with a cached value.
func (p phase) hasValue() bool { return p >= phaseStale }

// event is what happens to an entry; see the file comment.
type event uint8

const (
	evWatched event = iota
	evRequested
	evUnsubWritten
	evStreamEnded
	evValid
	evInvalid
	evServerError
	evOmitted
	evRemoved
	evTimerFired
	evTTLExpired
	evPersisted
)

// entry is the cache entry and the watchers of one resource. It belongs to
// the authority its name maps to, which holds it in its cache, and
// exists while the resource has a watcher, while its unsubscription is not
// written yet, and while a WatchAll or glob collection of its
// authority holds it with a cached value. Every field is guarded by
// Client.mu, except typ, name and auth, which are read-only.
type entry struct {
	typ  resources.ResourceType // read-only
	name string                 // read-only; canonical
	auth *authority             // read-only; the cache it is in
	// from is the server_uri of the server the cached value came from:
	// the ServerURI of that server's bootstrap.ServerConfig, which the
	// config keeps, so that no entry holds a string of its own; nil
	// before the first value.
	from *string

	watchers []*watchEntry // in registration order

	// The cache: the last valid value and its bytes.
	value       any    // nil when none
	raw         string // the resource as received: the unwrapped Any's value (rawString); "" when value is nil
	version     string // SotW: version_info of the response that last carried it valid; delta: its own version
	lastUpdated int64  // when value was last received, in Unix nanoseconds (see unixNanos, updated)

	// extra holds the fields that are rarely set, out of line: tens of
	// thousands of entries are common (a mesh), and each is then in a
	// smaller size class. nil while every field of it is zero.
	extra *entryExtra

	// timer is the running does-not-exist timer that times the entry,
	// shared with the other names of the request that started it; nil
	// when none.
	timer *expiryTimer

	phase phase
	// pending: the entry is in its serving channel's list of
	// unsubscriptions to write (channel.pendingLocked, R-10.3).
	pending bool
}

// entryExtra are the fields of an entry that are rarely set. Read them
// with entry.ext, set them with extLocked.
type entryExtra struct {
	dneReason string // why the resource does not exist (phaseMissing, phaseExpired)

	// The last NACK of this resource; nil when the last received version
	// was valid.
	nack *nackState
	// The error the management server last reported for the resource in
	// resource_errors; nil once a valid version, a NACK or a
	// deletion followed.
	serverErr *serverErrState
	// Delta only: the Resource.name and aliases of the cached value, when
	// they are not just name: it came for an alias.
	delta *deltaNames
	// The TTL of the cached value, while one is set.
	ttl *ttlState
}

// ext returns a copy of the rarely set fields of e (zero when none is
// set); it never allocates.
func (e *entry) ext() entryExtra {
	if e.extra == nil {
		return entryExtra{}
	}
	return *e.extra
}

// extLocked returns the rarely set fields of e, for setting one.
func (e *entry) extLocked() *entryExtra {
	if e.extra == nil {
		e.extra = new(entryExtra)
	}
	return e.extra
}

// tidyExtLocked releases the rarely set fields of e once all are zero.
func (e *entry) tidyExtLocked() {
	if e.extra != nil && *e.extra == (entryExtra{}) {
		e.extra = nil
	}
}

// clearErrorsLocked clears the last NACK, the error reported by the
// server and the reason for DOES_NOT_EXIST.
func (e *entry) clearErrorsLocked() {
	if x := e.extra; x != nil {
		x.dneReason, x.nack, x.serverErr = "", nil, nil
		e.tidyExtLocked()
	}
}

// nackState is the last NACK of a resource.
type nackState struct {
	err     error
	version string    // the version_info (SotW) or resource version (delta) NACKed
	time    time.Time // when it was received
}

// serverErrState is an error the management server reported for a
// resource in resource_errors, with the time it arrived.
type serverErrState struct {
	err  error
	time time.Time
}

// deltaNames are the Resource.name and aliases of a cached delta value.
type deltaNames struct {
	name    string
	aliases []string
}

// unixNanos returns t in Unix nanoseconds, 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// updated returns when the cached value was last received: the zero time
// when unknown (a persisted value without a time).
func (e *entry) updated() time.Time {
	if e.lastUpdated == 0 {
		return time.Time{}
	}
	return time.Unix(0, e.lastUpdated)
}

// fromURI returns the server_uri of the server the cached value came
// from, "" before the first value.
func (e *entry) fromURI() string {
	if e.from == nil {
		return ""
	}
	return *e.from
}

// rawString returns b, a resource's bytes as received (the unwrapped Any's
// value), as a string that shares their memory. The bytes are never
// modified once received, and the decoded value of a built-in type holds
// the same bytes (package resources keeps them the same way), so the cache
// adds no copy; and a string takes 16 bytes of the entry where a slice
// takes 24.
func rawString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// status returns e's CSDS client_status (gRFC A40, R-20).
func (e *entry) status() v3adminpb.ClientResourceStatus {
	x := e.ext()
	switch {
	case e.phase.hasValue():
		switch {
		case x.nack != nil:
			return v3adminpb.ClientResourceStatus_NACKED
		case x.serverErr != nil:
			return v3adminpb.ClientResourceStatus_RECEIVED_ERROR
		}
		return v3adminpb.ClientResourceStatus_ACKED
	case e.phase == phaseMissing || e.phase == phaseExpired:
		return v3adminpb.ClientResourceStatus_DOES_NOT_EXIST
	case e.phase == phaseRejected:
		return v3adminpb.ClientResourceStatus_NACKED
	case e.phase == phaseErrored:
		return v3adminpb.ClientResourceStatus_RECEIVED_ERROR
	case e.phase == phaseTimedOut:
		return v3adminpb.ClientResourceStatus_TIMEOUT
	}
	return v3adminpb.ClientResourceStatus_REQUESTED
}

// neverReceived reports whether e is watched and was never received: no
// value, and not known not to exist or to be invalid; a transient
// timeout says nothing of the resource either.
func (e *entry) neverReceived() bool {
	return len(e.watchers) > 0 && (e.phase == phaseRequested || e.phase == phaseTimed || e.phase == phaseTimedOut)
}

// unanswered reports whether e is watched and no server of its list has
// sent it: never received, only served from persistence,
// or expired. A stale value does not stop fallback: it is what the
// client serves while no server of the list answers, not an answer; nor
// does a value whose TTL ran out while its server was unreachable: it is
// no longer cached (gRFC A71 falls back for resources not cached).
func (e *entry) unanswered() bool {
	return e.neverReceived() || (len(e.watchers) > 0 && (e.phase == phaseStale || e.phase == phaseExpired))
}

// input is what an event brings: the fields each event reads.
type input struct {
	value     any           // evValid: the decoded value
	raw       []byte        // evValid: its bytes
	version   string        // evValid, evInvalid: the version received
	ttl       time.Duration // evValid: Resource.ttl, 0 when none
	err       error         // evInvalid: the validation error
	status    *statuspb.Status
	reason    string                  // deletions: why the resource does not exist
	ch        *channel                // the channel that received it; nil for timers and persistence
	now       time.Time               // when the response arrived
	et        **expiryTimer           // evRequested: the shared timer of the request written
	rec       *PersistedResource      // evPersisted
	sc        *bootstrap.ServerConfig // the server of ch
	timeout   time.Duration           // evTimerFired: how long the timer ran
	transient bool                    // evTimerFired: the server has resource_timer_is_transient_error
}

// transitionLocked applies ev to e (see the table in the file comment):
// its phase, its cache, its timers and what is persisted, and queues the
// watcher calls it causes, flow-controlled by fc when fc is not nil.
func (c *Client) transitionLocked(e *entry, ev event, in *input, fc *flowControl) {
	from := e.phase
	switch ev {
	case evWatched:
		switch from {
		case phaseCached:
			e.phase = phaseRewatched
		case phaseUnsubRaced, phaseSkipOmit:
			// The unsubscription written may still be answered: the
			// guard holds until a request naming it is written again.
			e.phase = phaseUnsubRaced
		}
		// phaseIgnored keeps its deletion mark (the server has
		// ignore_resource_deletion: an omission deletes nothing), a stale
		// value is not the server's, and a re-watched one stays guarded.
		return
	case evRequested:
		switch {
		case from == phaseRequested && len(e.watchers) > 0:
			c.timeLocked(in.et, e)
			e.phase = phaseTimed
		case from == phaseRewatched:
			e.phase = phaseCached
		case from == phaseUnsubRaced:
			e.phase = phaseSkipOmit
		}
		return
	case evUnsubWritten:
		if from == phaseRewatched {
			e.phase = phaseUnsubRaced
		}
		return
	case evStreamEnded:
		if from == phaseTimed {
			e.stopTimerLocked()
			e.phase = phaseRequested
		}
		return
	case evTimerFired:
		if from != phaseTimed {
			return
		}
		var err error
		if in.transient {
			e.phase = phaseTimedOut
			c.logger.Warn("resource not received in time: a transient error (resource_timer_is_transient_error)", xdslog.KeyTypeURL, e.typ.TypeURL(), xdslog.KeyResource, e.name)
			err = c.resourceError(e.typ, e.name, fmt.Errorf("%w: not received within %v of being requested (resource_timer_is_transient_error)", ErrTimeout, in.timeout))
		} else {
			e.phase = phaseMissing
			e.extLocked().dneReason = fmt.Sprintf("not received within %v of being requested", in.timeout)
			c.logger.Warn("resource does not exist: watch expired", xdslog.KeyTypeURL, e.typ.TypeURL(), xdslog.KeyResource, e.name)
			err = c.notFoundError(e)
		}
		for _, we := range e.watchers { // the watchers of the name
			c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
		}
		return
	case evPersisted:
		if from != phaseRequested && from != phaseTimed && from != phaseTimedOut {
			return
		}
		e.stopTimerLocked()
		r := in.rec
		e.value, e.raw, e.version = in.value, rawString(r.Resource.GetValue()), r.Version
		from := r.ServerURI
		e.lastUpdated, e.from = unixNanos(r.Updated), &from
		e.phase = phaseStale
		for _, we := range c.watchersLocked(e) {
			c.replayLocked(e, we)
		}
		return
	}

	// The server said something of the resource: it was seen.
	e.stopTimerLocked()
	switch ev {
	case evValid:
		c.validLocked(e, in, fc)
	case evInvalid:
		c.invalidLocked(e, in, fc)
	case evServerError:
		c.serverErrorLocked(e, in, fc)
	case evOmitted:
		switch from {
		case phaseSkipOmit:
			e.phase = phaseCached
		case phaseCached, phaseStale:
			c.deleteLocked(e, in, fc)
		}
	case evRemoved:
		if from.hasValue() {
			c.deleteLocked(e, in, fc)
			return
		}
		c.doesNotExistLocked(e, phaseMissing, in.reason, fc)
	case evTTLExpired:
		if from.hasValue() {
			e.stopTTLLocked()
			c.doesNotExistLocked(e, phaseExpired, in.reason, fc)
		}
	}
}

// validLocked applies a valid resource. Watchers are told when it is the
// first value, a different value, or the same value after a NACK, a server
// error, a deletion or a persisted value. Its TTL is set
//
func (c *Client) validLocked(e *entry, in *input, fc *flowControl) {
	hadTTL := e.ext().ttl != nil
	c.setTTLLocked(e, in.ttl, in.now)
	// The cached bytes were compared before decoding; compare again, as
	// the entry may have changed since (a watch cancelled and started
	// anew). The bytes are already hot.
	x := e.ext()
	changed := !e.phase.hasValue() || e.phase == phaseStale || x.nack != nil || x.serverErr != nil || e.raw != string(in.raw)
	switch e.phase {
	case phaseRewatched, phaseUnsubRaced:
		// The guard stays until a request naming it is written.
	case phaseIgnored:
		c.logger.Info("resource present again after an ignored deletion", xdslog.KeyResource, e.name)
		e.phase = phaseCached
	default:
		e.phase = phaseCached
	}
	e.version = in.version
	e.lastUpdated = unixNanos(in.now)
	e.from = &in.sc.ServerURI
	e.clearErrorsLocked()
	if !changed {
		// The stored copy has the same bytes; its version may lag. A TTL
		// added or removed changes whether it is stored (persistLocked).
		if hadTTL != (e.ext().ttl != nil) {
			c.persistLocked(e)
		}
		return
	}
	e.value, e.raw = in.value, rawString(in.raw)
	c.persistLocked(e)
	v, version := e.value, e.version
	for _, we := range c.watchersLocked(e) {
		c.scheduleChangedLocked(we, fc, v, version)
	}
}

// stale reports whether e's value came from persistence and no server has
// sent the resource since.
func (e *entry) stale() bool { return e.phase == phaseStale }

// invalidLocked records a NACKed resource. The cached value, if any, is
// kept and its watchers get AmbientError; otherwise ResourceError.
// When the server has fail_on_data_errors, the cached value is dropped
// first. Watchers are not told the same error twice in a row
//
func (c *Client) invalidLocked(e *entry, in *input, fc *flowControl) {
	dropped := false
	switch {
	case e.phase.hasValue() && in.sc.HasFeature(bootstrap.FeatureFailOnDataErrors):
		c.dropValueLocked(e)
		e.phase = phaseRejected
		dropped = true
		in.ch.logger.Warn("dropping the cached resource after a NACK (fail_on_data_errors)", xdslog.KeyTypeURL, e.typ.TypeURL(), xdslog.KeyResource, e.name)
	case e.phase == phaseSkipOmit:
		e.phase = phaseCached
	case !e.phase.hasValue():
		e.phase = phaseRejected
	}
	prev := e.ext().nack
	repeat := !dropped && prev != nil && prev.err.Error() == in.err.Error()
	x := e.extLocked()
	x.serverErr, x.dneReason = nil, ""
	x.nack = &nackState{err: in.err, version: in.version, time: in.now}
	if repeat {
		return
	}
	werr := c.invalidError(e)
	c.notifyErrorLocked(e, werr, fc)
}

// serverErrorLocked applies the error the management server reported for
// e: the cached value is dropped when the server has
// fail_on_data_errors and the code is NOT_FOUND or PERMISSION_DENIED
// except a NOT_FOUND while ignore_resource_deletion keeps the
// value; watchers get AmbientError when a value remains,
// ResourceError otherwise. Without a value, NOT_FOUND is a does-not-exist
// (DOES_NOT_EXIST, an error wrapping ErrResourceNotFound); every other
// case shows RECEIVED_ERROR in Dump, with the server's status in
// error_state, and wraps ErrServerReported (and ErrResourceNotFound for
// NOT_FOUND). The same error twice in a row is reported once.
func (c *Client) serverErrorLocked(e *entry, in *input, fc *flowControl) {
	code := codes.Code(in.status.GetCode())
	hadValue := e.phase.hasValue()
	if hadValue && (code == codes.NotFound || code == codes.PermissionDenied) && in.sc.HasFeature(bootstrap.FeatureFailOnDataErrors) &&
		(code != codes.NotFound || !in.sc.IgnoreResourceDeletion()) {
		c.dropValueLocked(e)
	}
	serr := status.ErrorProto(in.status)
	var err error
	if code == codes.NotFound {
		err = fmt.Errorf("%w (%w): %w", ErrResourceNotFound, ErrServerReported, serr)
	} else {
		err = fmt.Errorf("%w: %w", ErrServerReported, serr)
	}
	stillValue := e.value != nil
	prev := e.ext().serverErr
	repeat := prev != nil && prev.err.Error() == err.Error() && hadValue == stillValue
	x := e.extLocked()
	x.nack, x.dneReason = nil, ""
	x.serverErr = &serverErrState{err: err, time: in.now}
	switch {
	case stillValue && e.phase == phaseSkipOmit:
		e.phase = phaseCached
	case stillValue:
	case code == codes.NotFound:
		e.phase = phaseMissing
		x.dneReason = fmt.Sprintf("reported by the management server (%v)", serr)
	default:
		e.phase = phaseErrored
	}
	in.ch.logger.Warn("management server reported a resource error", xdslog.KeyTypeURL, e.typ.TypeURL(),
		xdslog.KeyResource, e.name, xdslog.KeyError, serr, xdslog.KeyCachedValueKept, stillValue)
	if repeat {
		return
	}
	c.notifyErrorLocked(e, c.resourceError(e.typ, e.name, err), fc)
}

// notifyErrorLocked tells every watcher of e of err: through AmbientError
// while a value is cached, ResourceError otherwise.
func (c *Client) notifyErrorLocked(e *entry, err error, fc *flowControl) {
	ambient := e.phase.hasValue()
	for _, we := range c.watchersLocked(e) {
		if ambient {
			c.scheduleLocked(we, fc, func(done func()) { we.ambErr(err, done) })
		} else {
			c.scheduleLocked(we, fc, func(done func()) { we.resErr(err, done) })
		}
	}
}

// deleteLocked applies the server's deletion of e, which has a value (a
// SotW omission, R-14.1, or a delta removed_resources entry): ignored when
// the server has ignore_resource_deletion; otherwise the value is
// dropped and the resource does not exist.
func (c *Client) deleteLocked(e *entry, in *input, fc *flowControl) {
	if in.sc.IgnoreResourceDeletion() {
		if e.phase != phaseIgnored {
			in.ch.logger.Warn("ignoring deletion (ignore_resource_deletion)", xdslog.KeyTypeURL, e.typ.TypeURL(), xdslog.KeyResource, e.name)
			if e.phase != phaseStale {
				e.phase = phaseIgnored
			}
		}
		return
	}
	c.doesNotExistLocked(e, phaseMissing, in.reason, fc)
}

// doesNotExistLocked makes e not exist (phase p: phaseMissing or
// phaseExpired) for reason: the value is dropped, errors cleared, and the
// watchers get ResourceError wrapping ErrResourceNotFound. A resource
// already known not to exist is not reported again.
func (c *Client) doesNotExistLocked(e *entry, p phase, reason string, fc *flowControl) {
	if (e.phase == phaseMissing || e.phase == phaseExpired) && e.value == nil {
		return
	}
	e.stopTTLLocked()
	if e.value != nil {
		c.dropValueLocked(e)
	}
	x := e.extLocked()
	x.nack, x.serverErr = nil, nil
	x.dneReason = reason
	e.phase = p
	err := c.notFoundError(e)
	for _, we := range c.watchersLocked(e) {
		c.scheduleLocked(we, fc, func(done func()) { we.resErr(err, done) })
	}
}

// dropValueLocked forgets the cached value of e and deletes its persisted
// copy. A value served from persistence (stale) goes too, from
// the store as well: the server's word replaces it, so a later start must
// not serve it again. The caller sets the phase that follows; until then
// it is phaseMissing.
func (c *Client) dropValueLocked(e *entry) {
	e.value, e.raw, e.version = nil, "", ""
	if e.phase.hasValue() {
		e.phase = phaseMissing
	}
	c.persistLocked(e)
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
	case e.phase.hasValue():
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
	case e.phase == phaseMissing || e.phase == phaseExpired:
		err := c.notFoundError(e)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case x.nack != nil:
		err := c.invalidError(e)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case x.serverErr != nil:
		err := c.resourceError(e.typ, e.name, x.serverErr.err)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case e.phase == phaseTimedOut:
		err := c.resourceError(e.typ, e.name, fmt.Errorf("%w: not received in time (resource_timer_is_transient_error)", ErrTimeout))
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	}
}

// watchersLocked returns the watchers of e: its own, in registration
// order, then the WatchAll and glob collection watchers of its authority
// that hold its name.
func (c *Client) watchersLocked(e *entry) []*watchEntry {
	tc := e.auth.types[e.typ.TypeURL()]
	if tc == nil || (len(tc.wildcard) == 0 && len(tc.globs) == 0) {
		return e.watchers
	}
	coll := tc.collectionWatchersLocked(e.name)
	if len(coll) == 0 {
		return e.watchers
	}
	all := make([]*watchEntry, 0, len(e.watchers)+len(coll))
	return append(append(all, e.watchers...), coll...)
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
