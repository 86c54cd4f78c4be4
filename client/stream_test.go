// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestStream_FailureBeforeResponse_ResourceError checks for an
// uncached resource: a stream that fails before any response is reported
// as a connection error through ResourceError, naming the server.
func TestStream_FailureBeforeResponse_ResourceError(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.RejectStreams(errors.New("no streams today"))
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.wantKind(ctx, t, resourceError, client.ErrConnection)
	if !strings.Contains(e.err.Error(), ms.Address()) {
		t.Fatalf("error %q does not name the server %s", e.err, ms.Address())
	}
}

// TestStream_FailureBeforeResponse_AmbientErrorWhenCached checks for
// a cached resource: the connection error comes through AmbientError.
func TestStream_FailureBeforeResponse_AmbientErrorWhenCached(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.wantKind(ctx, t, changed, nil)

	ms.RejectStreams(errors.New("going away"))
	ms.BreakStreams()
	w.wantKind(ctx, t, ambientError, client.ErrConnection)
	ms.RejectStreams(nil)
	// The value is still cached and no ResourceError came.
	w2 := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w2)()
	w2.wantKind(ctx, t, changed, nil)
}

// TestStream_FailureAfterResponse_Silent checks: a stream that had
// responses and then fails is replaced without telling watchers.
func TestStream_FailureAfterResponse_Silent(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.wantKind(ctx, t, changed, nil)
	waitForAllACKed(t, ms, 1)

	ms.BreakStreams()
	waitForAllACKed(t, ms, 2)
	w.wantNone(t, defaultTestShortTimeout)
}

// TestStream_Backoff checks in fake time: failed stream attempts are
// spaced 1 s × 1.6ⁿ ± 20 %, capped at 120 s. A stream that accepted a
// response starts the backoff over, as grpc-go does: when it fails, the
// next attempt is immediate, whatever the step had reached, and the
// attempts after a failure of that one start at 1 s again.
func TestStream_Backoff(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))

		ms.RejectStreams(errors.New("down"))
		w := newRecorder[*resources.Listener]()
		defer client.Watch(c, resources.ListenerType, "svc", w)()
		const attempts = 14
		for len(rb.streamsOpened()) < attempts {
			w.wantKind(ctx, t, resourceError, client.ErrConnection)
		}
		opened := rb.streamsOpened()
		want := time.Second
		for i := 1; i < attempts; i++ {
			got := opened[i].Sub(opened[i-1])
			lo, hi := time.Duration(float64(want)*0.8), time.Duration(float64(want)*1.2)
			if got < lo || got > hi {
				t.Errorf("attempt %d came %v after the previous one, want within [%v, %v]", i, got, lo, hi)
			}
			want = min(time.Duration(float64(want)*1.6), 120*time.Second)
		}

		// Recovery, then a failure right after the response: the stream
		// accepted it, so the next attempt is immediate, although the
		// backoff had reached its cap.
		ms.RejectStreams(nil)
		for {
			if e := w.next(ctx, t); e.kind == changed {
				break
			}
		}
		waitForAllACKed(t, ms, 1)
		n := len(rb.streamsOpened())
		ackedOn := func(after int64) {
			t.Helper()
			if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID > after && r.Req.GetResponseNonce() != "" }); err != nil {
				t.Fatal(err)
			}
		}
		// The stream of the last request, read before the break: the next
		// stream may be open, and have sent requests, before BreakStreams
		// returns.
		cur := ms.Requests()[len(ms.Requests())-1].StreamID
		broke := time.Now()
		ms.BreakStreams()
		ackedOn(cur)
		if got := rb.streamsOpened()[n].Sub(broke); got != 0 {
			t.Errorf("reconnect after a stream that accepted a response took %v, want immediate", got)
		}

		// That stream fails too, with the server down: the next attempt is
		// immediate, and the one after it comes after 1 s, the first step.
		n = len(rb.streamsOpened())
		ms.RejectStreams(errors.New("down again"))
		ms.BreakStreams()
		for len(rb.streamsOpened()) < n+2 {
			w.next(ctx, t)
		}
		opened = rb.streamsOpened()
		if got := opened[n+1].Sub(opened[n]); got < 800*time.Millisecond || got > 1200*time.Millisecond {
			t.Errorf("first backoff after recovery = %v, want 1s ± 20%%", got)
		}
	})
}

// TestStream_HealthyStreamEndsSilently checks what makes a stream healthy
// a stream whose server holds it open without sending anything,
// as a delta server to which the client is up to date rightly does (its
// initial_resource_versions are current), is healthy once it has been
// open for 1 s after its first request, the client awaiting nothing on it
// (the watched resource has this server's value; see
// TestStream_SilentServerAwaitedFails for the other case). When the
// server ends it (max
// connection age, a rolling restart), the watchers hear nothing and the
// next stream starts at once, however often that happens: the backoff
// does not grow against a healthy server. A stream that ends sooner is a
// failure as before. The same rule for SotW and delta. On the
// old code every such delta stream was a connection failure: ErrConnection
// to the watcher, and reconnections after a growing backoff.
func TestStream_HealthyStreamEndsSilently(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ctx := testContext(t)
			// A scripted server: it sends nothing on its own, as a delta
			// server to which the client is up to date.
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
			rb := newRecordingBuilder(ms.TransportBuilder())
			c := newClient(t, ms, testutil.BootstrapOptions{}, append(opts, client.WithTransportBuilder(rb))...)
			w := newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", w)()
			synctest.Wait()
			var err error
			if delta {
				_, err = ms.SendDeltaResponse(ctx, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "eds")}))
			} else {
				_, err = ms.SendResponse(ctx, discoveryResponse(cds, "1", testutil.Cluster("a", "eds")))
			}
			if err != nil {
				t.Fatal(err)
			}
			w.wantKind(ctx, t, changed, nil)
			synctest.Wait()
			ms.BreakStreams()
			synctest.Wait()

			const life = 5 * time.Second
			for i := range 6 {
				time.Sleep(life)
				broken := time.Now()
				ms.BreakStreams()
				synctest.Wait()
				opened := rb.streamsOpened()
				if last := opened[len(opened)-1]; last.Before(broken) || last.Sub(broken) > 10*time.Millisecond {
					t.Fatalf("break %d at %v: the last stream opened at %v, want a new one at once", i, broken, last)
				}
				w.wantNone(t, 0)
			}

			// A stream that ends before it is healthy is a failure.
			time.Sleep(500 * time.Millisecond)
			ms.BreakStreams()
			w.wantKind(ctx, t, ambientError, client.ErrConnection)
		})
	})
}

// TestStream_SilentServerAwaitedFails checks the other side of: a
// stream that stays open for seconds is not healthy while the client
// awaits something on it (a resource never received), as grpc-go and
// Envoy count it: a server, or a proxy in front of it, that holds each
// stream 5 s without answering and resets it is a connectivity failure
// each time, with the backoff growing, and with a second server
// in the list the client falls back to it. SotW and delta.
func TestStream_SilentServerAwaitedFails(t *testing.T) {
	const life = 5 * time.Second
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		t.Run("one server", func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ctx := testContext(t)
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
				rb := newRecordingBuilder(ms.TransportBuilder())
				c := newClient(t, ms, testutil.BootstrapOptions{}, append(opts, client.WithTransportBuilder(rb))...)
				w := newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, "a", w)()
				var broken []time.Time
				for range 4 {
					synctest.Wait()
					time.Sleep(life)
					broken = append(broken, time.Now())
					ms.BreakStreams()
					w.wantKind(ctx, t, resourceError, client.ErrConnection)
				}
				opened := rb.streamsOpened()
				for i := 1; i < len(broken); i++ {
					if gap := opened[i].Sub(broken[i-1]); gap < 500*time.Millisecond {
						t.Errorf("stream %d opened %v after the previous one was reset, want the backoff (≥ 0.8 s)", i+1, gap)
					}
				}
			})
		})
		t.Run("fallback", func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ctx := testContext(t)
				primary := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
				fallback := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
				fallback.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "from-fallback")}})
				features := ""
				if delta {
					features = `, "server_features": ["delta_ads"]`
				}
				cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{
					"xds_servers": [
						{"server_uri": "primary", "channel_creds": [{"type": "insecure"}]%[1]s},
						{"server_uri": "fallback", "channel_creds": [{"type": "insecure"}]%[1]s}
					],
					"node": {"id": "test-node"}
				}`, features)))
				if err != nil {
					t.Fatal(err)
				}
				c, err := client.New(cfg, client.WithTransportBuilder(uriBuilder{"primary": primary.TransportBuilder(), "fallback": fallback.TransportBuilder()}))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				w := newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, "a", w)()
				synctest.Wait()
				time.Sleep(life)
				primary.BreakStreams()
				if got := w.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "from-fallback" {
					t.Fatalf("got %+v, want the fallback server's value", got)
				}
			})
		})
	})
}
