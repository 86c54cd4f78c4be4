// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// FuzzStreamStateMachineSotW and FuzzStreamStateMachineDelta drive the
// client's stream state machine over the in-memory management server in a
// testing/synctest bubble, with an arbitrary sequence of operations (two
// bytes each): Watch and cancel of four Cluster names, WatchAll and its
// cancel, Cluster responses (any subset of the names, valid or not, with
// a duplicate, deletions), a response of a type never requested
// (Listener), stream breaks and 5 s steps of fake time. After each
// operation they check:
//
//   - no panic, and no deadlock (Close at the end returns; a stuck bubble
//     fails the test);
//   - every response of a type requested on its stream gets exactly one
//     ACK or NACK carrying its nonce; a SotW ACK carries the response's
//     version, a NACK the version last ACKed; a response of
//     a type not requested gets none;
//   - every named watcher's last value is the cached one (Dump): the
//     bytes of the last value delivered, or no cached value after a
//     ResourceError or before any value.
func FuzzStreamStateMachineSotW(f *testing.F)  { fuzzStreamStateMachine(f, false) }
func FuzzStreamStateMachineDelta(f *testing.F) { fuzzStreamStateMachine(f, true) }

func fuzzStreamStateMachine(f *testing.F, delta bool) {
	f.Add([]byte{0, 0, 0, 1, 2, 0x03, 2, 0x13, 3, 0, 2, 0x07, 1, 0, 6, 0})
	f.Add([]byte{0, 0, 0, 1, 2, 0x03, 2, 0x83, 4, 0, 2, 0x0f, 5, 0, 1, 0, 0, 0, 2, 0x01})
	f.Add([]byte{4, 0, 2, 0x0f, 0, 2, 4, 0, 2, 0x04, 1, 0, 0, 3, 3, 0, 2, 0x28})
	f.Add([]byte{4, 0, 0, 1, 2, 0x33, 2, 0x40, 6, 0, 6, 0, 6, 0, 2, 0xc1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 60 {
			return
		}
		synctest.Test(t, func(t *testing.T) { runStreamFuzz(t, delta, ops) })
	})
}

var fuzzNames = []string{"a", "b", "c", "d"}

type fuzzWatch struct {
	name   string
	rec    *recorder[*resources.Cluster]
	cancel func()
	last   *resources.Cluster // the value in use: nil before any and after a ResourceError
}

func runStreamFuzz(t *testing.T, delta bool, ops []byte) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
	var opts []client.Option
	if delta {
		opts = append(opts, client.WithDelta())
	}
	c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
	var (
		watches    []*fuzzWatch
		all        func() // cancels the WatchAll, if any
		lastACKed  string // SotW: the version last ACKed on the current channel
		responseID int
	)
	active := func() bool { return len(watches) > 0 || all != nil }
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i]%7, ops[i+1]
		switch op {
		case 0:
			w := &fuzzWatch{name: fuzzNames[arg%4], rec: newRecorder[*resources.Cluster]()}
			w.cancel = client.Watch(c, resources.ClusterType, w.name, w.rec)
			watches = append(watches, w)
		case 1:
			if len(watches) == 0 {
				continue
			}
			j := int(arg) % len(watches)
			watches[j].cancel()
			watches = append(watches[:j], watches[j+1:]...)
		case 2, 5:
			if !active() {
				continue // no stream: nothing to answer
			}
			responseID++
			typeURL := resources.ClusterTypeURL
			if op == 5 {
				typeURL = resources.ListenerTypeURL
			}
			// Let a stream come up (fake time: the backoff) and send its
			// first requests, so that what it asked for is known.
			for k := 0; k < 200 && ms.OpenStreams() == 0; k++ {
				time.Sleep(time.Second)
				synctest.Wait()
			}
			before := len(ms.Requests())
			nonce, version, ok := sendFuzzResponse(t, ms, delta, typeURL, arg, responseID)
			if !ok {
				continue
			}
			synctest.Wait()
			lastACKed = checkAnswer(t, ms, delta, typeURL, nonce, version, lastACKed, before)
		case 3:
			ms.BreakStreams()
		case 4:
			if all != nil {
				all()
				all = nil
			} else {
				all = client.WatchAll(c, resources.ClusterType, newRecorder[*resources.Cluster]())
			}
		case 6:
			time.Sleep(5 * time.Second)
		}
		if !active() {
			lastACKed = "" // the channel is retired: a new one starts afresh
		}
		synctest.Wait()
		checkWatchers(t, c, watches)
	}
	for _, w := range watches {
		w.cancel()
	}
	if all != nil {
		all()
	}
	c.Close()
}

// sendFuzzResponse sends the response arg describes on the newest stream:
// bits 0-3 pick the names, bit 4 makes the first one invalid, bit 5
// repeats the first, bits 6-7 pick the version; in delta, bit 7 also
// removes the names not picked.
func sendFuzzResponse(t *testing.T, ms *testutil.ManagementServer, delta bool, typeURL string, arg byte, id int) (nonce, version string, ok bool) {
	version = fmt.Sprint(arg >> 6)
	var msgs []proto.Message
	var names []string
	for k, n := range fuzzNames {
		if arg&(1<<k) == 0 {
			continue
		}
		names = append(names, n)
		cl := testutil.Cluster(n, "eds-"+version)
		if len(msgs) == 0 && arg&0x10 != 0 {
			cl = invalidCluster(n)
		}
		msgs = append(msgs, cl)
	}
	if len(msgs) > 0 && arg&0x20 != 0 {
		msgs = append(msgs, msgs[0])
		names = append(names, names[0])
	}
	if typeURL == resources.ListenerTypeURL {
		msgs, names = []proto.Message{testutil.Listener("l", "r")}, []string{"l"}
	}
	// Fake time: waiting for a stream advances the clock (backoff).
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var err error
	if delta {
		var removed []string
		var rs []deltaResource
		for k, m := range msgs {
			rs = append(rs, deltaResource{name: names[k], version: fmt.Sprintf("%s-%d", version, id%3), msg: m})
		}
		if arg&0x80 != 0 && typeURL == resources.ClusterTypeURL {
			for k, n := range fuzzNames {
				if arg&(1<<k) == 0 {
					removed = append(removed, n)
				}
			}
		}
		nonce, err = ms.SendDeltaResponse(ctx, deltaResponse(typeURL, removed, rs...))
	} else {
		nonce, err = ms.SendResponse(ctx, discoveryResponse(typeURL, version, msgs...))
	}
	return nonce, version, err == nil
}

// checkAnswer checks the answers to the response of nonce, sent after the
// first before requests, and returns the version last ACKed.
func checkAnswer(t *testing.T, ms *testutil.ManagementServer, delta bool, typeURL, nonce, version, lastACKed string, before int) string {
	t.Helper()
	reqs := ms.Requests()
	var stream int64
	for _, r := range reqs {
		stream = max(stream, r.StreamID)
	}
	requested := false
	for _, r := range reqs[:before] {
		if r.StreamID == stream && (r.Req.GetTypeUrl() == typeURL || r.Delta.GetTypeUrl() == typeURL) {
			requested = true
		}
	}
	var answers []*testutil.Request
	for _, r := range reqs[before:] {
		if r.Req.GetResponseNonce() == nonce || r.Delta.GetResponseNonce() == nonce {
			answers = append(answers, r)
		}
	}
	want := 0
	if requested {
		want = 1
	}
	if len(answers) != want {
		t.Fatalf("response %s of %s on stream %d (type requested: %v) got %d answers, want %d: %v", nonce, typeURL, stream, requested, len(answers), want, answers)
	}
	if want == 0 || delta {
		return lastACKed
	}
	a := answers[0].Req
	switch {
	case a.GetTypeUrl() != typeURL:
		t.Fatalf("answer %v has the wrong type", a)
	case a.GetErrorDetail() == nil && a.GetVersionInfo() != version:
		t.Fatalf("ACK %v, want version %q (R-7.2)", a, version)
	case a.GetErrorDetail() != nil && a.GetVersionInfo() != lastACKed:
		t.Fatalf("NACK %v, want the version last ACKed %q (R-7.3)", a, lastACKed)
	case a.GetErrorDetail() == nil:
		return version
	}
	return lastACKed
}

// checkWatchers checks that each watcher's last value is the cached one.
func checkWatchers(t *testing.T, c *client.Client, watches []*fuzzWatch) {
	t.Helper()
	for _, w := range watches {
		for _, e := range drain(w.rec) {
			switch e.kind {
			case changed:
				w.last = e.value
			case resourceError:
				w.last = nil
			}
		}
		got := w.last
		g := dumpEntry(c, cds, w.name)
		switch {
		case got == nil && g.GetXdsConfig() != nil:
			t.Fatalf("watcher of %s has no value, the cache has %v", w.name, g)
		case got != nil && (g.GetXdsConfig() == nil || !bytes.Equal(got.Raw().GetValue(), g.GetXdsConfig().GetValue())):
			t.Fatalf("watcher of %s has %v, the cache %v", w.name, got, g)
		}
	}
}

// drain returns the events queued on r.
func drain[T any](r *recorder[T]) []event[T] {
	var out []event[T]
	for {
		select {
		case e := <-r.events:
			out = append(out, e)
		default:
			return out
		}
	}
}
