// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// Lifecycle against go-control-plane v0.14 (snapshot cache, SotW and
// delta): watches cancelled and made again, WatchAll (R-6.2,
// ), depmgr Managers closed and made again.

// lifecycleDeadline bounds how long each re-watch may take to deliver, in
// real time over gRPC: the target is 1 s (met in fake time by the client's
// own tests); 5 s leaves room for a loaded CI machine.
const lifecycleDeadline = 5 * time.Second

// forEachGCP runs f with a client of a go-control-plane server serving the
// chain of "svc" at version "1": SotW, then delta.
func forEachGCP(t *testing.T, f func(t *testing.T, c *client.Client)) {
	t.Run("sotw", func(t *testing.T) {
		s := startGCPServer(t)
		s.setSnapshot(t.Context(), t, "1", chain("127.0.0.1", 50051))
		f(t, s.newClient(t))
	})
	t.Run("delta", func(t *testing.T) {
		s := startGCPDeltaServer(t, newDeltaSnapshotCache(t.Context(), t, "1", chain("127.0.0.1", 50051)))
		f(t, s.newClient(t))
	})
}

// nextValueWithin returns w's event from index i on, which must be a value,
// within lifecycleDeadline.
func nextValueWithin[T any](t *testing.T, w *recordingWatcher[T], i int, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), lifecycleDeadline)
	defer cancel()
	ev, _, err := w.next(ctx, i)
	if err != nil || ev.kind != changed {
		t.Fatalf("%s: got %v, %v; want a value within %v", what, ev, err, lifecycleDeadline)
	}
	return ev.value
}

// TestGoControlPlane_Lifecycle_RewatchCycles checks against
// go-control-plane: the last watch of a Cluster cancelled and made again
// at once, 30 times, gets the value each time within 1 s, alone on the
// stream and beside a Listener watch. On the old code SotW got 0 of 30.
func TestGoControlPlane_Lifecycle_RewatchCycles(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-listener=%v", keep), func(t *testing.T) {
			forEachGCP(t, func(t *testing.T, c *client.Client) {
				if keep {
					lw := newRecordingWatcher[*resources.Listener]()
					defer client.Watch(c, resources.ListenerType, listenerName, lw)()
					nextValueWithin(t, lw, 0, "Listener")
				}
				cancel := func() {}
				for i := range 30 {
					cancel()
					w := newRecordingWatcher[*resources.Cluster]()
					cancel = client.Watch(c, resources.ClusterType, clusterName, w)
					if v := nextValueWithin(t, w, 0, fmt.Sprintf("watch %d", i)); v.Name != clusterName {
						t.Fatalf("watch %d got %q", i, v.Name)
					}
				}
				cancel()
			})
		})
	}
}

// TestGoControlPlane_Lifecycle_WatchAllCycles checks WatchAll against
// go-control-plane, whose snapshot cache takes an explicit "*" for a name:
// the client subscribes with the legacy wildcard, and the
// last WatchAll cancelled and made again at once, 30 times, gets the
// cluster each time within 1 s. On the old code nothing arrived in SotW.
func TestGoControlPlane_Lifecycle_WatchAllCycles(t *testing.T) {
	forEachGCP(t, func(t *testing.T, c *client.Client) {
		cancel := func() {}
		for i := range 30 {
			cancel()
			w := newRecordingWatcher[*resources.Cluster]()
			cancel = client.WatchAll(c, resources.ClusterType, w)
			if v := nextValueWithin(t, w, 0, fmt.Sprintf("WatchAll %d", i)); v.Name != clusterName {
				t.Fatalf("WatchAll %d got %q", i, v.Name)
			}
		}
		cancel()
	})
}

// TestGoControlPlane_Lifecycle_WatchAllWithNamedWatch checks the legacy
// wildcard beside named watches: WatchAll of Clusters, a Watch of the
// cluster (covered by the wildcard in SotW), WatchAll cancelled (the
// stream restarts in SotW, or "*" is unsubscribed in delta): the named
// watch keeps its value and sees no error, and a new WatchAll gets the
// cluster again.
func TestGoControlPlane_Lifecycle_WatchAllWithNamedWatch(t *testing.T) {
	forEachGCP(t, func(t *testing.T, c *client.Client) {
		all := newRecordingWatcher[*resources.Cluster]()
		cancelAll := client.WatchAll(c, resources.ClusterType, all)
		nextValueWithin(t, all, 0, "WatchAll")
		w := newRecordingWatcher[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, clusterName, w)()
		nextValueWithin(t, w, 0, "Watch")
		cancelAll()
		all2 := newRecordingWatcher[*resources.Cluster]()
		defer client.WatchAll(c, resources.ClusterType, all2)()
		nextValueWithin(t, all2, 0, "WatchAll again")
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if ev, _, err := w.next(ctx, 1); err == nil {
			t.Fatalf("named watch got %v after the WatchAll was cancelled, want nothing", ev)
		}
	})
}

// TestGoControlPlane_Lifecycle_DepMgrCloseRecreate checks 20 depmgr
// Managers of the same target closed and made again at once against
// go-control-plane: each publishes the complete configuration within 1 s.
// On the old code SotW got 0 of 20.
func TestGoControlPlane_Lifecycle_DepMgrCloseRecreate(t *testing.T) {
	forEachGCP(t, func(t *testing.T, c *client.Client) {
		for i := range 20 {
			updates := make(chan *depmgr.XDSConfig, 10)
			errs := make(chan error, 10)
			m := depmgr.New(c, listenerName, watcher.Funcs[*depmgr.XDSConfig]{
				OnChanged:       func(cfg *depmgr.XDSConfig) { updates <- cfg },
				OnResourceError: func(err error) { errs <- err },
			})
			timer := time.NewTimer(lifecycleDeadline)
			select {
			case cfg := <-updates:
				if cfg.Cluster(clusterName) == nil {
					t.Fatalf("cycle %d: config without %s", i, clusterName)
				}
			case err := <-errs:
				t.Fatalf("cycle %d: ResourceError(%v)", i, err)
			case <-timer.C:
				t.Fatalf("cycle %d: no configuration within %v", i, lifecycleDeadline)
			}
			timer.Stop()
			m.Close()
		}
	})
}
