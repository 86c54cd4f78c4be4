// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// The scale load of the dependency manager issue, the same as the
// interop module's BenchmarkGRPCGo_XDSResolver (which measures grpc-go
// v1.85's xDS client on it): one Listener "svc", one RouteConfiguration
// with n routes (route i matches "/svc-i/" and goes to cluster i, then a
// catch-all route to cluster 0), n EDS clusters and n
// ClusterLoadAssignments with 3 endpoints each; n is scaleN = 10,000 in
// the issue.
const scaleN = 10_000

func scaleClusterName(i int) string { return fmt.Sprintf("cluster-%05d", i) }
func scaleEDSName(i int) string     { return fmt.Sprintf("eds-%05d", i) }
func scaleHost(i int) string        { return fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff) }

func scaleResources(n int) testutil.Resources {
	res := testutil.Resources{Listeners: listeners(testutil.Listener("svc", "route-svc"))}
	vh := testutil.VirtualHost("svc-vh", []string{"svc"})
	for i := range n {
		vh.Routes = append(vh.Routes, testutil.ClusterRoute(fmt.Sprintf("/svc-%05d/", i), scaleClusterName(i)))
		res.Clusters = append(res.Clusters, testutil.Cluster(scaleClusterName(i), scaleEDSName(i)))
		res.Endpoints = append(res.Endpoints, testutil.Endpoints(scaleEDSName(i), scaleHost(i), 8080, 8081, 8082))
	}
	vh.Routes = append(vh.Routes, testutil.ClusterRoute("/", scaleClusterName(0)))
	res.Routes = routes(testutil.RouteConfigWithVirtualHosts("route-svc", vh))
	return res
}

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// latest is a watcher of a Manager that keeps only the newest snapshot.
type latest struct {
	updates chan *depmgr.XDSConfig // cap 1
}

func (l *latest) ResourceChanged(cfg *depmgr.XDSConfig, done func()) {
	defer done()
	select {
	case <-l.updates: // drop the older one
	default:
	}
	l.updates <- cfg
}

func (l *latest) ResourceError(err error, done func()) {
	panic(fmt.Sprintf("whole-config error: %v", err))
}

func (l *latest) AmbientError(err error, done func()) { done() }

// wait returns the next ResourceChanged for which ok holds.
func (l *latest) wait(ctx context.Context, ok func(*depmgr.XDSConfig) bool) (*depmgr.XDSConfig, error) {
	for {
		select {
		case cfg := <-l.updates:
			if ok(cfg) {
				return cfg, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// BenchmarkMesh1000 and BenchmarkMesh10000 measure the scale load of
// 1,000 and 10,000 clusters served by the testutil management server in a
// child process (testutil.StartServerProcess, TestHelperMeshServer) over
// gRPC on loopback, with a new client per iteration, SotW and delta:
//   - acked: a raw client whose watches are added from watcher callbacks,
//     as a resolver adds them (the Listener's callback watches its
//     RouteConfiguration, that one's every route's cluster, a Cluster's
//     its ClusterLoadAssignment), until every ClusterLoadAssignment
//     watcher has its value;
//   - snapshot: depmgr.New to the first complete snapshot.
//
// Besides ns/op, B/op and allocs/op (of that part only), it reports:
//   - x-unmarshal: ns/op ÷ the time proto.Unmarshal takes for the same
//     resources (measured in the same iteration, so that the load of a
//     shared machine weighs on both alike): the physical floor;
//   - heap-MiB: the live heap then, above what was live before: the
//     client (its cache) and the Manager, nothing of the server's;
//   - lds-reqs, rds-reqs, cds-reqs, eds-reqs: requests per iteration
//     that change the subscribed names of the type (the first one
//     included; ACKs that change nothing are not counted), counted in
//     the child: one per type when subscription changes are coalesced.
//
// B/op and allocs/op count the client and the Manager only.
func BenchmarkMesh10000(b *testing.B) { benchmarkMesh(b, scaleN) }

// BenchmarkMesh1000 is BenchmarkMesh10000 with 1,000 clusters.
func BenchmarkMesh1000(b *testing.B) { benchmarkMesh(b, 1000) }

func benchmarkMesh(b *testing.B, n int) {
	for _, delta := range []bool{false, true} {
		b.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(b *testing.B) {
			// The server is in a child process: heap-MiB counts the
			// client alone.
			srv := testutil.StartServerProcess(b, "TestHelperMeshServer")
			res := scaleResources(n)
			if err := srv.Update("", res); err != nil {
				b.Fatal(err)
			}
			wire := marshalResources(b, res)
			b.Run("acked", func(b *testing.B) { benchmarkMeshRun(b, srv, wire, n, delta, runAcked) })
			b.Run("snapshot", func(b *testing.B) { benchmarkMeshRun(b, srv, wire, n, delta, runSnapshot) })
		})
	}
}

// TestHelperMeshServer is the management server of the mesh benchmarks,
// in the child process of testutil.StartServerProcess; it is skipped in
// normal test runs. It keeps no request log, and counts with a
// requestCounter the requests that change the subscribed names; its
// command "counts" returns the counts per type URL since the last
// "counts" (map[string]int).
func TestHelperMeshServer(t *testing.T) {
	counter := newRequestCounter()
	testutil.ServeProcess(t, testutil.ProcessOptions{
		Server: testutil.ServerOptions{OnRequest: counter.add},
		Commands: map[string]testutil.ProcessCommand{
			"counts": func(json.RawMessage) (any, error) { return counter.take(), nil },
		},
	})
}

// takeCounts returns the counts of TestHelperMeshServer's requestCounter
// since the last call.
func takeCounts(b *testing.B, srv *testutil.ServerProcess) map[string]int {
	var counts map[string]int
	if err := srv.Call("counts", nil, &counts); err != nil {
		b.Fatal(err)
	}
	return counts
}

// A meshRun starts watching the mesh of n clusters on c and returns when
// it is complete, with what to release once measured.
type meshRun func(ctx context.Context, c *client.Client, n int) (release func(), err error)

func benchmarkMeshRun(b *testing.B, srv *testutil.ServerProcess, wire []wireResource, n int, delta bool, run meshRun) {
	// The default transport (grpctransport), insecure credentials.
	bootstrap := srv.Bootstrap(testutil.BootstrapOptions{NodeID: "depmgr-test"})
	var opts []client.Option
	if delta {
		opts = append(opts, client.WithDelta())
	}
	var elapsed, floor time.Duration
	var live uint64
	reqs := map[string]int{}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
		takeCounts(b, srv) // forget those of the previous iteration's end
		base := liveHeap()
		b.StartTimer()
		start := time.Now()
		c := newClientOf(b, bootstrap, opts...)
		release, err := run(ctx, c, n)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		live += liveHeap() - base
		for typeURL, k := range takeCounts(b, srv) {
			reqs[typeURL] += k
		}
		release()
		c.Close()
		cancel()
		floor += unmarshalFloor(b, wire)
		b.StartTimer()
	}
	b.ReportMetric(float64(elapsed)/float64(floor), "x-unmarshal")
	b.ReportMetric(float64(live)/float64(b.N)/(1<<20), "heap-MiB")
	for _, t := range []struct{ typeURL, unit string }{
		{resources.ListenerTypeURL, "lds-reqs/op"},
		{resources.RouteConfigTypeURL, "rds-reqs/op"},
		{resources.ClusterTypeURL, "cds-reqs/op"},
		{resources.EndpointsTypeURL, "eds-reqs/op"},
	} {
		b.ReportMetric(float64(reqs[t.typeURL])/float64(b.N), t.unit)
	}
}

// runSnapshot is the depmgr run: New to the first complete snapshot.
func runSnapshot(ctx context.Context, c *client.Client, n int) (func(), error) {
	w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
	m := depmgr.New(c, "svc", w)
	cfg, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true })
	if err == nil && cfg.NumClusters() != n {
		err = fmt.Errorf("snapshot has %d clusters, want %d", cfg.NumClusters(), n)
	}
	return m.Close, err
}

// runAcked is the raw client run: watches added from callbacks down the
// tree, until every ClusterLoadAssignment watcher has its value.
func runAcked(ctx context.Context, c *client.Client, n int) (func(), error) {
	var (
		mu      sync.Mutex
		cancels []func()
		seen    = map[string]bool{}
		left    = n
		all     = make(chan struct{})
	)
	watch := func(cancel func()) {
		mu.Lock()
		cancels = append(cancels, cancel)
		mu.Unlock()
	}
	onEndpoints := func(e *resources.Endpoints) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[e.ClusterName] {
			seen[e.ClusterName] = true
			if left--; left == 0 {
				close(all)
			}
		}
	}
	onCluster := func(cl *resources.Cluster) {
		watch(client.Watch(c, resources.EndpointsType, cl.EDSServiceName, watcher.Funcs[*resources.Endpoints]{OnChanged: onEndpoints}))
	}
	onRouteConfig := func(rc *resources.RouteConfig) {
		wanted := map[string]bool{}
		for _, vh := range rc.VirtualHosts {
			for _, r := range vh.Routes {
				if name := r.Action.Cluster; name != "" {
					wanted[name] = true
				}
			}
		}
		for name := range wanted {
			watch(client.Watch(c, resources.ClusterType, name, watcher.Funcs[*resources.Cluster]{OnChanged: onCluster}))
		}
	}
	onListener := func(l *resources.Listener) {
		watch(client.Watch(c, resources.RouteConfigType, l.RouteConfigName, watcher.Funcs[*resources.RouteConfig]{OnChanged: onRouteConfig}))
	}
	watch(client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{OnChanged: onListener}))
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, cancel := range cancels {
			cancel()
		}
	}
	select {
	case <-all:
		return release, nil
	case <-ctx.Done():
		return release, ctx.Err()
	}
}

// requestCounter counts, per type URL, the requests that change the names
// a stream subscribes to: in SotW, a request whose names differ from the
// previous request of the type on the stream (the first one included); in
// delta, one that subscribes or unsubscribes a name. It keeps a hash of
// the last names per stream and type, not the requests, so that the
// server's memory stays out of the client's heap figure. It is the
// testutil server's OnRequest (in TestHelperMeshServer, that of the
// child process).
type requestCounter struct {
	mu     sync.Mutex
	last   map[requestKey]uint64 // SotW: hash of the last names
	counts map[string]int        // since the last take
}

func newRequestCounter() *requestCounter {
	return &requestCounter{last: map[requestKey]uint64{}, counts: map[string]int{}}
}

type requestKey struct {
	stream  int64
	typeURL string
}

func (rc *requestCounter) add(r *testutil.Request) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if d := r.Delta; d != nil {
		if len(d.GetResourceNamesSubscribe())+len(d.GetResourceNamesUnsubscribe()) > 0 {
			rc.counts[d.GetTypeUrl()]++
		}
		return
	}
	h := fnv.New64a()
	for _, name := range r.Req.GetResourceNames() {
		h.Write([]byte(name))
		h.Write([]byte{0})
	}
	k := requestKey{r.StreamID, r.Req.GetTypeUrl()}
	if prev, ok := rc.last[k]; !ok || prev != h.Sum64() {
		rc.counts[k.typeURL]++
		rc.last[k] = h.Sum64()
	}
}

// take returns the counts since the last take, and forgets them (not the
// last names of open streams).
func (rc *requestCounter) take() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	counts := maps.Clone(rc.counts)
	clear(rc.counts)
	return counts
}

// wireResource is one serialized resource of the load, with a func that
// returns an empty message of its type.
type wireResource struct {
	b      []byte
	newMsg func() proto.Message
}

// marshalResources returns the serialized resources of res, every type.
func marshalResources(b *testing.B, res testutil.Resources) []wireResource {
	var out []wireResource
	add := func(m proto.Message) {
		w, err := proto.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, wireResource{b: w, newMsg: func() proto.Message { return m.ProtoReflect().Type().New().Interface() }})
	}
	for _, m := range res.Listeners {
		add(m)
	}
	for _, m := range res.Routes {
		add(m)
	}
	for _, m := range res.Clusters {
		add(m)
	}
	for _, m := range res.Endpoints {
		add(m)
	}
	return out
}

// unmarshalFloor returns how long proto.Unmarshal of every resource of
// wire takes.
func unmarshalFloor(b *testing.B, wire []wireResource) time.Duration {
	start := time.Now()
	for _, w := range wire {
		if err := proto.Unmarshal(w.b, w.newMsg()); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// hasPort returns a condition on snapshots: cluster i's only endpoint is on
// port.
func hasPort(i int, port uint32) func(*depmgr.XDSConfig) bool {
	want := fmt.Sprintf("%s:%d", scaleHost(i), port)
	return func(cfg *depmgr.XDSConfig) bool {
		a := addresses(cfg.Cluster(scaleClusterName(i)).Config.Endpoints)
		return len(a) == 1 && a[0] == want
	}
}

// BenchmarkDepMgr_10k_CLAChange measures one update on the scale load:
// from sending a response that carries one changed ClusterLoadAssignment
// (of a cluster picked in turn) to the snapshot that has it, with
// allocations. The Manager and its client are set up once.
func BenchmarkDepMgr_10k_CLAChange(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	ms.Update("", scaleResources(scaleN))
	c := newClient(b, ms)
	w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
	m := depmgr.New(c, "svc", w)
	defer m.Close()
	if _, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Every cluster in turn (7919 is prime to scaleN), each round
		// with a port other than the last round's: a change every time,
		// however large b.N.
		cluster, port := i*7919%scaleN, 9000+uint32(i/scaleN%2)
		resp := &v3discoverypb.DiscoveryResponse{
			VersionInfo: fmt.Sprint("scripted-", i),
			TypeUrl:     resources.EndpointsTypeURL,
			Resources:   []*anypb.Any{testutil.MarshalAny(testutil.Endpoints(scaleEDSName(cluster), scaleHost(cluster), port))},
		}
		if _, err := ms.SendResponse(ctx, resp); err != nil {
			b.Fatal(err)
		}
		if _, err := w.wait(ctx, hasPort(cluster, port)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDepMgr_10k_EndpointsCallback measures the Manager's share of
// one update on the scale load: from the client's ResourceChanged call
// with new endpoints of one cluster to the watcher's ResourceChanged with them
// (the rebuild, the copy of the cluster map, the hop to the watcher's
// goroutine), without the network and the client.
func BenchmarkDepMgr_10k_EndpointsCallback(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	ms.Update("", scaleResources(scaleN))
	c := newClient(b, ms)
	w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
	m := depmgr.New(c, "svc", w)
	defer m.Close()
	if _, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true }); err != nil {
		b.Fatal(err)
	}
	// Two values of cluster 7's endpoints, handed over in turn: each is a
	// change.
	var values [2]*resources.Endpoints
	for i := range values {
		_, v, err := resources.EndpointsType.DecodeTyped(testutil.MarshalAny(testutil.Endpoints(scaleEDSName(7), scaleHost(7), 9000+uint32(i))))
		if err != nil {
			b.Fatal(err)
		}
		values[i] = v
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := values[i%2]
		if !m.DeliverEndpoints(scaleEDSName(7), v) {
			b.Fatal("no watch of ", scaleEDSName(7))
		}
		if _, err := w.wait(ctx, func(cfg *depmgr.XDSConfig) bool {
			return cfg.Cluster(scaleClusterName(7)).Config.Endpoints == v
		}); err != nil {
			b.Fatal(err)
		}
	}
}
