// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// Lifecycle tests: watches cancelled and made again, streams
// closed when nothing is watched, watches after Close.

// rewatchCycles is how many cancel/re-watch cycles the tests run in a row;
// each must deliver the resource within rewatchDeadline of fake time in a
// synctest bubble (the exact target), and within rewatchRealDeadline of
// real time over gRPC, where a loaded CI machine (2 cores, -race, test
// packages in parallel) can stall a round trip; the largest real delay
// is logged.
const (
	rewatchCycles       = 30
	rewatchDeadline     = time.Second
	rewatchRealDeadline = 5 * time.Second
)

// realTime marks the tests that run over gRPC in real time.
var realTime sync.Map // *testing.T → true

// forEachSetup runs f for SotW and delta, over the in-memory server in a
// testing/synctest bubble and over gRPC; ms serves res from snapshots.
func forEachSetup(t *testing.T, res testutil.Resources, f func(t *testing.T, ms *testutil.ManagementServer, c *client.Client)) {
	for _, proto := range []string{"sotw", "delta"} {
		var opts []client.Option
		if proto == "delta" {
			opts = append(opts, client.WithDelta())
		}
		t.Run(proto+"/in-memory", func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
				ms.Update("", res)
				f(t, ms, newClient(t, ms, testutil.BootstrapOptions{}, opts...))
			})
		})
		t.Run(proto+"/grpc", func(t *testing.T) {
			realTime.Store(t, true)
			t.Cleanup(func() { realTime.Delete(t) })
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
			ms.Update("", res)
			f(t, ms, newClient(t, ms, testutil.BootstrapOptions{}, opts...))
		})
	}
}

// wantValueWithin waits up to rewatchDeadline (rewatchRealDeadline over
// gRPC) for w's next event, which must be ResourceChanged.
func wantValueWithin[T any](t *testing.T, w *recorder[T], what string) T {
	t.Helper()
	deadline := rewatchDeadline
	if _, ok := realTime.Load(t); ok {
		deadline = rewatchRealDeadline
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	select {
	case e := <-w.events:
		if e.kind != changed {
			t.Fatalf("%s: event = %v, want the value", what, e)
		}
		if d := time.Since(start); d > rewatchDeadline/2 {
			t.Logf("%s: the value took %v", what, d)
		}
		return e.value
	case <-ctx.Done():
		t.Fatalf("%s: no value within %v", what, deadline)
	}
	panic("unreachable")
}

// TestLifecycle_RewatchCycles checks: the last watch of a resource
// cancelled and a new watch made at once, 30 times in a row, gets the
// value each time within 1 s: from the cache while the unsubscription is
// not written, from the server once it was (a request that adds the name
// back is a new subscription). With another watch on the stream (the
// stream stays) and without (the stream closes and a new one opens,
// SotW and delta, in memory and over gRPC. On the old code SotW
// lost the resource (a false does-not-exist 15 s later).
func TestLifecycle_RewatchCycles(t *testing.T) {
	res := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("keep", "r")},
		Clusters:  namedClusters("a", "b"),
	}
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("other-watch=%v", other), func(t *testing.T) {
			forEachSetup(t, res, func(t *testing.T, ms *testutil.ManagementServer, c *client.Client) {
				if other {
					wk := newRecorder[*resources.Listener]()
					defer client.Watch(c, resources.ListenerType, "keep", wk)()
					wantValueWithin(t, wk, "keep")
				}
				w := newRecorder[*resources.Cluster]()
				cancel := client.Watch(c, resources.ClusterType, "a", w)
				wantValueWithin(t, w, "first watch")
				for i := range rewatchCycles {
					cancel()
					w = newRecorder[*resources.Cluster]()
					cancel = client.Watch(c, resources.ClusterType, "a", w)
					if v := wantValueWithin(t, w, fmt.Sprintf("re-watch %d", i)); v.Name != "a" {
						t.Fatalf("re-watch %d got %q", i, v.Name)
					}
				}
				cancel()
			})
		})
	}
}

// TestLifecycle_RewatchAfterUnsubscriptionWritten checks the other side of
// once the request without the name is written, the entry is gone
// (Dump), and a new watch is a new subscription that the server answers.
// The Listener watch keeps the stream. SotW and delta, in memory.
func TestLifecycle_RewatchAfterUnsubscriptionWritten(t *testing.T) {
	res := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("keep", "r")},
		Clusters:  namedClusters("a", "b"),
	}
	forEachProtocol(t, func(t *testing.T, _ bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
			ms.Update("", res)
			c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
			defer client.Watch(c, resources.ListenerType, "keep", newRecorder[*resources.Listener]())()
			for i := range rewatchCycles {
				w := newRecorder[*resources.Cluster]()
				cancel := client.Watch(c, resources.ClusterType, "a", w)
				wantValueWithin(t, w, fmt.Sprintf("watch %d", i))
				cancel()
				synctest.Wait() // the unsubscription is written
				if g := dumpEntry(c, cds, "a"); g != nil {
					t.Fatalf("cycle %d: CSDS entry of a after its unsubscription was written = %v, want none", i, g)
				}
			}
		})
	})
}

// TestLifecycle_RewatchBeforeUnsubscriptionWritten pins the case
// down: sends are held, so the unsubscription cannot be written before the
// re-watch; the re-watch gets the cached value at once, and the server,
// which never heard of the unsubscription, is not asked again.
func TestLifecycle_RewatchBeforeUnsubscriptionWritten(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, _ bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
			ms.Update("", testutil.Resources{Clusters: namedClusters("a", "b")})
			rb := newRecordingBuilder(ms.TransportBuilder())
			c := newClient(t, ms, testutil.BootstrapOptions{}, append(opts, client.WithTransportBuilder(rb))...)
			defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
			w := newRecorder[*resources.Cluster]()
			cancel := client.Watch(c, resources.ClusterType, "a", w)
			wantValueWithin(t, w, "first watch")
			synctest.Wait()

			rb.hold()
			cancel()
			<-rb.sending // the unsubscription waits at the gate
			w = newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", w)()
			wantValueWithin(t, w, "re-watch") // from the cache, with sends held
			rb.release()
			synctest.Wait()
			if g := dumpEntry(c, cds, "a"); g.GetXdsConfig() == nil {
				t.Fatalf("CSDS entry of a = %v, want its value", g)
			}
			w.wantNone(t, time.Minute) // no does-not-exist
		})
	})
}

// TestLifecycle_WatchAllCycles checks for the wildcard: the last
// WatchAll cancelled and made again at once, 30 times, gets every
// resource each time within 1 s. SotW and delta, in memory and over gRPC.
// On the old code SotW got nothing.
func TestLifecycle_WatchAllCycles(t *testing.T) {
	forEachSetup(t, testutil.Resources{Clusters: namedClusters("a", "b")}, func(t *testing.T, ms *testutil.ManagementServer, c *client.Client) {
		cancel := func() {}
		for i := range rewatchCycles {
			cancel()
			w := newRecorder[*resources.Cluster]()
			cancel = client.WatchAll(c, resources.ClusterType, w)
			got := map[string]bool{}
			for range 2 {
				got[wantValueWithin(t, w, fmt.Sprintf("WatchAll %d", i)).Name] = true
			}
			if !got["a"] || !got["b"] {
				t.Fatalf("WatchAll %d got %v, want a and b", i, got)
			}
		}
		cancel()
	})
}

// TestLifecycle_LastWatchClosesStream checks: cancelling the last
// watch on a management server closes its ADS stream; the next watch opens
// a new one whose first request carries no version (a new subscription)
// and gets the value; with a watch left, the stream stays (R-10.1: the
// cache survives). SotW and delta.
func TestLifecycle_LastWatchClosesStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
			ms.Update("", testutil.Resources{Version: "3", Clusters: namedClusters("a", "b")})
			c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
			w := newRecorder[*resources.Cluster]()
			cancelA := client.Watch(c, resources.ClusterType, "a", w)
			wb := newRecorder[*resources.Cluster]()
			cancelB := client.Watch(c, resources.ClusterType, "b", wb)
			w.wantKind(ctx, t, changed, nil)
			wb.wantKind(ctx, t, changed, nil)
			cancelA()
			synctest.Wait()
			if n := ms.OpenStreams(); n != 1 {
				t.Fatalf("open streams with a watch left = %d, want 1", n)
			}
			cancelB()
			if err := ms.WaitForOpenStreams(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if n := len(c.Dump().GetGenericXdsConfigs()); n != 0 {
				t.Fatalf("CSDS has %d entries after the last watch, want 0", n)
			}

			w = newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", w)()
			w.wantKind(ctx, t, changed, nil)
			r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 })
			if err != nil {
				t.Fatal(err)
			}
			if delta {
				if len(r.Delta.GetInitialResourceVersions()) != 0 {
					t.Fatalf("first request of the new stream = %v, want no initial versions", r.Delta)
				}
			} else if r.Req.GetVersionInfo() != "" {
				t.Fatalf("first request of the new stream = %v, want an empty version", r.Req)
			}
		})
	})
}

// TestLifecycle_WatchAfterClose checks that Watch, WatchAll and
// WatchVersioned after Close are not silent: the watcher gets one
// ResourceError wrapping ErrClosed within a second (in fake time).
func TestLifecycle_WatchAfterClose(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		c := newClient(t, ms, testutil.BootstrapOptions{})
		c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		w := newRecorder[*resources.Cluster]()
		client.Watch(c, resources.ClusterType, "a", w)()
		w.wantKind(ctx, t, resourceError, client.ErrClosed)
		wa := newRecorder[*resources.Cluster]()
		client.WatchAll(c, resources.ClusterType, wa)()
		wa.wantKind(ctx, t, resourceError, client.ErrClosed)
		wv := newRecorder[client.Versioned[*resources.Cluster]]()
		client.WatchVersioned(c, resources.ClusterType, "a", wv)()
		e := wv.wantKind(ctx, t, resourceError, client.ErrClosed)
		var re *client.ResourceError
		if !errors.As(e.err, &re) || re.Name != "a" {
			t.Fatalf("error = %v, want a *ResourceError naming a", e.err)
		}
		w.wantNone(t, time.Minute)
	})
}

// blockingWatcher calls done, then blocks in ResourceChanged until
// release is closed, the first time only: it holds the client's callback
// goroutine without holding flow control.
type blockingWatcher[T any] struct {
	entered, release chan struct{}
}

func (w *blockingWatcher[T]) ResourceChanged(_ T, done func()) {
	done()
	select {
	case <-w.entered:
		return
	default:
	}
	close(w.entered)
	<-w.release
}
func (w *blockingWatcher[T]) ResourceError(_ error, done func()) { done() }
func (w *blockingWatcher[T]) AmbientError(_ error, done func())  { done() }

// TestLifecycle_VersionTravelsWithValue checks that WatchVersioned pairs
// each value with the version it came with: a new watcher's replay of the
// cached value (version 1), queued while the callback goroutine is busy,
// still says version 1 when it runs after version 2 was applied to the
// cache; then version 2 comes with its own value. Reading the version at
// callback time (ResourceVersion, as depmgr did) pairs the old value with
// version 2.
func TestLifecycle_VersionTravelsWithValue(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Version: "1", Clusters: namedClusters("a")})
		c := newClient(t, ms, testutil.BootstrapOptions{})
		bw := &blockingWatcher[*resources.Cluster]{entered: make(chan struct{}), release: make(chan struct{})}
		defer client.Watch(c, resources.ClusterType, "a", bw)()
		<-bw.entered

		wv := newRecorder[client.Versioned[*resources.Cluster]]()
		defer client.WatchVersioned(c, resources.ClusterType, "a", wv)()
		ms.Update("", testutil.Resources{Version: "2", Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "a-eds-2")}})
		synctest.Wait() // version 2 is in the cache; the replay still waits
		if got := c.ResourceVersion(resources.ClusterType, "a"); got != "2" {
			t.Fatalf("ResourceVersion = %q, want 2", got)
		}
		close(bw.release)
		for _, want := range []struct{ version, eds string }{{"1", "eds"}, {"2", "a-eds-2"}} {
			got := wv.wantKind(ctx, t, changed, nil).value
			if got.Version != want.version || got.Value.EDSServiceName != want.eds {
				t.Fatalf("delivered %+v at version %q, want service name %q at version %q", got.Value, got.Version, want.eds, want.version)
			}
		}
	})
}

// steppedBuilder wraps a transport builder so that, while gated, every
// request waits at Send until the test lets it through with step: the
// test then decides exactly what the client builds before each write.
type steppedBuilder struct {
	inner   transport.Builder
	gated   atomic.Bool
	sending chan struct{} // a Send waits at the gate
	proceed chan struct{} // lets one waiting Send through
}

func newSteppedBuilder(inner transport.Builder) *steppedBuilder {
	return &steppedBuilder{inner: inner, sending: make(chan struct{}), proceed: make(chan struct{})}
}

func (b *steppedBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.inner.Build(sc, o)
	if err != nil {
		return nil, err
	}
	return steppedTransport{XDS: x, b: b}, nil
}

// waiting waits for a request to be built and held at the gate.
func (b *steppedBuilder) waiting(t *testing.T) {
	t.Helper()
	select {
	case <-b.sending:
	case <-time.After(time.Minute):
		t.Fatal("no request waits to be written")
	}
}

// step writes the request held at the gate and waits until the client
// has handled its write and is idle again.
func (b *steppedBuilder) step() {
	b.proceed <- struct{}{}
	synctest.Wait()
}

type steppedTransport struct {
	transport.XDS
	b *steppedBuilder
}

func (tr steppedTransport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	s, err := tr.XDS.NewXDSStream(ctx, spec)
	if err != nil {
		return nil, err
	}
	return steppedStream{XDSStream: s, b: tr.b, ctx: ctx}, nil
}

type steppedStream struct {
	transport.XDSStream
	b   *steppedBuilder
	ctx context.Context
}

func (s steppedStream) Send(req *transport.Request) error {
	if s.b.gated.Load() {
		select {
		case s.b.sending <- struct{}{}:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
		select {
		case <-s.b.proceed:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
	return s.XDSStream.Send(req)
}

// TestLifecycle_RewatchWhileRequestNamingItIsWritten pins down a race of
// found by TestLifecycle_RewatchCycles: the last watch of "a" is
// cancelled and "a" watched again before the next request of the type is
// built, so that request (here a CDS ACK) names "a"; the new watch is
// cancelled while that request is being written, and "a" watched a third
// time. The request written unsubscribed nothing, and the unsubscription
// of the second cancel is not written yet: the entry must stay, and the
// third watch must get the cached value at once. On the old code the
// entry was dropped when the ACK was written (the first cancel's
// unsubscription was still listed with it), the third watch made a fresh
// entry, and the next request named "a" as the server already had it: the
// server never sent "a" again, and the watch got nothing, then a false
// does-not-exist 15 s later. Every request is written only when the test
// says (steppedBuilder); the server is scripted. SotW and delta.
func TestLifecycle_RewatchWhileRequestNamingItIsWritten(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
			sb := newSteppedBuilder(ms.TransportBuilder())
			c := newClient(t, ms, testutil.BootstrapOptions{}, append(opts, client.WithTransportBuilder(sb))...)
			send := func(typeURL, version string, m proto.Message, name string) {
				t.Helper()
				var err error
				if delta {
					_, err = ms.SendDeltaResponse(t.Context(), deltaResponse(typeURL, nil, deltaResource{name: name, version: version, msg: m}))
				} else {
					_, err = ms.SendResponse(t.Context(), discoveryResponse(typeURL, version, m))
				}
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
			}
			gotValue := func(w *recorder[*resources.Cluster], what string) {
				t.Helper()
				select {
				case e := <-w.events:
					if e.kind != changed {
						t.Fatalf("%s: event %v, want the cached value", what, e)
					}
				default:
					t.Fatalf("%s: no value at once, want the cached one (R-10.3)", what)
				}
			}

			keep := newRecorder[*resources.Listener]()
			keep.holdDone = true
			defer client.Watch(c, resources.ListenerType, "keep", keep)()
			w1 := newRecorder[*resources.Cluster]()
			cancel1 := client.Watch(c, resources.ClusterType, "a", w1)
			synctest.Wait()
			send(cds, "1", testutil.Cluster("a", "eds"), "a")
			gotValue(w1, "first watch")

			// An LDS ACK waits at the gate; meanwhile a CDS response
			// arrives (unchanged: no watcher call) and its ACK is queued.
			sb.gated.Store(true)
			send(lds, "1", testutil.Listener("keep", "r"), "keep")
			sb.waiting(t)
			keepEvent := <-keep.events
			keepEvent.done()
			send(cds, "2", testutil.Cluster("a", "eds"), "a")

			// Cancel and watch again: the CDS ACK, built next, names "a".
			cancel1()
			w2 := newRecorder[*resources.Cluster]()
			cancel2 := client.Watch(c, resources.ClusterType, "a", w2)
			synctest.Wait()
			gotValue(w2, "second watch")
			sb.step() // the LDS ACK
			sb.waiting(t)

			// While the CDS ACK is written, an LDS response is handled
			// (its done held): the next cancel is held, not sent.
			send(lds, "2", testutil.Listener("keep", "r2"), "keep")
			keepEvent = <-keep.events
			cancel2()
			sb.step() // the CDS ACK, naming "a"
			sb.waiting(t)

			w3 := newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", w3)()
			synctest.Wait()
			gotValue(w3, "third watch")

			sb.gated.Store(false)
			sb.step() // the LDS ACK
			keepEvent.done()
			synctest.Wait()
			if g := dumpEntry(c, cds, "a"); g.GetXdsConfig() == nil {
				t.Fatalf("CSDS entry of a = %v, want its value", g)
			}
			w3.wantNone(t, time.Minute) // no does-not-exist
		})
	})
}

// TestLifecycle_SotW_AnswerToUnsubscriptionIsNoDeletion pins down the
// other race of SotW: "a" is watched again after the request that
// unsubscribes it ([b]) was built, so that request is written and the
// next one ([a b]) names "a" again. The server's answer to [b] leaves "a"
// out; whether it arrives before or after [a b] is written, it is no
// deletion (the server did not know "a" was wanted again). The answer to
// [a b] carries "a", and a later response that leaves "a" out is a
// deletion again. Every request is written only when the test says; the
// server is scripted.
func TestLifecycle_SotW_AnswerToUnsubscriptionIsNoDeletion(t *testing.T) {
	for _, answerFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("answer-before-resubscription-written=%v", answerFirst), func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
				sb := newSteppedBuilder(ms.TransportBuilder())
				c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(sb))
				respond := func(version string, names ...string) {
					t.Helper()
					resp := discoveryResponse(cds, version)
					for _, n := range names {
						resp.Resources = append(resp.Resources, testutil.MarshalAny(testutil.Cluster(n, "eds")))
					}
					if _, err := ms.SendResponse(t.Context(), resp); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
				}
				wantRequest := func(names ...string) {
					t.Helper()
					r, err := ms.NextRequest(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					if got := r.Req.GetResourceNames(); r.Req.GetTypeUrl() != cds || !slices.Equal(got, names) {
						t.Fatalf("request %v, want CDS %q", r.Req, names)
					}
				}

				defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
				w1 := newRecorder[*resources.Cluster]()
				cancel1 := client.Watch(c, resources.ClusterType, "a", w1)
				synctest.Wait()
				respond("1", "a", "b")
				wantValueWithin(t, w1, "first watch")
				synctest.Wait()
				done, cancel := context.WithCancel(t.Context())
				cancel()
				for { // skip the requests so far
					if _, err := ms.NextRequest(done); err != nil {
						break
					}
				}

				sb.gated.Store(true)
				cancel1()
				sb.waiting(t) // [b], built
				w2 := newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, "a", w2)()
				wantValueWithin(t, w2, "re-watch") // from the cache
				sb.step()
				wantRequest("b")
				sb.waiting(t) // [a b], built
				if answerFirst {
					respond("2", "b") // the answer to [b]
					sb.step()
				} else {
					sb.step()
					respond("2", "b")
				}
				wantRequest("a", "b")
				sb.waiting(t) // the ACK of 2
				sb.gated.Store(false)
				sb.step()
				wantRequest("a", "b")
				w2.wantNone(t, time.Minute)
				if g := dumpEntry(c, cds, "a"); g.GetXdsConfig() == nil {
					t.Fatalf("CSDS entry of a = %v, want its value", g)
				}

				respond("3", "a", "b") // the answer to [a b]
				w2.wantNone(t, time.Minute)
				respond("4", "b") // a deletion
				w2.wantKind(t.Context(), t, resourceError, client.ErrResourceNotFound)
			})
		})
	}
}

// TestLifecycle_SotW_SecondRewatchKeepsTheGuard is issue 28's sequence
// "a" and "b" are watched and received; "a" is cancelled (the
// request [b] is built), watched again, [b] is written; then, before the
// next request [a b] is written, "a" is cancelled and watched once more.
// [a b] is written, and the server's answer to [b], which leaves "a" out,
// arrives: it is no deletion, however many times "a" was watched again
// in between. On the old code the second re-watch dropped the memory of
// the written unsubscription, and the watcher got "resource does not
// exist", then the value again. The server is scripted; every request is
// written only when the test says.
func TestLifecycle_SotW_SecondRewatchKeepsTheGuard(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		sb := newSteppedBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(sb))
		respond := func(version string, names ...string) {
			t.Helper()
			resp := discoveryResponse(cds, version)
			for _, n := range names {
				resp.Resources = append(resp.Resources, testutil.MarshalAny(testutil.Cluster(n, "eds")))
			}
			if _, err := ms.SendResponse(t.Context(), resp); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		wantRequest := func(names ...string) {
			t.Helper()
			r, err := ms.NextRequest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Req.GetResourceNames(); r.Req.GetTypeUrl() != cds || !slices.Equal(got, names) {
				t.Fatalf("request %v, want CDS %q", r.Req, names)
			}
		}

		defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
		w1 := newRecorder[*resources.Cluster]()
		cancel1 := client.Watch(c, resources.ClusterType, "a", w1)
		synctest.Wait()
		respond("1", "a", "b")
		wantValueWithin(t, w1, "first watch")
		synctest.Wait()
		done, cancel := context.WithCancel(t.Context())
		cancel()
		for { // skip the requests so far
			if _, err := ms.NextRequest(done); err != nil {
				break
			}
		}

		sb.gated.Store(true)
		cancel1()
		sb.waiting(t) // [b], built
		w2 := newRecorder[*resources.Cluster]()
		cancel2 := client.Watch(c, resources.ClusterType, "a", w2)
		wantValueWithin(t, w2, "first re-watch") // from the cache
		sb.step()
		wantRequest("b")
		sb.waiting(t) // [a b], built
		cancel2()
		w3 := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w3)()
		wantValueWithin(t, w3, "second re-watch") // from the cache
		sb.step()
		wantRequest("a", "b")
		respond("2", "b") // the answer to [b]
		w3.wantNone(t, time.Minute)
		if g := dumpEntry(c, cds, "a"); g.GetXdsConfig() == nil {
			t.Fatalf("CSDS entry of a = %v, want its value", g)
		}

		sb.waiting(t) // the next request
		sb.gated.Store(false)
		sb.step()
		respond("3", "a", "b") // the answer to [a b]
		w3.wantNone(t, time.Minute)
		respond("4", "b") // a deletion
		w3.wantKind(t.Context(), t, resourceError, client.ErrResourceNotFound)
	})
}

// TestLifecycle_RewatchKeepsAnIgnoredDeletion: a resource the server
// deleted while ignore_resource_deletion kept its value stays
// "deleted but cached" when its last watch is cancelled and it is watched
// again: the re-watch gets the cached value, and the cache state
// (gRFC A88) stays does_not_exist_but_cached until the server sends the
// resource again. On the old code the re-watch made it "acked". SotW and
// delta.
func TestLifecycle_RewatchKeepsAnIgnoredDeletion(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
			c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: []string{bootstrap.FeatureIgnoreResourceDeletion}}, opts...)
			send := func(version string, names []string, removed ...string) {
				t.Helper()
				var err error
				if delta {
					var rs []deltaResource
					for _, n := range names {
						rs = append(rs, deltaResource{name: n, version: version, msg: testutil.Cluster(n, "eds")})
					}
					_, err = ms.SendDeltaResponse(t.Context(), deltaResponse(cds, removed, rs...))
				} else {
					resp := discoveryResponse(cds, version)
					for _, n := range names {
						resp.Resources = append(resp.Resources, testutil.MarshalAny(testutil.Cluster(n, "eds")))
					}
					_, err = ms.SendResponse(t.Context(), resp)
				}
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
			}
			wantState := func(name, want string, count int64) {
				t.Helper()
				if got := dumpEntry(c, cds, name).GetClientStatus().String(); got != "ACKED" {
					t.Errorf("CSDS status of %q = %s, want ACKED", name, got)
				}
				var n int64
				for _, r := range c.Gauges().Resources {
					if r.ResourceType == cdsTypeName && r.CacheState == want {
						n += r.Count
					}
				}
				if n != count {
					t.Errorf("resources in cache state %q: %d, want %d (%q); gauges %+v", want, n, count, name, c.Gauges().Resources)
				}
			}

			defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
			w1 := newRecorder[*resources.Cluster]()
			cancel1 := client.Watch(c, resources.ClusterType, "a", w1)
			synctest.Wait()
			send("1", []string{"a", "b"})
			wantValueWithin(t, w1, "first watch")
			send("2", []string{"b"}, "a") // a deletion, ignored
			w1.wantNone(t, time.Minute)
			wantState("a", client.CacheStateDoesNotExistButCached, 1)

			// Cancel and watch again while a Listener response is handled
			// (its watcher holds done), so that no CDS request is written
			// in between: flow control holds subscription changes until
			// the response is handled. Otherwise the unsubscription may be
			// written first, and the entry, with its mark, is rightly
			// dropped.
			wl := newRecorder[*resources.Listener]()
			wl.holdDone = true
			defer client.Watch(c, resources.ListenerType, "l", wl)()
			synctest.Wait()
			var err error
			if delta {
				_, err = ms.SendDeltaResponse(t.Context(), deltaResponse(resources.ListenerType.TypeURL(), nil,
					deltaResource{name: "l", version: "1", msg: testutil.Listener("l", "r")}))
			} else {
				resp := discoveryResponse(resources.ListenerType.TypeURL(), "1")
				resp.Resources = append(resp.Resources, testutil.MarshalAny(testutil.Listener("l", "r")))
				_, err = ms.SendResponse(t.Context(), resp)
			}
			if err != nil {
				t.Fatal(err)
			}
			held := wl.wantKind(t.Context(), t, changed, nil)
			synctest.Wait()

			cancel1()
			w2 := newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", w2)()
			wantValueWithin(t, w2, "re-watch") // from the cache
			held.done()
			synctest.Wait() // the held change, if any, is written
			wantState("a", client.CacheStateDoesNotExistButCached, 1)

			send("3", []string{"a", "b"})             // present again
			wantState("a", client.CacheStateACKed, 2) // a and b
		})
	})
}
