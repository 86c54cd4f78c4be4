// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestDepMgr_MeshOneRequestPerType checks, on the wire, that the
// subscription changes of a static mesh of 1,000 clusters, made by the
// Manager from watcher callbacks (1,000 Cluster watches from the
// RouteConfiguration's, 1,000 ClusterLoadAssignment watches from the
// Clusters'), go out in one request per type, SotW and delta, rather than
// in one request per batch of callbacks the send loop happened to see
// (each a full name list in SotW, which the server answers with every
// resource so far).
func TestDepMgr_MeshOneRequestPerType(t *testing.T) {
	const n = 1000
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			ctx := testContext(t)
			counter := newRequestCounter()
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{OnRequest: counter.add})
			ms.Update("", scaleResources(n))
			var opts []client.Option
			if delta {
				opts = append(opts, client.WithDelta())
			}
			c := newClient(t, ms, opts...)
			w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
			m := depmgr.New(c, "svc", w)
			defer m.Close()
			cfg, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.NumClusters() != n {
				t.Fatalf("the first snapshot has %d clusters, want %d", cfg.NumClusters(), n)
			}
			got := counter.take()
			for _, typeURL := range []string{resources.ListenerTypeURL, resources.RouteConfigTypeURL, resources.ClusterTypeURL, resources.EndpointsTypeURL} {
				if got[typeURL] != 1 {
					t.Errorf("%d requests changed the subscribed names of %s, want 1", got[typeURL], typeURL)
				}
			}
		})
	}
}
