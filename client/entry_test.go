// SPDX-License-Identifier: Apache-2.0

package client

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// The tests of the entry's life (entry.go): every value state and guard
// against every event and variant, three ways.
//
//  1. TestStep_EveryPair runs the real step (entry.step and the effects
//     Client.stepLocked carries out, on a real client) for every pair and
//     checks that it does what the tables declare: the state and guard
//     that follow, the value kept or dropped, the timer, the watcher
//     calls, the release.
//  2. TestStep_Expectations holds the tables against expectations written
//     out by hand, row by row, so that a wrong row fails.
//  3. TestGuard_Sequences holds the guard table against a model of
//     written differently (three booleans), over every sequence of wire
//     events up to a length: the project's hardest rule.

// reachable returns every (state, guard) pair an entry can be in: the
// guards other than guardNone and guardOwed only with a value a server
// sent (normalize).
func reachable() [][2]uint8 {
	var out [][2]uint8
	for s := range numStates {
		for g := range numGuards {
			if normalize(s, g) == g {
				out = append(out, [2]uint8{uint8(s), uint8(g)})
			}
		}
	}
	return out
}

// outcome is what one step of an entry did, observed.
type outcome struct {
	state   state
	guard   guard
	value   bool   // a value is cached
	timed   bool   // the does-not-exist timer runs
	dropped bool   // the entry left the cache
	calls   string // the watcher calls, comma-separated
}

func (o outcome) String() string {
	return fmt.Sprintf("%v/%v value=%v timed=%v dropped=%v calls=%q", o.state, o.guard, o.value, o.timed, o.dropped, o.calls)
}

// runStep puts an entry of a new client in state s with guard g (a value
// when s has one, a running timer when s is stTimed, one watcher unless
// the entry is owed or loses its last watcher, evUnwatched) and applies
// ev with variant v through Client.stepLocked.
func runStep(t *testing.T, s state, g guard, ev event, v variant) outcome {
	t.Helper()
	valid := testutil.MarshalAny(testutil.Cluster("c", "eds"))
	var features []string
	switch v {
	case vDrop:
		features = append(features, bootstrap.FeatureFailOnDataErrors)
	case vIgnore:
		features = append(features, bootstrap.FeatureIgnoreResourceDeletion)
	}
	sc := &bootstrap.ServerConfig{ServerURI: "s", ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}, ServerFeatures: features}
	c, err := New(&bootstrap.Config{Servers: []*bootstrap.ServerConfig{sc}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.mu.Lock()
	a := c.authorityOfLocked(c.cfg.Servers)
	tc := a.typeLocked(resources.ClusterType)
	e := a.newEntryLocked(tc, "c")
	e.state, e.guard = s, g
	var calls []string
	if watchedFor(g, ev) {
		we := newWatchEntry(recordingWatcher{&calls})
		we.target.Store(e)
		e.watchers = []*watchEntry{we}
		tc.watched = 1
	}
	if s.hasValue() {
		_, val, err := resources.ClusterType.Decode(valid)
		if err != nil {
			t.Fatal(err)
		}
		e.value, e.raw, e.version, e.from = val, string(valid.GetValue()), "1", &sc.ServerURI
		if ev == evValid {
			e.raw = "other bytes" // a different value
		}
	}
	if s == stTimed {
		var et *expiryTimer
		c.timeLocked(&et, e)
		c.startExpiryLocked(et, sc)
	}
	code := codes.PermissionDenied
	if ev == evServerNotFound {
		code = codes.NotFound
	}
	var et *expiryTimer
	in := &input{
		sc: sc, now: time.Now(), et: &et, timeout: time.Second,
		version: "2", err: errors.New("bad"), reason: "gone", transient: v == vTransient, unserved: v == vUnserved,
		status: &statuspb.Status{Code: int32(code), Message: "server says"}, origin: &sc.ServerURI,
	}
	if ev == evValid || ev == evPersisted {
		_, in.value, _ = resources.ClusterType.Decode(valid)
		in.raw = valid.GetValue()
	}
	if got := in.variant(ev); got != v {
		t.Fatalf("the input of variant %v is of variant %v", v, got)
	}
	c.stepLocked(e, ev, in, nil)
	c.startExpiryLocked(et, sc)
	o := outcome{state: e.state, guard: e.guard, value: e.value != nil, timed: e.timer != nil, dropped: !a.holdsLocked(e)}
	e.stopTimerLocked()
	e.stopTTLLocked()
	c.mu.Unlock()
	flushed := make(chan struct{})
	c.serializer.Schedule(func() { close(flushed) })
	<-flushed
	o.calls = strings.Join(calls, ",")
	return o
}

// watchedFor reports whether runStep's entry has a watcher for ev in
// guard g: none while owed, nor when its last watcher went.
func watchedFor(g guard, ev event) bool { return !g.owed() && ev != evUnwatched }

// declared returns what the tables say one step does, in the terms of
// runStep's entry.
func declared(s state, g guard, ev event, v variant) outcome {
	tr := step(s, g, ev, v)
	o := outcome{state: tr.to, guard: tr.guard, value: tr.to.hasValue(), timed: s == stTimed}
	if tr.absorb {
		return o
	}
	if tr.fx&fxStopTimer != 0 {
		o.timed = false
	}
	if tr.fx&fxTime != 0 {
		o.timed = true
	}
	watched := watchedFor(g, ev)
	if tr.fx&fxRelease != 0 && !watched && !tr.guard.owed() {
		o.dropped, o.timed = true, false
	}
	if tr.fx&fxNotify != 0 && watched {
		switch tr.n {
		case noticeChanged:
			o.calls = "changed"
		case noticeReplay:
			o.calls = "changed,ambient_error" // the stale value, then ErrStale
		case noticeInvalid, noticeServer, noticeNotFound, noticeTimeout:
			o.calls = "resource_error"
			if tr.to.hasValue() {
				o.calls = "ambient_error"
			}
		}
	}
	return o
}

// TestStep_EveryPair runs every reachable state and guard against every
// event and variant, and checks that the step does what the tables
// declare.
func TestStep_EveryPair(t *testing.T) {
	n := 0
	for _, p := range reachable() {
		s, g := state(p[0]), guard(p[1])
		for ev := range numEvents {
			for _, v := range variantsOf(ev) {
				n++
				got, want := runStep(t, s, g, ev, v), declared(s, g, ev, v)
				if got != want {
					t.Errorf("%v/%v %v (%v): got %v, the tables say %v", s, g, ev, v, got, want)
				}
				if normalize(got.state, got.guard) != got.guard {
					t.Errorf("%v/%v %v (%v): reached %v/%v, which no entry can be in", s, g, ev, v, got.state, got.guard)
				}
			}
		}
	}
	t.Logf("%d steps", n)
}

// TestStep_Expectations holds the tables against steps written out by
// hand.
func TestStep_Expectations(t *testing.T) {
	const (
		none    = ""
		changed = "changed"
		resErr  = "resource_error"
		ambErr  = "ambient_error"
		replay  = changed + "," + ambErr
	)
	for _, tc := range []struct {
		name    string
		s       state
		g       guard
		ev      event
		v       variant
		want    state
		wantG   guard
		calls   string
		dropped bool
	}{
		// watched again.
		{"re-watch of a cached value is guarded", stCached, guardNone, evWatched, vPlain, stCached, guardRewatched, none, false},
		{"re-watch after the last watch went", stCached, guardOwed, evWatched, vPlain, stCached, guardRewatched, none, false},
		{"re-watch after a raced unsubscription keeps the guard (issue 28)", stCached, guardOwedRaced, evWatched, vPlain, stCached, guardRaced, none, false},
		{"re-watch while an omission is to skip guards again (issue 28)", stCached, guardSkip, evWatched, vPlain, stCached, guardRaced, none, false},
		{"re-watch of an ignored deletion keeps it (issue 28)", stIgnored, guardOwed, evWatched, vPlain, stIgnored, guardRewatched, none, false},
		{"re-watch of a stale value is not guarded", stStale, guardOwed, evWatched, vPlain, stStale, guardNone, none, false},
		{"re-watch without a value", stRequested, guardOwed, evWatched, vPlain, stRequested, guardNone, none, false},
		{"last watch gone", stCached, guardNone, evUnwatched, vPlain, stCached, guardOwed, none, false},
		{"last watch gone while raced", stCached, guardRaced, evUnwatched, vPlain, stCached, guardOwedRaced, none, false},
		{"last watch gone while an omission is to skip", stCached, guardSkip, evUnwatched, vPlain, stCached, guardOwedRaced, none, false},
		{"last watch gone, no channel", stCached, guardRewatched, evUnwatched, vUnserved, stCached, guardNone, none, true},
		{"a collection keeps it", stCached, guardOwed, evKept, vPlain, stCached, guardNone, none, false},
		{"a collection keeps it after a race", stCached, guardOwedRaced, evKept, vPlain, stCached, guardSkip, none, false},
		{"request ends the guard", stCached, guardRewatched, evRequested, vPlain, stCached, guardNone, none, false},
		{"request after a raced unsubscription", stCached, guardRaced, evRequested, vPlain, stCached, guardSkip, none, false},
		{"request of an entry nobody watches: no timer", stRequested, guardOwed, evRequested, vPlain, stRequested, guardOwed, none, false},
		{"unsubscription written while re-watched", stCached, guardRewatched, evUnsubWritten, vPlain, stCached, guardRaced, none, false},
		{"unsubscription written again while an omission is to skip", stCached, guardSkip, evUnsubWritten, vPlain, stCached, guardRaced, none, false},
		{"unsubscription written", stCached, guardOwed, evUnsubWritten, vPlain, stCached, guardNone, none, true},
		{"unsubscription written after a race", stCached, guardOwedRaced, evUnsubWritten, vPlain, stCached, guardNone, none, true},
		{"unsubscription of a requested resource written", stTimed, guardOwed, evUnsubWritten, vPlain, stTimed, guardNone, none, true},
		// the does-not-exist timer.
		{"request starts the timer", stRequested, guardNone, evRequested, vPlain, stTimed, guardNone, none, false},
		{"stream end stops the timer", stTimed, guardNone, evStreamEnded, vPlain, stRequested, guardNone, none, false},
		{"timer fires", stTimed, guardNone, evTimerFired, vPlain, stMissing, guardNone, resErr, false},
		{"timer fires, transient", stTimed, guardNone, evTimerFired, vTransient, stTimedOut, guardNone, resErr, false},
		{"timer of a received resource", stCached, guardNone, evTimerFired, vPlain, stCached, guardNone, none, false},
		// Values and errors.
		{"first value", stTimed, guardNone, evValid, vPlain, stCached, guardNone, changed, false},
		{"value while guarded keeps the guard", stCached, guardRewatched, evValid, vPlain, stCached, guardRewatched, changed, false},
		{"value while raced keeps the guard", stCached, guardRaced, evValid, vPlain, stCached, guardRaced, changed, false},
		{"value spends the skip", stCached, guardSkip, evValid, vPlain, stCached, guardNone, changed, false},
		{"value after an ignored deletion", stIgnored, guardNone, evValid, vPlain, stCached, guardNone, changed, false},
		{"persisted value replaced", stStale, guardNone, evValid, vPlain, stCached, guardNone, changed, false},
		{"value after a deletion", stMissing, guardNone, evValid, vPlain, stCached, guardNone, changed, false},
		{"invalid first version", stTimed, guardNone, evInvalid, vPlain, stRejected, guardNone, resErr, false},
		{"invalid update keeps the value", stCached, guardNone, evInvalid, vPlain, stCached, guardNone, ambErr, false},
		{"invalid update spends the skip", stCached, guardSkip, evInvalid, vPlain, stCached, guardNone, ambErr, false},
		{"invalid update, fail_on_data_errors", stCached, guardNone, evInvalid, vDrop, stRejected, guardNone, resErr, false},
		{"server error without a value", stTimed, guardNone, evServerError, vPlain, stErrored, guardNone, resErr, false},
		{"server NOT_FOUND without a value", stTimed, guardNone, evServerNotFound, vPlain, stMissing, guardNone, resErr, false},
		{"server error keeps the value", stCached, guardNone, evServerError, vPlain, stCached, guardNone, ambErr, false},
		{"server PERMISSION_DENIED, fail_on_data_errors", stCached, guardNone, evServerError, vDrop, stErrored, guardNone, resErr, false},
		{"server NOT_FOUND, fail_on_data_errors", stCached, guardNone, evServerNotFound, vDrop, stMissing, guardNone, resErr, false},
		// Deletions.
		{"omission deletes", stCached, guardNone, evOmitted, vPlain, stMissing, guardNone, resErr, false},
		{"omission deletes a stale value", stStale, guardNone, evOmitted, vPlain, stMissing, guardNone, resErr, false},
		{"omission of an unwatched value deletes", stCached, guardOwed, evOmitted, vPlain, stMissing, guardOwed, none, false},
		{"omission ignored", stCached, guardNone, evOmitted, vIgnore, stIgnored, guardNone, none, false},
		{"omission ignored again", stIgnored, guardNone, evOmitted, vPlain, stIgnored, guardNone, none, false},
		{"omission while guarded", stCached, guardRewatched, evOmitted, vPlain, stCached, guardRewatched, none, false},
		{"omission while raced", stCached, guardRaced, evOmitted, vPlain, stCached, guardRaced, none, false},
		{"omission while owed after a race", stCached, guardOwedRaced, evOmitted, vPlain, stCached, guardOwedRaced, none, false},
		{"omission skipped once", stCached, guardSkip, evOmitted, vPlain, stCached, guardNone, none, false},
		{"omission of a never received resource", stTimed, guardNone, evOmitted, vPlain, stTimed, guardNone, none, false},
		{"omission of an unwatched never received resource", stTimed, guardOwed, evOmitted, vPlain, stTimed, guardOwed, none, false},
		{"removal deletes", stCached, guardNone, evRemoved, vPlain, stMissing, guardNone, resErr, false},
		{"removal of a guarded value deletes", stCached, guardRewatched, evRemoved, vPlain, stMissing, guardNone, resErr, false},
		{"removal of a raced value deletes, the entry still owed", stCached, guardOwedRaced, evRemoved, vPlain, stMissing, guardOwed, none, false},
		{"removal ignored", stCached, guardNone, evRemoved, vIgnore, stIgnored, guardNone, none, false},
		{"removal of a requested resource", stTimed, guardNone, evRemoved, vPlain, stMissing, guardNone, resErr, false},
		{"removal of a missing resource", stMissing, guardNone, evRemoved, vPlain, stMissing, guardNone, none, false},
		// TTL and persistence.
		{"TTL expiry", stCached, guardNone, evTTLExpired, vPlain, stExpired, guardNone, resErr, false},
		{"TTL expiry of nothing", stMissing, guardNone, evTTLExpired, vPlain, stMissing, guardNone, none, false},
		{"persisted value served", stTimed, guardNone, evPersisted, vPlain, stStale, guardNone, replay, false},
		{"persisted value after a transient timeout", stTimedOut, guardNone, evPersisted, vPlain, stStale, guardNone, replay, false},
		{"persisted value not served over a received one", stCached, guardNone, evPersisted, vPlain, stCached, guardNone, none, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := step(tc.s, tc.g, tc.ev, tc.v); got.to != tc.want || got.guard != tc.wantG {
				t.Errorf("the tables: %v/%v %v (%v) → %v/%v, want %v/%v", tc.s, tc.g, tc.ev, tc.v, got.to, got.guard, tc.want, tc.wantG)
			}
			got := runStep(t, tc.s, tc.g, tc.ev, tc.v)
			if got.state != tc.want || got.guard != tc.wantG || got.calls != tc.calls || got.dropped != tc.dropped {
				t.Errorf("step: %v, want %v/%v calls=%q dropped=%v", got, tc.want, tc.wantG, tc.calls, tc.dropped)
			}
		})
	}
}

// TestStateTable_Columns holds the status and cache state columns of
// stateTable against the rules they come from, written as code: gRFC A40's
// client_status and gRFC A78/A88's cache states, a NACK or an error of the
// server pending on a cached value taking precedence, in that order.
func TestStateTable_Columns(t *testing.T) {
	wantStatus := func(s state, amb ambient) v3adminpb.ClientResourceStatus {
		switch {
		case s.hasValue() && amb == ambNACK:
			return v3adminpb.ClientResourceStatus_NACKED
		case s.hasValue() && amb == ambServerError:
			return v3adminpb.ClientResourceStatus_RECEIVED_ERROR
		case s.hasValue():
			return v3adminpb.ClientResourceStatus_ACKED // an ignored deletion too
		case s == stMissing || s == stExpired:
			return v3adminpb.ClientResourceStatus_DOES_NOT_EXIST
		case s == stRejected:
			return v3adminpb.ClientResourceStatus_NACKED
		case s == stErrored:
			return v3adminpb.ClientResourceStatus_RECEIVED_ERROR
		case s == stTimedOut:
			return v3adminpb.ClientResourceStatus_TIMEOUT
		}
		return v3adminpb.ClientResourceStatus_REQUESTED
	}
	wantCache := func(s state, amb ambient) string {
		switch {
		case s.hasValue() && amb == ambNACK:
			return CacheStateNACKedButCached
		case s.hasValue() && amb == ambServerError:
			return CacheStateReceivedErrorButCached
		case s == stIgnored:
			return CacheStateDoesNotExistButCached
		case s.hasValue():
			return CacheStateACKed
		case s == stMissing || s == stExpired:
			return CacheStateDoesNotExist
		case s == stRejected:
			return CacheStateNACKed
		case s == stErrored:
			return CacheStateReceivedError
		case s == stTimedOut:
			return CacheStateTimeout
		}
		return CacheStateRequested
	}
	for s := range numStates {
		if got, want := s.hasValue(), valueSet.has(s); got != want {
			t.Errorf("%v: value %v, want %v", s, got, want)
		}
		for amb := range numAmbients {
			e := &entry{state: s}
			switch amb {
			case ambNACK:
				e.extLocked().nack = &nackState{err: errors.New("bad")}
			case ambServerError:
				e.extLocked().serverErr = &serverErrState{err: errors.New("bad")}
			}
			if got, want := e.status(), wantStatus(s, amb); got != want {
				t.Errorf("%v, ambient %d: status %v, want %v", s, amb, got, want)
			}
			if got, want := e.cacheState(), wantCache(s, amb); got != want {
				t.Errorf("%v, ambient %d: cache state %q, want %q", s, amb, got, want)
			}
		}
	}
}

// TestGuard_Properties checks, over every reachable pair, what
// promises: an omission never deletes a value a server sent while the
// guard may be answering a request without it, a re-watch never forgets
// an unsubscription written, and an unsubscription written while the
// resource is watched again always guards it.
func TestGuard_Properties(t *testing.T) {
	for _, p := range reachable() {
		s, g := state(p[0]), guard(p[1])
		if !guarded(s) {
			continue
		}
		guarding := g == guardRewatched || g == guardRaced || g == guardSkip || g == guardOwedRaced
		for _, v := range variantsOf(evOmitted) {
			if tr := step(s, g, evOmitted, v); guarding && (!tr.to.hasValue() || !tr.absorb) {
				t.Errorf("%v/%v: an omission (%v) was not absorbed: %v/%v", s, g, v, tr.to, tr.guard)
			}
		}
		if g == guardRaced || g == guardSkip || g == guardOwedRaced {
			if tr := step(s, g, evWatched, vPlain); tr.guard != guardRaced {
				t.Errorf("%v/%v: a re-watch forgot the unsubscription written: %v", s, g, tr.guard)
			}
		}
		if !g.owed() {
			if tr := step(s, g, evUnsubWritten, vPlain); tr.guard != guardRaced {
				t.Errorf("%v/%v: an unsubscription written while watched did not guard: %v", s, g, tr.guard)
			}
		}
	}
}

// guardModel is for a cached value, in three booleans rather than
// the six guards of guardRules. It assumes what the guard assumes: an
// unsubscription written while the resource is watched again is answered
// at most once, by one omission, before or after the next request naming
// it is written.
type guardModel struct {
	owed    bool // unwatched: its unsubscription is owed
	unnamed bool // watched again, no request naming it written since
	raced   bool // an unsubscription written while watched may be answered yet
}

// apply applies ev to m; gone reports the entry left the cache, deleted
// that an omission deleted the value.
func (m *guardModel) apply(ev event) (gone, deleted bool) {
	switch ev {
	case evWatched:
		m.owed, m.unnamed = false, true
	case evUnwatched:
		m.owed, m.unnamed = true, false
	case evKept:
		m.owed = false
	case evRequested:
		if !m.owed {
			m.unnamed = false
		}
	case evUnsubWritten:
		if m.owed {
			return true, false
		}
		m.unnamed, m.raced = true, true
	case evOmitted:
		switch {
		case m.owed && m.raced, !m.owed && m.unnamed:
		case !m.owed && m.raced:
			m.raced = false
		default:
			return false, true
		}
	case evValid:
		if !m.owed && !m.unnamed {
			m.raced = false
		}
	}
	return false, false
}

// guard returns the guard of guardRules that m is.
func (m guardModel) guard() guard {
	switch {
	case m.owed && m.raced:
		return guardOwedRaced
	case m.owed:
		return guardOwed
	case m.unnamed && m.raced:
		return guardRaced
	case m.unnamed:
		return guardRewatched
	case m.raced:
		return guardSkip
	}
	return guardNone
}

// TestGuard_Sequences holds the guard of a cached value against
// guardModel, over every sequence of up to 7 wire events that the client
// can make happen (a watcher comes when there is none, goes when there is
// one; a collection keeps only an owed entry; an unsubscription is
// written for an entry owed when its request was built), starting from a
// value just received and watched.
func TestGuard_Sequences(t *testing.T) {
	events := []event{evWatched, evUnwatched, evKept, evRequested, evUnsubWritten, evOmitted, evValid}
	type node struct {
		s    state
		g    guard
		m    guardModel
		path []event
	}
	n := 0
	var walk func(nd node, depth int)
	walk = func(nd node, depth int) {
		if depth == 0 {
			return
		}
		for _, ev := range events {
			switch {
			case ev == evWatched && !nd.m.owed, ev == evUnwatched && nd.m.owed, ev == evKept && !nd.m.owed:
				continue
			}
			n++
			path := append(append([]event(nil), nd.path...), ev)
			m := nd.m
			gone, deleted := m.apply(ev)
			tr := step(nd.s, nd.g, ev, vPlain)
			released := tr.fx&fxRelease != 0 && nd.m.owed && !tr.guard.owed() && !tr.absorb
			switch {
			case gone != released:
				t.Fatalf("%v: the entry left the cache: %v, the model says %v", path, released, gone)
			case deleted != (!tr.to.hasValue()):
				t.Fatalf("%v: the value was deleted: %v, the model says %v", path, !tr.to.hasValue(), deleted)
			case gone || deleted:
				continue
			case tr.guard != m.guard():
				t.Fatalf("%v: guard %v, the model says %v (%+v)", path, tr.guard, m.guard(), m)
			}
			walk(node{tr.to, tr.guard, m, path}, depth-1)
		}
	}
	walk(node{s: stCached, g: guardNone}, 7)
	t.Logf("%d steps", n)
}

// recordingWatcher records the names of the watcher methods called.
type recordingWatcher struct{ calls *[]string }

func (w recordingWatcher) ResourceChanged(_ *resources.Cluster, done func()) {
	*w.calls = append(*w.calls, "changed")
	done()
}

func (w recordingWatcher) ResourceError(_ error, done func()) {
	*w.calls = append(*w.calls, "resource_error")
	done()
}

func (w recordingWatcher) AmbientError(_ error, done func()) {
	*w.calls = append(*w.calls, "ambient_error")
	done()
}
