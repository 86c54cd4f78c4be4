// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"log/slog"
	"time"
	"unsafe"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// This file holds the cache entry of one resource and its step: the
// tables of state.go applied to the entry's own data (its value, its
// errors), with the effects on the rest of the client recorded for the
// caller to carry out (effects.go).

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

	state state // what the client knows of the resource (state.go)
	guard guard // where its subscription stands on the wire (state.go, R-10.3)
}

// entryExtra are the fields of an entry that are rarely set. Read them
// with entry.ext, set them with extLocked.
type entryExtra struct {
	dneReason string // why the resource does not exist (stMissing, stExpired)

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

// ambient returns the error pending on e's cached value, if any.
func (e *entry) ambient() ambient {
	switch x := e.extra; {
	case x == nil:
		return ambNone
	case x.nack != nil:
		return ambNACK
	case x.serverErr != nil:
		return ambServerError
	}
	return ambNone
}

// status returns e's CSDS client_status (gRFC A40, R-20): stateTable's.
func (e *entry) status() v3adminpb.ClientResourceStatus {
	return stateTable[e.state].status[e.ambient()]
}

// cacheState returns e's grpc.xds.cache_state (gRFC A78, A88; ):
// stateTable's.
func (e *entry) cacheState() string { return stateTable[e.state].cache[e.ambient()] }

// stale reports whether e's value came from persistence and no server has
// sent the resource since.
func (e *entry) stale() bool { return e.state == stStale }

// neverReceived reports whether e is watched and was never received: no
// value, and not known not to exist or to be invalid; a transient
// timeout says nothing of the resource either.
func (e *entry) neverReceived() bool {
	return len(e.watchers) > 0 && stateTable[e.state].unreceived
}

// unanswered reports whether e is watched and no server of its list has
// sent it: never received, only served from persistence,
// or expired. A stale value does not stop fallback: it is what the
// client serves while no server of the list answers, not an answer; nor
// does a value whose TTL ran out while its server was unreachable: it is
// no longer cached (gRFC A71 falls back for resources not cached).
func (e *entry) unanswered() bool {
	return len(e.watchers) > 0 && stateTable[e.state].unanswered
}

// settledBy reports whether sc, the server e's watchers are served by,
// has settled e: e has a value sc sent, or is known not to exist, to be
// invalid or in error (stateTable's answered). A stale value, one sent by
// another server of the list, a resource requested or expired is
// still awaited from sc.
func (e *entry) settledBy(sc *bootstrap.ServerConfig) bool {
	if !stateTable[e.state].answered {
		return false
	}
	return !e.state.hasValue() || e.fromURI() == sc.ServerURI
}

// input is what an event brings: the fields each event reads.
type input struct {
	value     any           // evValid, evPersisted: the decoded value
	raw       []byte        // evValid, evPersisted: its bytes
	version   string        // evValid, evInvalid, evPersisted: its version
	origin    *string       // evValid, evPersisted: the server_uri of the server that sent it (bootstrap.ServerConfig.ServerURI, kept by the config)
	ttl       time.Duration // evValid: Resource.ttl, 0 when none
	err       error         // evInvalid: the validation error
	status    *statuspb.Status
	reason    string                  // deletions: why the resource does not exist
	now       time.Time               // when the response arrived
	sc        *bootstrap.ServerConfig // the server that caused the event; nil for timers of the client's own, watches and persistence
	logger    *slog.Logger            // where to log: the server's channel's logger; nil: the client's
	et        **expiryTimer           // evRequested: the shared timer of the request written
	timeout   time.Duration           // evTimerFired: how long the timer ran
	transient bool                    // evTimerFired: the server has resource_timer_is_transient_error
	unserved  bool                    // evUnwatched: no channel serves the entry
}

// variant returns the variant of ev that in brings (state.go): the
// server features and status code that change its outcome.
func (in *input) variant(ev event) variant {
	switch ev {
	case evInvalid:
		if in.sc.HasFeature(bootstrap.FeatureFailOnDataErrors) {
			return vDrop
		}
	case evServerError:
		if codes.Code(in.status.GetCode()) == codes.PermissionDenied && in.sc.HasFeature(bootstrap.FeatureFailOnDataErrors) {
			return vDrop
		}
	case evServerNotFound:
		if in.sc.HasFeature(bootstrap.FeatureFailOnDataErrors) && !in.sc.IgnoreResourceDeletion() {
			return vDrop
		}
	case evOmitted, evRemoved:
		if in.sc.IgnoreResourceDeletion() {
			return vIgnore
		}
	case evTimerFired:
		if in.transient {
			return vTransient
		}
	case evUnwatched:
		if in.unserved {
			return vUnserved
		}
	}
	return vPlain
}

// serverErrorEvent returns the event of an error the server reported
// with status st: NOT_FOUND is a does-not-exist.
func serverErrorEvent(st *statuspb.Status) event {
	if codes.Code(st.GetCode()) == codes.NotFound {
		return evServerNotFound
	}
	return evServerError
}

// effects is what one step of an entry asks of the code around it, which
// carries it out (Client.stepLocked): the effects and the notice of the
// rule that applied, less those the entry's data make moot (an unchanged
// value, an error told last), and the log.
type effects struct {
	fx  effect
	n   notice
	log note
}

// step applies ev, with what in brings, to e: its state and guard from
// the tables (state.go), and its own data: the value (set, or dropped
// when the state that follows has none), the version and origin, the
// reason it does not exist, the NACK or server error pending on it. It
// returns the effects for the caller to carry out; it calls nothing
// outside the entry.
func (e *entry) step(ev event, in *input) effects {
	from := e.state
	t := step(from, e.guard, ev, in.variant(ev))
	e.guard = t.guard
	if t.absorb {
		return effects{}
	}
	fx := effects{fx: t.fx, n: t.n, log: t.log}
	if from.hasValue() && !t.to.hasValue() {
		e.value, e.raw, e.version = nil, "", ""
	}
	e.state = t.to
	switch ev {
	case evValid:
		fx = e.valid(from, in, fx)
	case evInvalid:
		fx = e.invalid(from, in, fx)
	case evServerError, evServerNotFound:
		fx = e.serverError(from, in, fx)
	case evTimerFired:
		if t.to == stMissing {
			e.extLocked().dneReason = fmt.Sprintf("not received within %v of being requested", in.timeout)
		}
	case evPersisted:
		if t.to == stStale {
			e.value, e.raw, e.version = in.value, rawString(in.raw), in.version
			e.lastUpdated, e.from = unixNanos(in.now), in.origin
		}
	case evOmitted, evRemoved, evTTLExpired:
		if fx.n == noticeNotFound {
			x := e.extLocked()
			x.nack, x.serverErr = nil, nil
			x.dneReason = in.reason
		}
	}
	return fx
}

// valid records a valid version: watchers are told when it is the first
// value, a different value, or the same value after a NACK, a server
// error, a deletion or a persisted value; it is
// persisted then too, or when its TTL comes or goes (persistLocked keeps
// no value with a TTL).
func (e *entry) valid(from state, in *input, fx effects) effects {
	// The cached bytes were compared before decoding; compare again, as
	// the entry may have changed since (a watch cancelled and started
	// anew). The bytes are already hot.
	x := e.ext()
	changed := !from.hasValue() || from == stStale || x.nack != nil || x.serverErr != nil || e.raw != string(in.raw)
	hadTTL := x.ttl != nil
	e.version = in.version
	e.lastUpdated = unixNanos(in.now)
	e.from = in.origin
	e.clearErrorsLocked()
	if !changed {
		fx.fx &^= fxNotify
		if hadTTL == (in.ttl > 0) {
			fx.fx &^= fxPersist
		}
		return fx
	}
	e.value, e.raw = in.value, rawString(in.raw)
	return fx
}

// invalid records a NACKed version: the watchers are told unless
// it is the error they were told last.
func (e *entry) invalid(from state, in *input, fx effects) effects {
	dropped := from.hasValue() && !e.state.hasValue()
	prev := e.ext().nack
	repeat := !dropped && prev != nil && prev.err.Error() == in.err.Error()
	x := e.extLocked()
	x.serverErr, x.dneReason = nil, ""
	x.nack = &nackState{err: in.err, version: in.version, time: in.now}
	if repeat {
		fx.fx &^= fxNotify
	}
	return fx
}

// serverError records the error the management server reported:
// with the server's status in error_state; a NOT_FOUND that leaves no
// value says why the resource does not exist. The same error twice in a
// row is reported once.
func (e *entry) serverError(from state, in *input, fx effects) effects {
	serr := status.ErrorProto(in.status)
	var err error
	if codes.Code(in.status.GetCode()) == codes.NotFound {
		err = fmt.Errorf("%w (%w): %w", ErrResourceNotFound, ErrServerReported, serr)
	} else {
		err = fmt.Errorf("%w: %w", ErrServerReported, serr)
	}
	hadValue, stillValue := from.hasValue(), e.state.hasValue()
	prev := e.ext().serverErr
	repeat := prev != nil && prev.err.Error() == err.Error() && hadValue == stillValue
	x := e.extLocked()
	x.nack, x.dneReason = nil, ""
	x.serverErr = &serverErrState{err: err, time: in.now}
	if e.state == stMissing {
		x.dneReason = fmt.Sprintf("reported by the management server (%v)", serr)
	}
	if repeat {
		fx.fx &^= fxNotify
	}
	return fx
}
