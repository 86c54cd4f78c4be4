// SPDX-License-Identifier: Apache-2.0

package pertype_test

import (
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
)

// TestWildcard_ReplayedOnReconnect checks a WatchAll over per-type streams
// when its type's stream breaks: the new stream subscribes to the
// wildcard again (the engine replays it, R-11.4) and updates keep
// arriving, SotW and delta. On the old transport the per-type mux replayed
// nothing for an empty name list, and the WatchAll went silent.
func TestWildcard_ReplayedOnReconnect(t *testing.T) {
	const deltaCDSMethod = "/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters"
	for _, tc := range []struct {
		name   string
		method string
		opts   []client.Option
	}{
		{"sotw", cdsMethod, nil},
		{"delta", deltaCDSMethod, []client.Option{client.WithDelta()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
			ms.Update("test-node", chain("v1"))
			c, rec := newClient(t, ms, tc.opts...)
			all := clienttest.NewRecorder[*resources.Cluster]()
			defer client.WatchAll(c, resources.ClusterType, all)()
			if e := all.Want(ctx, t, clienttest.Changed, nil); e.Value.EDSServiceName != "eds-svc" {
				t.Fatalf("WatchAll got %v", e)
			}

			rec.Break(tc.method)
			r := chain("v2")
			r.Clusters = append(r.Clusters, testutil.Cluster("added", "eds-added"))
			ms.Update("test-node", r)
			for {
				e := all.Want(ctx, t, clienttest.Changed, nil)
				if e.Value.Name == "added" {
					break
				}
			}
		})
	}
}
