// SPDX-License-Identifier: Apache-2.0

package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestTransition_Table checks transitionLocked against the table in
// entry.go's file comment: for each phase and event (with the server
// features that change the outcome), the phase that follows, whether a
// value stays cached, and the watcher call made.
func TestTransition_Table(t *testing.T) {
	valid := testutil.MarshalAny(testutil.Cluster("c", "eds"))
	const (
		none    = ""
		changed = "changed"
		resErr  = "resource_error"
		ambErr  = "ambient_error"
	)
	for _, tc := range []struct {
		name      string
		from      phase
		value     bool // the entry has a cached value before the event
		ev        event
		features  []string
		code      codes.Code // evServerError
		transient bool       // evTimerFired: resource_timer_is_transient_error
		want      phase
		wantValue bool
		wantCall  string // the watcher calls, comma-separated
	}{
		{name: "re-watch of a cached value is guarded", from: phaseCached, value: true, ev: evWatched, want: phaseRewatched, wantValue: true},
		{name: "re-watch while guarded", from: phaseRewatched, value: true, ev: evWatched, want: phaseRewatched, wantValue: true},
		{name: "re-watch after a raced unsubscription keeps the guard", from: phaseUnsubRaced, value: true, ev: evWatched, want: phaseUnsubRaced, wantValue: true},
		{name: "re-watch while an omission is to skip guards again", from: phaseSkipOmit, value: true, ev: evWatched, want: phaseUnsubRaced, wantValue: true},
		{name: "re-watch of an ignored deletion keeps it", from: phaseIgnored, value: true, ev: evWatched, want: phaseIgnored, wantValue: true},
		{name: "watch of a stale value", from: phaseStale, value: true, ev: evWatched, want: phaseStale, wantValue: true},
		{name: "watch without a value", from: phaseRequested, ev: evWatched, want: phaseRequested},
		{name: "request starts the timer", from: phaseRequested, ev: evRequested, want: phaseTimed},
		{name: "request ends the guard", from: phaseRewatched, value: true, ev: evRequested, want: phaseCached, wantValue: true},
		{name: "request after a raced unsubscription", from: phaseUnsubRaced, value: true, ev: evRequested, want: phaseSkipOmit, wantValue: true},
		{name: "unsubscription written while re-watched", from: phaseRewatched, value: true, ev: evUnsubWritten, want: phaseUnsubRaced, wantValue: true},
		{name: "stream end stops the timer", from: phaseTimed, ev: evStreamEnded, want: phaseRequested},
		{name: "timer fires", from: phaseTimed, ev: evTimerFired, want: phaseMissing, wantCall: resErr},
		{name: "timer fires, transient", from: phaseTimed, ev: evTimerFired, transient: true, want: phaseTimedOut, wantCall: resErr},
		{name: "persisted value after a transient timeout", from: phaseTimedOut, ev: evPersisted, want: phaseStale, wantValue: true, wantCall: changed + "," + ambErr},
		{name: "timer of a received resource", from: phaseCached, value: true, ev: evTimerFired, want: phaseCached, wantValue: true},
		{name: "first value", from: phaseTimed, ev: evValid, want: phaseCached, wantValue: true, wantCall: changed},
		{name: "value while guarded keeps the guard", from: phaseRewatched, value: true, ev: evValid, want: phaseRewatched, wantValue: true, wantCall: changed},
		{name: "value clears the skip", from: phaseSkipOmit, value: true, ev: evValid, want: phaseCached, wantValue: true, wantCall: changed},
		{name: "value after an ignored deletion", from: phaseIgnored, value: true, ev: evValid, want: phaseCached, wantValue: true, wantCall: changed},
		{name: "persisted value replaced", from: phaseStale, value: true, ev: evValid, want: phaseCached, wantValue: true, wantCall: changed},
		{name: "value after deletion", from: phaseMissing, ev: evValid, want: phaseCached, wantValue: true, wantCall: changed},
		{name: "invalid first version", from: phaseTimed, ev: evInvalid, want: phaseRejected, wantCall: resErr},
		{name: "invalid update keeps the value", from: phaseCached, value: true, ev: evInvalid, want: phaseCached, wantValue: true, wantCall: ambErr},
		{name: "invalid update, fail_on_data_errors", from: phaseCached, value: true, ev: evInvalid, features: []string{bootstrap.FeatureFailOnDataErrors}, want: phaseRejected, wantCall: resErr},
		{name: "server error without a value", from: phaseTimed, ev: evServerError, code: codes.PermissionDenied, want: phaseErrored, wantCall: resErr},
		{name: "server NOT_FOUND without a value", from: phaseTimed, ev: evServerError, code: codes.NotFound, want: phaseMissing, wantCall: resErr},
		{name: "server error keeps the value", from: phaseCached, value: true, ev: evServerError, code: codes.PermissionDenied, want: phaseCached, wantValue: true, wantCall: ambErr},
		{name: "server NOT_FOUND, fail_on_data_errors", from: phaseCached, value: true, ev: evServerError, code: codes.NotFound, features: []string{bootstrap.FeatureFailOnDataErrors}, want: phaseMissing, wantCall: resErr},
		{name: "omission deletes", from: phaseCached, value: true, ev: evOmitted, want: phaseMissing, wantCall: resErr},
		{name: "omission deletes a stale value", from: phaseStale, value: true, ev: evOmitted, want: phaseMissing, wantCall: resErr},
		{name: "omission ignored", from: phaseCached, value: true, ev: evOmitted, features: []string{bootstrap.FeatureIgnoreResourceDeletion}, want: phaseIgnored, wantValue: true},
		{name: "omission while guarded", from: phaseRewatched, value: true, ev: evOmitted, want: phaseRewatched, wantValue: true},
		{name: "omission while raced", from: phaseUnsubRaced, value: true, ev: evOmitted, want: phaseUnsubRaced, wantValue: true},
		{name: "omission skipped once", from: phaseSkipOmit, value: true, ev: evOmitted, want: phaseCached, wantValue: true},
		{name: "omission of a never received resource", from: phaseTimed, ev: evOmitted, want: phaseTimed},
		{name: "removal deletes", from: phaseCached, value: true, ev: evRemoved, want: phaseMissing, wantCall: resErr},
		{name: "removal of a guarded value deletes", from: phaseRewatched, value: true, ev: evRemoved, want: phaseMissing, wantCall: resErr},
		{name: "removal ignored", from: phaseCached, value: true, ev: evRemoved, features: []string{bootstrap.FeatureIgnoreResourceDeletion}, want: phaseIgnored, wantValue: true},
		{name: "removal of a requested resource", from: phaseTimed, ev: evRemoved, want: phaseMissing, wantCall: resErr},
		{name: "removal of a missing resource", from: phaseMissing, ev: evRemoved, want: phaseMissing},
		{name: "TTL expiry", from: phaseCached, value: true, ev: evTTLExpired, want: phaseExpired, wantCall: resErr},
		{name: "TTL expiry of nothing", from: phaseMissing, ev: evTTLExpired, want: phaseMissing},
		{name: "persisted value served", from: phaseTimed, ev: evPersisted, want: phaseStale, wantValue: true, wantCall: changed + "," + ambErr},
		{name: "persisted value not served over a received one", from: phaseCached, value: true, ev: evPersisted, want: phaseCached, wantValue: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &bootstrap.ServerConfig{ServerURI: "s", ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}, ServerFeatures: tc.features}
			c, err := New(&bootstrap.Config{Servers: []*bootstrap.ServerConfig{sc}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.mu.Lock()
			defer c.mu.Unlock()
			a := c.authorityOfLocked(c.cfg.Servers)
			tcache := a.typeLocked(resources.ClusterType)
			e := a.newEntryLocked(tcache, "c", tc.from)
			var calls []string
			e.watchers = []*watchEntry{newWatchEntry(recordingWatcher{&calls})}
			e.watchers[0].target.Store(e)
			if tc.value {
				_, v, err := resources.ClusterType.Decode(valid)
				if err != nil {
					t.Fatal(err)
				}
				e.value, e.raw, e.from = v, string(valid.GetValue()), &sc.ServerURI
				if tc.ev == evValid {
					e.raw = "other bytes" // a different value, unless the table says otherwise
				}
			}
			var et *expiryTimer
			in := &input{
				ch: &channel{logger: c.logger}, sc: sc, now: time.Now(), et: &et, timeout: time.Second,
				version: "2", err: errors.New("bad"), reason: "gone", transient: tc.transient,
				status: &statuspb.Status{Code: int32(tc.code), Message: "server says"},
				rec:    &PersistedResource{ServerURI: "s", TypeURL: resources.ClusterTypeURL, Name: "c", Version: "1", Resource: valid},
			}
			if tc.ev == evValid || tc.ev == evPersisted {
				_, in.value, _ = resources.ClusterType.Decode(valid)
				in.raw = valid.GetValue()
			}
			c.transitionLocked(e, tc.ev, in, nil)
			c.startExpiryLocked(et, sc)
			if e.phase != tc.want {
				t.Errorf("phase %v, want %v", e.phase, tc.want)
			}
			if (e.value != nil) != tc.wantValue || e.phase.hasValue() != tc.wantValue {
				t.Errorf("value cached %v (phase says %v), want %v", e.value != nil, e.phase.hasValue(), tc.wantValue)
			}
			c.mu.Unlock()
			flushed := make(chan struct{})
			c.serializer.Schedule(func() { close(flushed) })
			<-flushed
			c.mu.Lock()
			if got := strings.Join(calls, ","); got != tc.wantCall {
				t.Errorf("watcher calls %q, want %q", got, tc.wantCall)
			}
			e.stopTimerLocked()
			e.stopTTLLocked()
		})
	}
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
