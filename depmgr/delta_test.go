// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestDepMgr_Delta_TreeUpdatesAndRemovals runs the Manager over
// incremental xDS, which it sees only through the client's watch
// API:
//
//  1. The complete tree of three EDS clusters is published, with the
//     per-resource versions delta gives.
//  2. One ClusterLoadAssignment changes: only that cluster's result is
//     new.
//  3. A cluster leaves the route table: it leaves the snapshot and its
//     watches are unsubscribed on the delta stream.
//  4. The Listener is removed (removed_resources): the whole config fails
//     with a not-found error.
func TestDepMgr_Delta_TreeUpdatesAndRemovals(t *testing.T) {
	ctx := testContext(t)
	cs, es := edsChain("c1", "c2", "c3")
	res := testutil.Resources{
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2", "c3")),
		Clusters:  cs,
		Endpoints: es,
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", res)
	c := newClient(t, ms, client.WithDelta())
	rec := newRecorder()
	m := depmgr.New(c, "svc", rec)
	t.Cleanup(m.Close)

	first := rec.waitForChanged(ctx, t, "the complete tree", func(cfg *depmgr.XDSConfig) bool { return cfg.NumClusters() == 3 })
	if first.ListenerVersion == "" || first.RouteConfigVersion == "" ||
		first.Cluster("c1").Config.ClusterVersion == "" || first.Cluster("c1").Config.EndpointsVersion == "" {
		t.Fatalf("snapshot over delta lacks versions: %s", describe(first))
	}

	res.Endpoints = endpoints(es[0], testutil.Endpoints("eds-c2", "127.0.0.1", 9001), es[2])
	ms.Update("", res)
	next := rec.waitForChanged(ctx, t, "c2's new endpoints", func(cfg *depmgr.XDSConfig) bool {
		return slices.Equal(addresses(cfg.Cluster("c2").Config.Endpoints), []string{"127.0.0.1:9001"})
	})
	if next.Cluster("c1") != first.Cluster("c1") || next.Cluster("c3") != first.Cluster("c3") {
		t.Error("c1 or c3 has a new result after a change of c2's endpoints")
	}

	res.Routes = routes(testutil.RouteConfigToClusters("route-svc", "svc", "c1", "c2"))
	ms.Update("", res)
	rec.waitForChanged(ctx, t, "c3 gone", func(cfg *depmgr.XDSConfig) bool { return cfg.NumClusters() == 2 && cfg.Cluster("c3") == nil })
	for _, typeURL := range []string{resources.ClusterTypeURL, resources.EndpointsTypeURL} {
		want := "c3"
		if typeURL == resources.EndpointsTypeURL {
			want = "eds-c3"
		}
		if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
			return r.Delta != nil && r.Delta.GetTypeUrl() == typeURL && slices.Contains(r.Delta.GetResourceNamesUnsubscribe(), want)
		}); err != nil {
			t.Fatalf("waiting for the delta unsubscription of %s %q: %v", typeURL, want, err)
		}
	}

	res.Listeners = nil
	ms.Update("", res)
	if err := rec.waitForResourceError(ctx, t); !errors.Is(err, client.ErrResourceNotFound) {
		t.Fatalf("ResourceError(%v) after the Listener was removed, want one wrapping ErrResourceNotFound", err)
	}
}
