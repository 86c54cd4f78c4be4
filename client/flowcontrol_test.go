// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestFlowControl_NextResponseWaitsForDone checks for
// updates, NACK errors and deletions: the ACK of a response is sent at
// once, but the next response is not read (so neither delivered nor
// answered) until the watcher calls done.
func TestFlowControl_NextResponseWaitsForDone(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Cluster]()
	w.holdDone = true
	defer client.Watch(c, resources.ClusterType, "a", w)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")

	// The first response is delivered; its done is held.
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "v1")))
	if err != nil {
		t.Fatal(err)
	}
	waitForNonce(t, ms, nonce) // ACKed before done
	held := w.wantKind(ctx, t, changed, nil)

	for i, next := range []struct {
		name string
		resp *v3discoverypb.DiscoveryResponse
		kind eventKind
	}{
		{"NACK", discoveryResponse(resources.ClusterTypeURL, "2", invalidCluster("a")), ambientError},
		{"deletion", discoveryResponse(resources.ClusterTypeURL, "3"), resourceError},
		{"update again", discoveryResponse(resources.ClusterTypeURL, "4", testutil.Cluster("a", "v4")), changed},
	} {
		nonce, err := ms.SendResponse(ctx, next.resp)
		if err != nil {
			t.Fatal(err)
		}
		// Not read yet: no answer and no watcher call while done is held.
		shortCtx, cancel := contextWithTimeout(t, defaultTestShortTimeout)
		if r, err := ms.NextRequest(shortCtx); err == nil {
			t.Fatalf("step %d (%s): request %v sent while the previous response's done was held", i, next.name, r.Req)
		}
		cancel()
		w.wantNone(t, defaultTestShortTimeout)

		held.done()
		waitForNonce(t, ms, nonce)
		held = w.wantKind(ctx, t, next.kind, nil)
	}
	held.done()
}

// TestFlowControl_ReleasedWithoutWatcherCalls checks: responses
// that cause no watcher call (an unchanged resource, a resource nobody
// watches) do not hold the stream.
func TestFlowControl_ReleasedWithoutWatcherCalls(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")

	for _, resp := range []*v3discoverypb.DiscoveryResponse{
		discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "")),
		discoveryResponse(resources.ClusterTypeURL, "2", testutil.Cluster("a", "")),                            // unchanged
		discoveryResponse(resources.ClusterTypeURL, "3", testutil.Cluster("a", ""), testutil.Cluster("z", "")), // z not watched
	} {
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
	}
	w.wantKind(ctx, t, changed, nil)
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "4", testutil.Cluster("a", "changed")))
	if err != nil {
		t.Fatal(err)
	}
	waitForNonce(t, ms, nonce)
	if got := w.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "changed" {
		t.Fatalf("got %+v, want the version 4 value", got)
	}
}

// TestFlowControl_DoneIsIdempotent checks the watcher contract that a
// second call of done has no effect: of two watchers of one
// response, the first calls done three times; the next response still
// waits for the second's done.
func TestFlowControl_DoneIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	wa.holdDone, wb.holdDone = true, true
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")

	if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""), testutil.Cluster("b", ""))); err != nil {
		t.Fatal(err)
	}
	heldA := wa.wantKind(ctx, t, changed, nil)
	heldB := wb.wantKind(ctx, t, changed, nil)
	heldA.done()
	heldA.done()
	heldA.done()

	if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "2", testutil.Cluster("a", "v2"), testutil.Cluster("b", ""))); err != nil {
		t.Fatal(err)
	}
	wa.wantNone(t, defaultTestShortTimeout) // not read: b's done is held
	heldB.done()
	wa.wantKind(ctx, t, changed, nil).done()
}

// TestFlowControl_CancelledCallReleases checks with a watch
// cancelled while its call waits behind another watcher's: the call is not
// made, and it does not hold the stream. a's watcher blocks in its call
// while b's call is queued; b is cancelled; the next response is read.
func TestFlowControl_CancelledCallReleases(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	entered, unblock := make(chan string, 10), make(chan struct{})
	defer client.Watch(c, resources.ClusterType, "a", watcher.Funcs[*resources.Cluster]{OnChanged: func(v *resources.Cluster) {
		entered <- v.EDSServiceName
		if v.EDSServiceName == "v1" {
			<-unblock
		}
	}})()
	wb := newRecorder[*resources.Cluster]()
	cancelB := client.Watch(c, resources.ClusterType, "b", wb)
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")

	if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "v1"), testutil.Cluster("b", ""))); err != nil {
		t.Fatal(err)
	}
	if got := <-entered; got != "v1" {
		t.Fatalf("a's watcher got %q, want v1", got)
	}
	cancelB() // b's call is queued behind a's
	close(unblock)
	if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "2", testutil.Cluster("a", "v2"))); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-entered:
		if got != "v2" {
			t.Fatalf("a's watcher got %q, want v2", got)
		}
	case <-ctx.Done():
		t.Fatal("the next response was not delivered: the cancelled call holds the stream")
	}
	wb.wantNone(t, defaultTestShortTimeout)
}

// TestFlowControl_PerStream checks that flow control is per stream
// (R-12.1, client/doc.go "Transports"): with one stream per type, a
// Listener watcher that holds done of its update holds the LDS stream
// only. A Cluster watched meanwhile (as a watcher that waits for a
// cluster before calling done would) is requested on the already-open CDS
// stream at once, and delivered. On the old code the streams shared one
// response counter, and the CDS request waited for the Listener's done.
func TestFlowControl_PerStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
			ms.Update("", testutil.Resources{
				Listeners: []*v3listenerpb.Listener{testutil.Listener("l", "r")},
				Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("a", "eds"), testutil.Cluster("b", "eds")},
			})
			c := newClient(t, ms, testutil.BootstrapOptions{}, append(opts, client.WithTransportBuilder(pertype.NewBuilder(ms.Dialer())))...)
			wa := newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", wa)()
			wa.wantKind(ctx, t, changed, nil)
			wl := newRecorder[*resources.Listener]()
			wl.holdDone = true
			defer client.Watch(c, resources.ListenerType, "l", wl)()
			held := wl.wantKind(ctx, t, changed, nil)
			synctest.Wait()

			wb := newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "b", wb)()
			shortCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			select {
			case e := <-wb.events:
				if e.kind != changed {
					t.Fatalf("watcher of b: %v, want its value", e)
				}
			case <-shortCtx.Done():
				t.Fatal("b not delivered while the Listener's done is held: the CDS stream waits for the LDS stream")
			}
			held.done()
		})
	})
}
