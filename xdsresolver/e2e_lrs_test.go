// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

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
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithLoadReportTransport(ls.TransportBuilder()))
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

// countingProxy is a TCP proxy to target that counts the connections it
// accepts; it is closed when the test ends.
type countingProxy struct {
	addr     string
	accepted atomic.Int64
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	p := &countingProxy{addr: lis.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := lis.Accept()
			if err != nil {
				return // closed at the end of the test
			}
			p.accepted.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// TestResolver_E2E_LoadReportOnADSConnection checks that, by default,
// load is reported on the client's ADS connection: the
// management server also serves LRS, behind a proxy that counts
// connections; after the LRS server got reports for cluster-a, the
// proxy has accepted one connection only.
//
//  1. Serve testutil.Canary with LRSOnA from a management server that also serves LRS, through a counting proxy.
//  2. Dial with no load report option; make RPCs until A answers.
//  3. The LRS server receives a report for cluster-a.
//  4. The proxy accepted exactly one connection (ADS and LRS share it).
func TestResolver_E2E_LoadReportOnADSConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	ls := testutil.NewLRSServer(t, testutil.LRSServerOptions{Clusters: []string{"cluster-a"}})
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{LoadReporting: ls})
	proxy := startCountingProxy(t, ms.Address())
	e := newEnvOn(t, ms, testutil.BootstrapOptions{}, func(m map[string]any) {
		for _, s := range m["xds_servers"].([]any) {
			s.(map[string]any)["server_uri"] = proxy.addr
		}
	})
	ms.Update("", testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port, LRSOnA: true}))
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		reqs, err := ls.WaitForRequests(ctx, n)
		if err != nil {
			t.Fatalf("no LRS report for cluster-a: %v", err)
		}
		if sumLRS(reqs, "cluster-a").reports > 0 {
			break
		}
	}
	if got := proxy.accepted.Load(); got != 1 {
		t.Errorf("the management server accepted %d connections; want 1 (LRS on the ADS connection, R-22.1)", got)
	}
}
