// SPDX-License-Identifier: Apache-2.0

package resolver_test

import (
	"context"
	"slices"
	"testing"

	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resolver"
	"github.com/proxyless/xds/testutil"

	v3lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// lrsTotals sums the reports of cluster in reqs.
type lrsTotals struct {
	issued, succeeded, errored, dropped uint64
	reports                             int
}

func sumLRS(reqs []*v3lrspb.LoadStatsRequest, cluster string) lrsTotals {
	var t lrsTotals
	for _, r := range reqs {
		for _, cs := range r.GetClusterStats() {
			if cs.GetClusterName() != cluster {
				continue
			}
			t.reports++
			t.dropped += cs.GetTotalDroppedRequests()
			for _, ls := range cs.GetUpstreamLocalityStats() {
				t.issued += ls.GetTotalIssuedRequests()
				t.succeeded += ls.GetTotalSuccessfulRequests()
				t.errored += ls.GetTotalErrorRequests()
			}
		}
	}
	return t
}

// TestResolver_E2E_LoadReport checks load reporting (R-22, gRFC A27):
// with lrs_server "self" on cluster-a of the canary scenario, the LRS
// reports for cluster-a sum exactly to the RPCs A served, and no other
// cluster is reported.
//
//  1. Serve testutil.Canary with LRSOnA; an LRS server asks for cluster-a (interval unset: 1 s).
//  2. 2000 default RPCs (A 80 % / B 20 %).
//  3. The first LRS request carries the node with envoy.lrs.supports_send_all_clusters.
//  4. Reports for cluster-a, summed, reach exactly A's served count: issued = succeeded, no error; none for cluster-b.
func TestResolver_E2E_LoadReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	ls := testutil.NewLRSServer(t, testutil.LRSServerOptions{Clusters: []string{"cluster-a", "cluster-b"}})
	e.ms.Update("", testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port, LRSOnA: true}))
	tc, _ := e.dial(t, "xds:///svc", resolver.WithLoadReportTransport(ls.TransportBuilder()))
	waitForCanary(ctx, t, tc)
	countServers(ctx, t, tc, classDefault, 2000)
	served := uint64(a.served.Load())

	reqs, err := ls.WaitForRequests(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f := reqs[0].GetNode().GetClientFeatures(); !slices.Contains(f, lrs.FeatureSendAllClusters) {
		t.Errorf("first LRS request's node features = %v; want %q", f, lrs.FeatureSendAllClusters)
	}
	var got lrsTotals
	for n := 2; ; n++ {
		if reqs, err = ls.WaitForRequests(ctx, n); err != nil {
			t.Fatalf("LRS reports for cluster-a sum to %+v; want %d succeeded: %v", got, served, err)
		}
		if got = sumLRS(reqs, "cluster-a"); got.succeeded >= served {
			break
		}
	}
	if got.issued != served || got.succeeded != served || got.errored != 0 || got.dropped != 0 {
		t.Errorf("LRS reports for cluster-a sum to %+v; want issued = succeeded = %d (A served), no error or drop", got, served)
	}
	if other := sumLRS(reqs, "cluster-b"); other.reports != 0 {
		t.Errorf("cluster-b (no lrs_server) reported: %+v", other)
	}
	for _, r := range reqs[1:] {
		for _, cs := range r.GetClusterStats() {
			if d := cs.GetLoadReportInterval().AsDuration(); d.Seconds() < 0.9 {
				t.Errorf("report interval %v; want about 1 s or more (the minimum)", d)
			}
		}
	}
}
