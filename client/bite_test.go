// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// Tests that pin down promises a plausible change of the code would break
// silently: each kills a mutation the rest of the suite let live.

// TestWatchExpiry_NotBeforeRequestWritten checks: the does-not-exist
// timer starts when the request naming the resource is written on the
// stream, not when Watch is called. The stream is up, but the request
// waits at a gate for a minute (fake time): no error; once it is written,
// the error comes exactly 15 s later.
func TestWatchExpiry_NotBeforeRequestWritten(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))
		rb.hold()
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "c", w)()
		<-rb.sending
		w.wantNone(t, time.Minute)
		rb.release()
		waitForNames(t, ms, resources.ClusterTypeURL, "c")
		sent := time.Now()
		w.wantKind(testContext(t), t, resourceError, client.ErrResourceNotFound)
		if got := time.Since(sent); got != 15*time.Second {
			t.Fatalf("does-not-exist reported %v after the request was written, want 15s", got)
		}
	})
}

// TestOrdering_DeletionsInNameOrder checks: the deletions of one
// SotW response reach the watchers in name order, whatever the
// order of the cache (a map): 30 cached clusters left out of a response.
func TestOrdering_DeletionsInNameOrder(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		c := newClient(t, ms, testutil.BootstrapOptions{})
		log := &callLog{}
		var names []string
		var clusters []*v3clusterpb.Cluster
		for i := range 30 {
			n := fmt.Sprintf("c%02d", 29-i) // response order is reversed name order
			names = append(names, n)
			clusters = append(clusters, testutil.Cluster(n, ""))
			r := newRecorder[*resources.Cluster]()
			r.log, r.label = log, n
			defer client.Watch(c, resources.ClusterType, n, r)()
		}
		synctest.Wait()
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", protoMessages(clusters)...)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "2")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		calls := log.get()
		if len(calls) != 60 {
			t.Fatalf("%d watcher calls, want 60: %v", len(calls), calls)
		}
		slices.Sort(names)
		var want []string
		for _, n := range names {
			want = append(want, n+":resource_error")
		}
		if got := calls[30:]; !slices.Equal(got, want) {
			t.Fatalf("deletions in order %v, want name order %v", got, want)
		}
	})
}

// TestWatch_CancelDropsQueuedCallbacks checks the promise of Watch's doc
// comment: once cancel returns, the watcher gets no callback that had not
// started, even one queued before cancel was called. A first watcher holds
// the callback goroutine; an update of the second watcher's resource is
// queued behind it; the second watch is cancelled; then the first
// returns: the second watcher hears nothing.
func TestWatch_CancelDropsQueuedCallbacks(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Version: "1", Clusters: namedClusters("a", "b")})
		c := newClient(t, ms, testutil.BootstrapOptions{})
		wb := newRecorder[*resources.Cluster]()
		cancelB := client.Watch(c, resources.ClusterType, "b", wb)
		wb.wantKind(testContext(t), t, changed, nil)

		bw := &blockingWatcher[*resources.Cluster]{entered: make(chan struct{}), release: make(chan struct{})}
		defer client.Watch(c, resources.ClusterType, "a", bw)()
		<-bw.entered // the callback goroutine is busy
		ms.Update("", testutil.Resources{Version: "2", Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", ""), testutil.Cluster("b", "b2")}})
		synctest.Wait() // b's update is queued
		cancelB()
		close(bw.release)
		synctest.Wait()
		wb.wantNone(t, time.Second)
	})
}

// protoMessages converts clusters for discoveryResponse.
func protoMessages(cs []*v3clusterpb.Cluster) []proto.Message {
	out := make([]proto.Message, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}
