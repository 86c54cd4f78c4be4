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

// This file holds the cache entry of one resource: first its life as
// data (states, guards, events and the tables that join them), then the
// entry and its step, which applies the tables to the entry's own data
// (its value, its errors) and records the effects on the rest of the
// client for the caller to carry out (Client.stepLocked, watch.go).

// The life of a cache entry, declared as data: two independent
// dimensions, the value state (what the client knows of the resource) and
// the wire guard (where its subscription stands on the wire, R-10.3), and
// the tables of what each event does to each. Code reads them: entry.step
// applies them, entry.status and cacheState report them, and the tests
// walk every pair of them (entry_test.go).
//
// # Value states
//
// Without a cached value:
//
//	stRequested  subscribed; no request naming it written on a connected stream yet: not timed
//	stTimed      requested; the does-not-exist timer runs
//	stMissing    does not exist: deleted, timer fired, NOT_FOUND reported
//	stRejected   its last version was NACKed and none was ever valid, or fail_on_data_errors dropped it
//	stErrored    the server reported an error for it
//	stExpired    its TTL ran out: does not exist, and counts as never received for fallback
//	stTimedOut   not received in time from a server with resource_timer_is_transient_error
//
// With a cached value (a NACK or a server error may be pending on it,
// ambient: entryExtra.nack, entryExtra.serverErr):
//
//	stStale      loaded from persistence, not received from a server yet
//	stCached     received
//	stIgnored    received, and the server deleted it: kept for ignore_resource_deletion
//
// # Wire guards
//
// A SotW response of a type whose responses carry every resource deletes
// a cached resource it leaves out, unless it may answer a request
// that did not name the resource: the guard says when.
//
//	guardNone       nothing pending on the wire
//	guardOwed       no watcher any more: its unsubscription is owed, and the entry stays until a request without it is written
//	guardRewatched  watched again (or first watched with a value cached), no request naming it written since: an omission answers an earlier request
//	guardRaced      as guardRewatched, and a request without it was written meanwhile (it was built before the new watch)
//	guardSkip       a request naming it was written after guardRaced: the server may still answer the unsubscription, so the next omission is none
//	guardOwedRaced  guardOwed after guardRaced or guardSkip: if watched again, guardRaced, not guardRewatched
//
// Only an entry with a value a server sent (stCached, stIgnored) has a
// guard other than guardNone and guardOwed: a step to another state
// drops the rest (normalize). An omission (evOmitted) is absorbed in
// guardRewatched, guardRaced and guardOwedRaced, and once in guardSkip;
// it reaches the value state only through guardNone and guardOwed.

// state is an entry's value state; see the file comment and stateTable.
type state uint8

const (
	stRequested state = iota
	stTimed
	stMissing
	stRejected
	stErrored
	stExpired
	stTimedOut
	stStale
	stCached
	stIgnored
	numStates
)

// ambient is the error pending on a cached value, which the status and
// cache state columns of stateTable are indexed by.
type ambient uint8

const (
	ambNone        ambient = iota
	ambNACK                // the last version received was NACKed
	ambServerError         // the server reported an error for it
	numAmbients
)

// Cache states of a resource, the grpc.xds.cache_state label of the
// resources gauge (gRFC A78, and gRFC A88 "XdsClient Metric Labels"). The
// "_but_cached" states are those in which the client still has, and its
// watchers still use, a previously valid value.
const (
	// CacheStateRequested: subscribed, not received yet.
	CacheStateRequested = "requested"
	// CacheStateDoesNotExist: the server deleted it, or the watch expiry
	// timer fired.
	CacheStateDoesNotExist = "does_not_exist"
	// CacheStateDoesNotExistButCached: the server deleted it and the
	// client kept the cached value (ignore_resource_deletion, R-2.1).
	CacheStateDoesNotExistButCached = "does_not_exist_but_cached"
	// CacheStateACKed: the last version received was valid.
	CacheStateACKed = "acked"
	// CacheStateNACKed: the last version received was invalid, and none was
	// valid before.
	CacheStateNACKed = "nacked"
	// CacheStateNACKedButCached: the last version received was invalid;
	// an earlier valid one is kept.
	CacheStateNACKedButCached = "nacked_but_cached"
	// CacheStateReceivedError: the server sent an error for it (xRFC TP3,
	// gRFC A88).
	CacheStateReceivedError = "received_error"
	// CacheStateReceivedErrorButCached: the server sent an error for it
	// and an earlier valid version is kept (gRFC A88).
	CacheStateReceivedErrorButCached = "received_error_but_cached"
	// CacheStateTimeout: not received in time from a server whose watch
	// expiry timer is a transient error (gRFC A88,
	// resource_timer_is_transient_error; ).
	CacheStateTimeout = "timeout"
)

// stateInfo is one row of stateTable.
type stateInfo struct {
	name  string
	value bool // a value is cached
	// status is the CSDS client_status (gRFC A40, R-20) and cache the
	// grpc.xds.cache_state (gRFC A78, A88; ), by the ambient error
	// pending on the value.
	status [numAmbients]v3adminpb.ClientResourceStatus
	cache  [numAmbients]string
	// unreceived: a watched resource in this state was never received
	// fallback is due when its server fails. A transient
	// timeout says nothing of the resource either.
	unreceived bool
	// unanswered: no server of the list sent it: never
	// received, only served from persistence, or expired.
	unanswered bool
	// answered: a server answered for it (a value, a deletion, a NACKed
	// version, a reported error) or its timer ruled it out: nothing more
	// is awaited of it.
	answered bool
}

// Shorthands of the tables.
const (
	csRequested = v3adminpb.ClientResourceStatus_REQUESTED
	csMissing   = v3adminpb.ClientResourceStatus_DOES_NOT_EXIST
	csACKed     = v3adminpb.ClientResourceStatus_ACKED
	csNACKed    = v3adminpb.ClientResourceStatus_NACKED
	csErrored   = v3adminpb.ClientResourceStatus_RECEIVED_ERROR
	csTimeout   = v3adminpb.ClientResourceStatus_TIMEOUT
)

// stateTable is what each value state means: whether a value is cached,
// the CSDS status and cache state it reports (the same whatever the
// ambient error without a value), whether it counts as unreceived or
// unanswered for fallback, and whether the server answered for
// it, so that a silent stream awaits nothing.
var stateTable = [numStates]stateInfo{
	stRequested: {name: "requested", status: all(csRequested), cache: all(CacheStateRequested), unreceived: true, unanswered: true},
	stTimed:     {name: "timed", status: all(csRequested), cache: all(CacheStateRequested), unreceived: true, unanswered: true},
	stMissing:   {name: "missing", status: all(csMissing), cache: all(CacheStateDoesNotExist), answered: true},
	stRejected:  {name: "rejected", status: all(csNACKed), cache: all(CacheStateNACKed), answered: true},
	stErrored:   {name: "errored", status: all(csErrored), cache: all(CacheStateReceivedError), answered: true},
	stExpired:   {name: "expired", status: all(csMissing), cache: all(CacheStateDoesNotExist), unanswered: true},
	stTimedOut:  {name: "timed out", status: all(csTimeout), cache: all(CacheStateTimeout), unreceived: true, unanswered: true},
	stStale: {name: "stale", value: true, unanswered: true,
		status: [numAmbients]v3adminpb.ClientResourceStatus{csACKed, csNACKed, csErrored},
		cache:  [numAmbients]string{CacheStateACKed, CacheStateNACKedButCached, CacheStateReceivedErrorButCached}},
	stCached: {name: "cached", value: true, answered: true,
		status: [numAmbients]v3adminpb.ClientResourceStatus{csACKed, csNACKed, csErrored},
		cache:  [numAmbients]string{CacheStateACKed, CacheStateNACKedButCached, CacheStateReceivedErrorButCached}},
	// The server says it does not exist; the value is kept, ACKED in
	// CSDS.
	stIgnored: {name: "ignored", value: true, answered: true,
		status: [numAmbients]v3adminpb.ClientResourceStatus{csACKed, csNACKed, csErrored},
		cache:  [numAmbients]string{CacheStateDoesNotExistButCached, CacheStateNACKedButCached, CacheStateReceivedErrorButCached}},
}

// all returns v for every ambient error.
func all[T any](v T) [numAmbients]T { return [numAmbients]T{v, v, v} }

func (s state) String() string { return stateTable[s].name }

// hasValue reports whether s is a state with a cached value.
func (s state) hasValue() bool { return stateTable[s].value }

// guard is an entry's wire guard; see the file comment.
type guard uint8

const (
	guardNone guard = iota
	guardOwed
	guardRewatched
	guardRaced
	guardSkip
	guardOwedRaced
	numGuards
)

var guardNames = [numGuards]string{"none", "owed", "rewatched", "raced", "skip", "owed-raced"}

func (g guard) String() string { return guardNames[g] }

// owed reports whether the entry's unsubscription is owed: it has no
// watcher, and stays until a request without it is written.
func (g guard) owed() bool { return g == guardOwed || g == guardOwedRaced }

// event is what happens to an entry.
type event uint8

const (
	evWatched        event = iota // its first watcher came (a new watch, or one after the last was cancelled)
	evUnwatched                   // its last watcher, or the collection that held it, went; variant vUnserved: no channel owes the unsubscription
	evKept                        // owed, it is cached and a collection of its authority holds it again
	evRequested                   // a request naming it was written on a connected stream
	evUnsubWritten                // a request that does not name it, built while it was owed, was written
	evStreamEnded                 // the stream that carries it ended
	evValid                       // a valid version arrived
	evInvalid                     // an invalid version arrived; vDrop: fail_on_data_errors
	evServerError                 // the server reported an error other than NOT_FOUND; vDrop: fail_on_data_errors drops the value
	evServerNotFound              // the server reported NOT_FOUND; vDrop as evServerError
	evOmitted                     // a SotW response of a type that carries every resource left it out; vIgnore: ignore_resource_deletion
	evRemoved                     // delta removed_resources named it; vIgnore as evOmitted
	evTimerFired                  // its does-not-exist timer fired; vTransient: resource_timer_is_transient_error
	evTTLExpired                  // its value's TTL ran out
	evPersisted                   // the persistence timeout passed: its stored value is served
	numEvents
)

var eventNames = [numEvents]string{"watched", "unwatched", "kept", "requested", "unsub-written", "stream-ended", "valid",
	"invalid", "server-error", "server-not-found", "omitted", "removed", "timer-fired", "ttl-expired", "persisted"}

func (ev event) String() string { return eventNames[ev] }

// variant is the circumstance of an event that changes its outcome: a
// server feature, or the lack of a channel.
type variant uint8

const (
	vPlain     variant = iota
	vDrop              // evInvalid, evServerError, evServerNotFound: the server has fail_on_data_errors, which drops the value
	vIgnore            // evOmitted, evRemoved: the server has ignore_resource_deletion
	vTransient         // evTimerFired: the server has resource_timer_is_transient_error
	vUnserved          // evUnwatched: no channel serves the entry, so none owes its unsubscription
	numVariants
)

var variantNames = [numVariants]string{"plain", "drop", "ignore", "transient", "unserved"}

func (v variant) String() string { return variantNames[v] }

// variants lists the variants each event has.
var variants = [numEvents][]variant{
	evUnwatched:      {vPlain, vUnserved},
	evInvalid:        {vPlain, vDrop},
	evServerError:    {vPlain, vDrop},
	evServerNotFound: {vPlain, vDrop},
	evOmitted:        {vPlain, vIgnore},
	evRemoved:        {vPlain, vIgnore},
	evTimerFired:     {vPlain, vTransient},
}

// variantsOf returns the variants of ev.
func variantsOf(ev event) []variant {
	if vs := variants[ev]; vs != nil {
		return vs
	}
	return []variant{vPlain}
}

// effect is what a step asks of the code around the entry, which carries
// it out (Client.stepLocked), in this order.
type effect uint16

const (
	fxStopTimer effect = 1 << iota // stop its does-not-exist timer
	fxTime                         // add it to the does-not-exist timer of the request just written
	fxStopTTL                      // stop its value's TTL
	fxSetTTL                       // time its new value's TTL, or remove it
	fxPersist                      // save its value, or delete the saved one
	fxNotify                       // tell its watchers, as the notice says
	fxRelease                      // forget it unless something keeps it
)

// notice is what a step tells the entry's watchers: ResourceChanged, or an
// error, as ResourceError while no value is cached and AmbientError while
// one is.
type notice uint8

const (
	noNotice       notice = iota
	noticeChanged         // the new value (when it differs, R-13.5)
	noticeInvalid         // ErrResourceInvalid, unless the same error was told last
	noticeServer          // ErrServerReported, unless the same error was told last
	noticeNotFound        // ErrResourceNotFound
	noticeTimeout         // ErrTimeout
	noticeReplay          // the whole state, as to a new watcher: the value served from persistence, then ErrStale
)

var noticeNames = []string{"", "changed", "invalid", "server-error", "not-found", "timeout", "replay"}

func (n notice) String() string { return noticeNames[n] }

// stateSet is a set of value states.
type stateSet uint16

func states(ss ...state) stateSet {
	var set stateSet
	for _, s := range ss {
		set |= 1 << s
	}
	return set
}

func (set stateSet) has(s state) bool { return set&(1<<s) != 0 }

var (
	anyState   = stateSet(1<<numStates - 1)
	valueSet   = states(stStale, stCached, stIgnored)
	noValueSet = anyState &^ valueSet
)

// keep, as a rule's target, leaves the value state as it is.
const keep = numStates

// rule is one row of valueRules: event ev, in a state of from, with
// variant when (any variant when anyVariant), leads to state to (keep: the
// same), with effects fx and notice n, and logs log (nothing when its
// message is empty).
type rule struct {
	ev   event
	from stateSet
	when variant
	to   state
	fx   effect
	n    notice
	log  note
}

// note is a message to log, and its level.
type note struct {
	msg   string
	level slog.Level
}

func warn(msg string) note { return note{msg, slog.LevelWarn} }
func info(msg string) note { return note{msg, slog.LevelInfo} }

// anyVariant, as a rule's when, matches every variant.
const anyVariant = numVariants

// valueRules is the transition table of the value state: the first rule
// that matches an event, state and variant applies; none means nothing
// happens. A rule from a state with a value to one without drops the
// value (entry.step); its effects stop the value's TTL and delete its
// saved copy. Every event the server causes (evValid, evInvalid, the
// server's errors, a deletion) stops the does-not-exist timer: the
// resource was seen; an omission of a resource never received
// does not (R-9.7: the timer decides). Notices are conditional where
// they say so: an unchanged value and an error told last are not told
// again.
var valueRules = []rule{
	// A request written starts the timer of a resource never requested on
	// a connected stream; a cached one is not timed.
	{ev: evRequested, from: states(stRequested), when: anyVariant, to: stTimed, fx: fxTime},
	{ev: evStreamEnded, from: states(stTimed), when: anyVariant, to: stRequested, fx: fxStopTimer},

	{ev: evTimerFired, from: states(stTimed), when: vPlain, to: stMissing, fx: fxStopTimer | fxNotify, n: noticeNotFound,
		log: warn("resource does not exist: watch expired")},
	{ev: evTimerFired, from: states(stTimed), when: vTransient, to: stTimedOut, fx: fxStopTimer | fxNotify, n: noticeTimeout,
		log: warn("resource not received in time: a transient error (resource_timer_is_transient_error)")},

	{ev: evPersisted, from: states(stRequested, stTimed, stTimedOut), when: anyVariant, to: stStale, fx: fxStopTimer | fxNotify, n: noticeReplay},

	// A valid version replaces whatever was there: persisted when it
	// changed (or its TTL came or went), told when it changed.
	{ev: evValid, from: states(stIgnored), when: anyVariant, to: stCached, fx: fxStopTimer | fxSetTTL | fxPersist | fxNotify, n: noticeChanged,
		log: info("resource present again after an ignored deletion")},
	{ev: evValid, from: anyState, when: anyVariant, to: stCached, fx: fxStopTimer | fxSetTTL | fxPersist | fxNotify, n: noticeChanged},

	// An invalid version: the value stays, or goes with
	// fail_on_data_errors.
	{ev: evInvalid, from: valueSet, when: vDrop, to: stRejected, fx: fxStopTimer | fxStopTTL | fxPersist | fxNotify, n: noticeInvalid,
		log: warn("dropping the cached resource after a NACK (fail_on_data_errors)")},
	{ev: evInvalid, from: valueSet, when: anyVariant, to: keep, fx: fxStopTimer | fxNotify, n: noticeInvalid},
	{ev: evInvalid, from: noValueSet, when: anyVariant, to: stRejected, fx: fxStopTimer | fxNotify, n: noticeInvalid},

	// The server's errors: the value stays, or goes with
	// fail_on_data_errors; without one, NOT_FOUND is a
	// does-not-exist.
	{ev: evServerError, from: valueSet, when: vPlain, to: keep, fx: fxStopTimer | fxNotify, n: noticeServer, log: warn(logServerError)},
	{ev: evServerError, from: valueSet, when: vDrop, to: stErrored, fx: fxStopTimer | fxStopTTL | fxPersist | fxNotify, n: noticeServer, log: warn(logServerError)},
	{ev: evServerError, from: noValueSet, when: anyVariant, to: stErrored, fx: fxStopTimer | fxNotify, n: noticeServer, log: warn(logServerError)},
	{ev: evServerNotFound, from: valueSet, when: vPlain, to: keep, fx: fxStopTimer | fxNotify, n: noticeServer, log: warn(logServerError)},
	{ev: evServerNotFound, from: valueSet, when: vDrop, to: stMissing, fx: fxStopTimer | fxStopTTL | fxPersist | fxNotify, n: noticeServer, log: warn(logServerError)},
	{ev: evServerNotFound, from: noValueSet, when: anyVariant, to: stMissing, fx: fxStopTimer | fxNotify, n: noticeServer, log: warn(logServerError)},

	// Deletions: the value goes, unless the server has
	// ignore_resource_deletion; a stale value is kept then, and
	// stays stale. An entry nothing keeps any more goes.
	{ev: evOmitted, from: states(stCached), when: vIgnore, to: stIgnored, fx: fxRelease, log: warn(logIgnoredDeletion)},
	{ev: evOmitted, from: states(stStale), when: vIgnore, to: keep, fx: fxRelease, log: warn(logIgnoredDeletion)},
	{ev: evOmitted, from: states(stCached, stStale), when: vPlain, to: stMissing, fx: fxStopTTL | fxPersist | fxNotify | fxRelease, n: noticeNotFound},
	// Without a value (R-9.7: the timer decides), or ignored already.
	{ev: evOmitted, from: anyState, when: anyVariant, to: keep, fx: fxRelease},

	{ev: evRemoved, from: states(stCached), when: vIgnore, to: stIgnored, fx: fxStopTimer | fxRelease, log: warn(logIgnoredDeletion)},
	{ev: evRemoved, from: states(stStale), when: vIgnore, to: keep, fx: fxStopTimer | fxRelease, log: warn(logIgnoredDeletion)},
	{ev: evRemoved, from: states(stIgnored), when: vIgnore, to: keep, fx: fxStopTimer | fxRelease},
	{ev: evRemoved, from: valueSet, when: vPlain, to: stMissing, fx: fxStopTimer | fxStopTTL | fxPersist | fxNotify | fxRelease, n: noticeNotFound},
	// Known not to exist already: not told again.
	{ev: evRemoved, from: states(stMissing, stExpired), when: anyVariant, to: keep, fx: fxStopTimer | fxRelease},
	{ev: evRemoved, from: noValueSet, when: anyVariant, to: stMissing, fx: fxStopTimer | fxNotify | fxRelease, n: noticeNotFound},

	{ev: evTTLExpired, from: valueSet, when: anyVariant, to: stExpired, fx: fxStopTimer | fxStopTTL | fxPersist | fxNotify | fxRelease, n: noticeNotFound,
		log: warn("resource expired: its TTL ran out without an update or heartbeat")},

	// The wire: an unsubscription no channel owes, or one written, lets
	// the entry go unless something keeps it.
	{ev: evUnwatched, from: anyState, when: vUnserved, to: keep, fx: fxRelease},
	{ev: evUnsubWritten, from: anyState, when: anyVariant, to: keep, fx: fxRelease},
}

// Log messages of several rules.
const (
	logServerError     = "management server reported a resource error"
	logIgnoredDeletion = "ignoring deletion (ignore_resource_deletion)"
)

// guardRule is one row of guardRules: event ev, with variant when (any
// variant when anyVariant) and the guard in from, leads to guard to
// (keepGuard: the same); with absorb, the event stops there and does not
// reach the value state (an omission that may answer an earlier request,
// a request written for an entry no longer watched).
type guardRule struct {
	ev     event
	when   variant
	from   []guard
	to     guard
	absorb bool
}

// keepGuard, as a guard rule's target, leaves the guard as it is.
const keepGuard = numGuards

// guardRules is the transition table of the wire guard. Its rules with a
// target other than guardNone and guardOwed apply to an entry with a
// value a server sent; without one (or with a stale value, which no
// server sent), the guard keeps only whether the entry is owed
// (normalize). An event and guard no rule names leave the guard as it is.
var guardRules = []guardRule{
	{ev: evWatched, when: anyVariant, from: []guard{guardNone, guardOwed, guardRewatched}, to: guardRewatched},
	// An unsubscription written earlier may be answered yet: the guard
	// holds until a request naming it is written, and one omission more.
	{ev: evWatched, when: anyVariant, from: []guard{guardRaced, guardSkip, guardOwedRaced}, to: guardRaced},

	// The serving channel owes the unsubscription; with none, nothing is
	// owed, and the entry goes unless a collection keeps it (valueRules).
	{ev: evUnwatched, when: vPlain, from: []guard{guardNone, guardRewatched}, to: guardOwed},
	{ev: evUnwatched, when: vPlain, from: []guard{guardRaced, guardSkip}, to: guardOwedRaced},
	{ev: evUnwatched, when: vUnserved, from: []guard{guardNone, guardOwed, guardRewatched, guardRaced, guardSkip, guardOwedRaced}, to: guardNone},
	{ev: evKept, when: anyVariant, from: []guard{guardOwed}, to: guardNone},
	{ev: evKept, when: anyVariant, from: []guard{guardOwedRaced}, to: guardSkip},

	{ev: evRequested, when: anyVariant, from: []guard{guardRewatched}, to: guardNone},
	{ev: evRequested, when: anyVariant, from: []guard{guardRaced}, to: guardSkip},
	// Named by a request built before its last watch went: no timer for
	// a resource nobody watches.
	{ev: evRequested, when: anyVariant, from: []guard{guardOwed, guardOwedRaced}, to: keepGuard, absorb: true},

	// A request without it, written while it is watched again: its answer
	// leaves it out (the request was built before the watch). Written
	// while it is owed, it settles the unsubscription, and the entry goes
	// unless something keeps it (valueRules).
	{ev: evUnsubWritten, when: anyVariant, from: []guard{guardNone, guardRewatched, guardRaced, guardSkip}, to: guardRaced},
	{ev: evUnsubWritten, when: anyVariant, from: []guard{guardOwed, guardOwedRaced}, to: guardNone},

	{ev: evOmitted, when: anyVariant, from: []guard{guardRewatched, guardRaced, guardOwedRaced}, to: keepGuard, absorb: true},
	{ev: evOmitted, when: anyVariant, from: []guard{guardSkip}, to: guardNone, absorb: true},
	// The server answered a request that names it: the skip is spent.
	{ev: evValid, when: anyVariant, from: []guard{guardSkip}, to: guardNone},
	{ev: evInvalid, when: anyVariant, from: []guard{guardSkip}, to: guardNone},
	{ev: evServerError, when: anyVariant, from: []guard{guardSkip}, to: guardNone},
	{ev: evServerNotFound, when: anyVariant, from: []guard{guardSkip}, to: guardNone},
}

// transition is the outcome of one event: the state and guard that
// follow, the effects, notice and log, and whether the guard absorbed the
// event.
type transition struct {
	to     state
	guard  guard
	fx     effect
	n      notice
	log    note
	absorb bool
}

// The tables, indexed once: a step is two array reads.
var (
	valueIndex = indexValueRules(valueRules)
	guardIndex = indexGuardRules(guardRules)
)

// indexValueRules returns, for every state, event and variant, the first
// rule of rules that matches, or nil.
func indexValueRules(rules []rule) *[numStates][numEvents][numVariants]*rule {
	var ix [numStates][numEvents][numVariants]*rule
	for i := range rules {
		r := &rules[i]
		for s := range numStates {
			for v := range numVariants {
				if ix[s][r.ev][v] == nil && r.from.has(s) && (r.when == anyVariant || r.when == v) {
					ix[s][r.ev][v] = r
				}
			}
		}
	}
	return &ix
}

// indexGuardRules returns, for every guard, event and variant, the first
// rule of rules that matches, or nil.
func indexGuardRules(rules []guardRule) *[numGuards][numEvents][numVariants]*guardRule {
	var ix [numGuards][numEvents][numVariants]*guardRule
	for i := range rules {
		r := &rules[i]
		for _, g := range r.from {
			for v := range numVariants {
				if ix[g][r.ev][v] == nil && (r.when == anyVariant || r.when == v) {
					ix[g][r.ev][v] = r
				}
			}
		}
	}
	return &ix
}

// guarded reports whether s is a value state the guard protects: a value
// a server sent.
func guarded(s state) bool { return s.hasValue() && s != stStale }

// step returns what ev, with variant v, does to an entry in state s with
// guard g: first the guard (guardRules), which may absorb the event, then
// the value state (valueRules). Without a guarded value, the guard keeps
// only whether the entry is owed (normalize).
func step(s state, g guard, ev event, v variant) transition {
	t := transition{to: s, guard: g}
	if r := guardIndex[g][ev][v]; r != nil {
		if r.to != keepGuard {
			t.guard = r.to
		}
		if r.absorb {
			t.absorb = true
			t.guard = normalize(s, t.guard)
			return t
		}
	}
	if r := valueIndex[s][ev][v]; r != nil {
		if r.to != keep {
			t.to = r.to
		}
		t.fx, t.n, t.log = r.fx, r.n, r.log
	}
	t.guard = normalize(t.to, t.guard)
	return t
}

// normalize returns g as an entry in state s keeps it: a guard protects
// a value a server sent only; without one, what is left is whether the
// unsubscription is owed.
func normalize(s state, g guard) guard {
	if guarded(s) {
		return g
	}
	if g.owed() {
		return guardOwed
	}
	return guardNone
}

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

	state state // what the client knows of the resource (stateTable)
	guard guard // where its subscription stands on the wire (guardRules, R-10.3)
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

// variant returns the variant of ev that in brings (variants): the
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
// the tables (valueRules, guardRules), and its own data: the value (set,
// or dropped when the state that follows has none), the version and
// origin, the reason it does not exist, the NACK or server error pending
// on it. It returns the effects for the caller to carry out; it calls
// nothing outside the entry.
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
