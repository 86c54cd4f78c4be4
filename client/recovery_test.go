// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/faultproxy"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// The tests of this file check how the client recovers from a flaky
// network: over real TCP through testutil/faultproxy, in
// real time with generous bounds, and, for the long scenarios, over the
// in-memory server in fake time.

// newProxiedClient returns a client of ms whose server_uri is p's address,
// over real gRPC (the default transport unless opts set one), closed at
// cleanup.
func newProxiedClient(t *testing.T, ms *testutil.ManagementServer, p *faultproxy.Proxy, opts ...client.Option) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(bytes.ReplaceAll(ms.Bootstrap(testutil.BootstrapOptions{}), []byte(ms.Address()), []byte(p.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// versionedClusters returns n Clusters named c-00, c-01, …, whose EDS service name
// is eds-<version>.
func versionedClusters(n int, version string) []*v3clusterpb.Cluster {
	out := make([]*v3clusterpb.Cluster, n)
	for i := range out {
		out[i] = testutil.Cluster(fmt.Sprintf("c-%02d", i), "eds-"+version)
	}
	return out
}

// watchClusters watches the n clusters of versionedClusters(n, …).
func watchClusters(t *testing.T, c *client.Client, n int) []*recorder[*resources.Cluster] {
	t.Helper()
	ws := make([]*recorder[*resources.Cluster], n)
	for i := range ws {
		ws[i] = newRecorder[*resources.Cluster]()
		t.Cleanup(client.Watch(c, resources.ClusterType, fmt.Sprintf("c-%02d", i), ws[i]))
	}
	return ws
}

// waitForVersion waits until every watcher of ws got a Cluster of the
// given version (versionedClusters), skipping older values and connection errors
// (AmbientError: a stream failed before any response); any other event
// fails the test.
func waitForVersion(ctx context.Context, t *testing.T, ws []*recorder[*resources.Cluster], version string) {
	t.Helper()
	for i, w := range ws {
		for {
			e := w.next(ctx, t)
			if e.kind == ambientError && errors.Is(e.err, client.ErrConnection) {
				continue
			}
			if e.kind != changed {
				t.Fatalf("watcher of c-%02d: %v, want values", i, e)
			}
			if e.value.EDSServiceName == "eds-"+version {
				break
			}
		}
	}
}

// TestRecovery_FlappingServer checks against a server that drops
// every connection 3 s after it opens (faultproxy.ResetEach), each stream
// having delivered and ACKed its responses first:
//  1. the client reconnects within 1 s of each reset (at once: the stream
//     processed a response, so the backoff starts over);
//  2. every stream ACKed what it received;
//  3. the watcher hears nothing after its value: a stream that had
//     responses ends silently.
//
// The old code started the backoff over only after a stream lived 10 s:
// it reconnected after 1 s, 1.6 s, 2.6 s, … (9 times in 90 s).
func TestRecovery_FlappingServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")},
		Clusters:  versionedClusters(5, "v1"),
	})
	p := faultproxy.New(t, ms.Address())
	const life = 3 * time.Second
	p.ResetEach(life)
	c := newProxiedClient(t, ms, p)
	wl := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", wl)()
	wl.wantKind(ctx, t, changed, nil)
	ws := watchClusters(t, c, 5)
	waitForVersion(ctx, t, ws, "v1")

	const conns = 4 // three reconnections
	if err := p.WaitForAccepted(ctx, conns); err != nil {
		t.Fatal(err)
	}
	acc := p.Accepted()
	for i := 1; i < conns; i++ {
		if gap := acc[i].Sub(acc[i-1].Add(life)); gap > time.Second {
			t.Errorf("connection %d opened %v after connection %d was reset, want within 1s", i+1, gap, i)
		}
	}
	// Every stream of the first three connections ACKed its responses.
	acked := map[int64]bool{}
	for _, r := range ms.Requests() {
		if r.Req.GetResponseNonce() != "" && r.Req.GetErrorDetail() == nil {
			acked[r.StreamID] = true
		}
	}
	for id := int64(1); id < conns; id++ {
		if !acked[id] {
			t.Errorf("stream %d ACKed nothing", id)
		}
	}
	wl.wantNone(t, 0)
	for _, w := range ws {
		w.wantNone(t, 0)
	}
}

// TestRecovery_CleanNetworkAfterResets checks that the client is current
// within 10 s of the network becoming clean after a spell of connection
// resets:
//  1. 20 Clusters are watched through the proxy;
//  2. for 6 s every connection is reset 400 ms after it opens, while the
//     server moves to v2 (after 3 s), then v3 (at the end);
//  3. the network becomes clean: every watcher has v3 within 10 s.
//
// TestRecovery_TwoMinutesOfResets is the long version, in fake time.
func TestRecovery_CleanNetworkAfterResets(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	const n = 20
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{Clusters: versionedClusters(n, "v1")})
	p := faultproxy.New(t, ms.Address())
	c := newProxiedClient(t, ms, p)
	ws := watchClusters(t, c, n)
	waitForVersion(ctx, t, ws, "v1")

	p.ResetEach(400 * time.Millisecond)
	for _, v := range []string{"v2", "v3"} {
		spell := time.NewTimer(3 * time.Second)
		<-spell.C // real time: the length of the fault, not a synchronisation
		ms.Update("", testutil.Resources{Clusters: versionedClusters(n, v)})
	}
	p.ResetEach(0)
	clean := time.Now()
	t.Logf("%d connections during the resets", len(p.Accepted()))

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	waitForVersion(wctx, t, ws, "v3")
	t.Logf("current %v after the network became clean", time.Since(clean))
}

// TestRecovery_OversizeResponseBacksOff checks the exception to the reset
// of the backoff, over real gRPC through the proxy (no fault): a stream
// that processed a response (the Listener) and then failed on the
// client's receive limit (the Cluster, larger than 1 KiB) is retried
// after the backoff, not at once: the 4th stream opens at least
// 0.8 + 1.28 + 2.05 s after the 1st, not in a loop. Each failure is
// reported.
func TestRecovery_OversizeResponseBacksOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("big", strings.Repeat("x", 2000))},
	})
	p := faultproxy.New(t, ms.Address())
	rb := newRecordingBuilder(grpctransport.NewBuilder(grpctransport.WithMaxRecvMsgSize(1024)))
	c := newProxiedClient(t, ms, p, client.WithTransportBuilder(rb), client.WithMaxRecvMsgSize(1024))
	wl := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", wl)()
	wl.wantKind(ctx, t, changed, nil)
	wc := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "big", wc)()

	for len(rb.streamsOpened()) < 4 {
		wc.wantKind(ctx, t, resourceError, transport.ErrMessageTooLarge)
	}
	opened := rb.streamsOpened()
	if d := opened[3].Sub(opened[0]); d < 4100*time.Millisecond {
		t.Errorf("4 streams in %v (opened at %v), want the backoff between them (at least 4.1s)", d, opened[:4])
	}
}

// breakEvery breaks every stream of ms (in a synctest bubble) life after
// it opens, until ctx ends.
func breakEvery(ctx context.Context, ms *testutil.ManagementServer, life time.Duration) {
	for {
		if err := ms.WaitForOpenStreams(ctx, 1); err != nil {
			return
		}
		t := time.NewTimer(life)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		ms.BreakStreams()
	}
}

// TestRecovery_FlappingServer90s is the flapping server in fake
// time: every stream is broken 3 s after it opens, for 90 s; each is
// replaced at once, so about 30 streams open (the old code: 9), and the
// watcher hears nothing after its value.
func TestRecovery_FlappingServer90s(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Clusters: versionedClusters(5, "v1")})
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))
		ws := watchClusters(t, c, 5)
		waitForVersion(ctx, t, ws, "v1")

		start := time.Now()
		bctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			breakEvery(bctx, ms, 3*time.Second)
		}()
		time.Sleep(90 * time.Second) // fake time: the scenario's length
		stop()
		wg.Wait()

		opened := rb.streamsOpened()
		if n := len(opened); n < 28 {
			t.Errorf("%d streams in 90 s of a server that drops each after 3 s, want about 30 (one every 3 s)", n)
		}
		for i := 1; i < len(opened); i++ {
			if gap := opened[i].Sub(opened[i-1]); opened[i].After(start) && gap > 3*time.Second+time.Second {
				t.Errorf("stream %d opened %v after stream %d, want within 1s of its end (3s)", i+1, gap, i)
			}
		}
		for _, w := range ws {
			w.wantNone(t, 0)
		}
	})
}

// TestRecovery_TwoMinutesOfResets is the faulty network in fake
// time:
//  1. 20 Clusters are watched;
//  2. for 150 s every stream is broken 1.5 s after it opens, while the
//     server changes every 10 s;
//  3. the network becomes clean and the server changes once more: every
//     watcher has that version within 10 s.
//
// The old code's backoff grew to 1-2 minutes during the resets, since no
// stream lived 10 s: it needed 55-78 s (here: at least 28 s) to catch up.
func TestRecovery_TwoMinutesOfResets(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		const n = 20
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Clusters: versionedClusters(n, "v0")})
		c := newClient(t, ms, testutil.BootstrapOptions{})
		ws := watchClusters(t, c, n)
		waitForVersion(ctx, t, ws, "v0")

		bctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			breakEvery(bctx, ms, 1500*time.Millisecond)
		}()
		for i := 1; i <= 15; i++ {
			time.Sleep(10 * time.Second) // fake time: the server changes every 10 s
			ms.Update("", testutil.Resources{Clusters: versionedClusters(n, fmt.Sprintf("v%d", i))})
		}
		stop()
		wg.Wait()
		clean := time.Now()
		ms.Update("", testutil.Resources{Clusters: versionedClusters(n, "final")})

		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		waitForVersion(wctx, t, ws, "final")
		if d := time.Since(clean); d > 10*time.Second {
			t.Errorf("current %v after the network became clean, want within 10s", d)
		}
	})
}
