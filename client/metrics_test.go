// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// cdsTypeName is the grpc.xds.resource_type of clusters.
const cdsTypeName = "envoy.config.cluster.v3.Cluster"

// updateKey is the label set of the resource_updates counters.
type updateKey struct{ target, server, resourceType string }

// updateCounts are the values of the resource_updates counters.
type updateCounts struct{ valid, invalid int64 }

// fakeMetrics is a client.MetricsRecorder that adds up what it is told.
type fakeMetrics struct {
	mu           sync.Mutex
	updates      map[updateKey]updateCounts
	records      int                  // RecordResourceUpdates calls
	failures     map[[2]string]int64  // by target, server
	read         func() client.Gauges // from RegisterGauges
	registered   int                  // RegisterGauges calls
	unregistered int                  // calls of the unregister func
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{updates: make(map[updateKey]updateCounts), failures: make(map[[2]string]int64)}
}

func (m *fakeMetrics) RecordResourceUpdates(u client.ResourceUpdates) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.Valid+u.Invalid == 0 || u.Valid < 0 || u.Invalid < 0 {
		panic("RecordResourceUpdates with nothing or a negative count to record")
	}
	k := updateKey{u.Target, u.Server, u.ResourceType}
	c := m.updates[k]
	c.valid += u.Valid
	c.invalid += u.Invalid
	m.updates[k] = c
	m.records++
}

func (m *fakeMetrics) RecordServerFailure(f client.ServerFailure) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures[[2]string{f.Target, f.Server}]++
}

func (m *fakeMetrics) RegisterGauges(read func() client.Gauges) func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read = read
	m.registered++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.unregistered++
	}
}

// counts returns the resource_updates counters of key.
func (m *fakeMetrics) counts(key updateKey) updateCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.updates[key]
}

// failuresOf returns the server_failure counter of target and server.
func (m *fakeMetrics) failuresOf(target, server string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failures[[2]string{target, server}]
}

// wantCounts fails the test unless the counters of key are want.
func (m *fakeMetrics) wantCounts(t *testing.T, step string, key updateKey, want updateCounts) {
	t.Helper()
	if got := m.counts(key); got != want {
		t.Fatalf("%s: resource_updates of %v = {valid %d, invalid %d}, want {valid %d, invalid %d}",
			step, key, got.valid, got.invalid, want.valid, want.invalid)
	}
}

// TestMetrics_ResourceUpdates_SotW checks the resource_updates counters
// over a scripted SotW server: per response, each wanted resource
// counts once (however many watchers it has), unchanged ones too;
// resources nobody watches do not count; an invalid resource, a repeated
// name (wanted or not, once per response) and an entry without a name
// count invalid, once each.
func TestMetrics_ResourceUpdates_SotW(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	m := newFakeMetrics()
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithMetrics(m))
	for _, name := range []string{"a", "a", "b"} { // a has two watchers
		defer client.Watch(c, resources.ClusterType, name, newRecorder[*resources.Cluster]())()
	}
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
	key := updateKey{client.DefaultTarget, ms.Address(), cdsTypeName}

	steps := []struct {
		name     string
		clusters []*v3clusterpb.Cluster
		want     updateCounts
	}{
		{"a, b and the unwatched c", []*v3clusterpb.Cluster{testutil.Cluster("a", ""), testutil.Cluster("b", ""), testutil.Cluster("c", "")}, updateCounts{2, 0}},
		{"the same again", []*v3clusterpb.Cluster{testutil.Cluster("a", ""), testutil.Cluster("b", ""), testutil.Cluster("c", "")}, updateCounts{4, 0}},
		{"a invalid, unwatched c twice", []*v3clusterpb.Cluster{invalidCluster("a"), testutil.Cluster("b", ""), testutil.Cluster("c", ""), testutil.Cluster("c", "")}, updateCounts{5, 2}},
		{"a twice", []*v3clusterpb.Cluster{testutil.Cluster("a", ""), testutil.Cluster("a", "x"), testutil.Cluster("a", "y"), testutil.Cluster("b", "")}, updateCounts{6, 3}},
		{"a cluster without a name", []*v3clusterpb.Cluster{testutil.Cluster("", ""), testutil.Cluster("a", ""), testutil.Cluster("b", "")}, updateCounts{8, 4}},
		{"nothing", nil, updateCounts{8, 4}},
	}
	for i, s := range steps {
		resp := &v3discoverypb.DiscoveryResponse{TypeUrl: resources.ClusterTypeURL, VersionInfo: string(rune('1' + i))}
		for _, cl := range s.clusters {
			resp.Resources = append(resp.Resources, testutil.MarshalAny(cl))
		}
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce) // the counters are recorded before the ACK or NACK is sent
		m.wantCounts(t, s.name, key, s.want)
	}
	if m.records != 5 {
		t.Errorf("RecordResourceUpdates calls = %d, want 5 (none for the empty response)", m.records)
	}
	if len(m.updates) != 1 || len(m.failures) != 0 {
		t.Errorf("recorded updates %v and failures %v, want only %v", m.updates, m.failures, key)
	}
}

// TestMetrics_ResourceUpdates_Wildcard checks that under a WatchAll every
// resource of the response is wanted and counts, once, even when
// it is also watched by name.
func TestMetrics_ResourceUpdates_Wildcard(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	m := newFakeMetrics()
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithMetrics(m))
	defer client.Watch(c, resources.ClusterType, "a", newRecorder[*resources.Cluster]())()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	defer client.WatchAll(c, resources.ClusterType, newRecorder[*resources.Cluster]())()
	waitForNames(t, ms, resources.ClusterTypeURL, "*", "a")
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1",
		testutil.Cluster("a", ""), testutil.Cluster("b", ""), invalidCluster("c")))
	if err != nil {
		t.Fatal(err)
	}
	waitForNonce(t, ms, nonce)
	m.wantCounts(t, "a, b and an invalid c under the wildcard", updateKey{client.DefaultTarget, ms.Address(), cdsTypeName}, updateCounts{2, 1})
}

// TestMetrics_ResourceUpdates_Delta checks the resource_updates counters
// over a scripted delta server: as in SotW, plus a resource
// wanted through an alias counts once, a heartbeat and
// removed_resources do not count, and a name both in resources and in
// removed_resources counts invalid once.
func TestMetrics_ResourceUpdates_Delta(t *testing.T) {
	ctx := testContext(t)
	m := newFakeMetrics()
	ms, c := manualDelta(t, false, client.WithMetrics(m), client.WithTarget("xds:///svc"))
	for _, name := range []string{"a", "b", "alias"} {
		defer client.Watch(c, resources.ClusterType, name, newRecorder[*resources.Cluster]())()
	}
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return len(r.Delta.GetResourceNamesSubscribe()) > 0 }); err != nil {
		t.Fatal(err)
	}
	key := updateKey{"xds:///svc", ms.Address(), cdsTypeName}
	cl := func(name, version string) deltaResource {
		return deltaResource{name: name, version: version, msg: testutil.Cluster(name, "")}
	}
	steps := []struct {
		name    string
		removed []string
		res     []deltaResource
		want    updateCounts
	}{
		{"a, b and the unwatched c", nil, []deltaResource{cl("a", "1"), cl("b", "1"), cl("c", "1")}, updateCounts{2, 0}},
		{"d through its alias", nil, []deltaResource{{name: "d", version: "1", msg: testutil.Cluster("d", ""), aliases: []string{"alias"}}}, updateCounts{3, 0}},
		{"heartbeat of b", nil, []deltaResource{{name: "b", version: "1"}}, updateCounts{3, 0}},
		{"a invalid, b removed", []string{"b"}, []deltaResource{{name: "a", version: "2", msg: invalidCluster("a")}}, updateCounts{3, 1}},
		{"a twice, a removed too", []string{"a"}, []deltaResource{cl("a", "3"), cl("a", "4")}, updateCounts{3, 2}},
		{"no name", nil, []deltaResource{{name: "", version: "1", msg: testutil.Cluster("", "")}, cl("a", "5")}, updateCounts{4, 3}},
	}
	for _, s := range steps {
		nonce := sendDelta(t, ms, deltaResponse(resources.ClusterTypeURL, s.removed, s.res...))
		if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Delta.GetResponseNonce() == nonce }); err != nil {
			t.Fatal(err)
		}
		m.wantCounts(t, s.name, key, s.want)
	}
}

// failingBuilder builds ADS transports whose streams always fail to open.
type failingBuilder struct{}

func (failingBuilder) Build(*bootstrap.ServerConfig, transport.BuildOptions) (transport.XDS, error) {
	return transport.ADS(failingTransport{}), nil
}

type failingTransport struct{}

func (failingTransport) NewStream(context.Context, string) (transport.Stream, error) {
	return nil, errors.New("connection refused")
}
func (failingTransport) Close() {}

// gatedBuilder wraps a transport.Builder: NewXDSStream waits until gate
// is closed.
type gatedBuilder struct {
	transport.Builder
	gate chan struct{}
}

func (b gatedBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.Builder.Build(sc, o)
	return gatedTransport{x, b.gate}, err
}

type gatedTransport struct {
	transport.XDS
	gate chan struct{}
}

func (tr gatedTransport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	select {
	case <-tr.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return tr.XDS.NewXDSStream(ctx, spec)
}

// waitChanged waits for ResourceChanged, skipping the errors of the
// failed attempts before.
func waitChanged[T any](ctx context.Context, t *testing.T, w *recorder[T]) {
	t.Helper()
	for w.next(ctx, t).kind != changed {
	}
}

// connected returns the connected gauge of every server.
func connected(c *client.Client) []client.ServerConnected { return c.Gauges().Connected }

// wantConnected fails the test unless the client has exactly one server,
// whose connected gauge is want.
func wantConnected(t *testing.T, step string, c *client.Client, want bool) {
	t.Helper()
	got := connected(c)
	if len(got) != 1 || got[0].Server != testutil.InMemoryAddress || got[0].Connected != want {
		t.Fatalf("%s: connected gauge = %+v, want [{%s %v}]", step, got, testutil.InMemoryAddress, want)
	}
}

// TestMetrics_Connected checks the connected gauge over a
// scripted server: no value before anything is watched; 0 while the first
// stream is being created; 1 once it is, before any response; after a
// stream failed without a response, 0 while retrying and on a new stream
// until its first response, 1 from then on, until a stream fails before
// any response. Retiring the stream (nothing watched) removes the value.
func TestMetrics_Connected(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		gate := make(chan struct{})
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(gatedBuilder{ms.TransportBuilder(), gate}))
		if got := connected(c); len(got) != 0 {
			t.Fatalf("connected gauge before any watch = %+v, want none", got)
		}
		w := newRecorder[*resources.Cluster]()
		cancel := client.Watch(c, resources.ClusterType, "a", w)
		synctest.Wait()
		wantConnected(t, "creating the first stream", c, false)
		close(gate)
		synctest.Wait()
		wantConnected(t, "first stream created, no response yet", c, true)

		// The stream ends without a response; the server stays down.
		ms.RejectStreams(errors.New("down"))
		ms.BreakStreams()
		w.wantKind(ctx, t, resourceError, client.ErrConnection)
		wantConnected(t, "after the stream failed", c, false)
		time.Sleep(5 * time.Minute) // fake time: retries
		wantConnected(t, "retrying", c, false)

		ms.RejectStreams(nil)
		// Until the next attempt (at most the longest backoff, 2 min) opens
		// a stream, in steps of fake time short enough that the stream
		// does not live 10 s, which would make it healthy.
		for i := 0; ms.OpenStreams() == 0; i++ {
			if i == 200 {
				t.Fatal("no stream opened within 200 s of the server coming back")
			}
			time.Sleep(time.Second)
		}
		wantConnected(t, "new stream, no response yet", c, false)
		if _, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""))); err != nil {
			t.Fatal(err)
		}
		waitChanged(ctx, t, w)
		wantConnected(t, "after a response", c, true)

		// A stream that had responses ends with the server down: the next
		// attempt is immediate and fails.
		ms.RejectStreams(errors.New("down again"))
		ms.BreakStreams()
		w.wantKind(ctx, t, ambientError, client.ErrConnection)
		wantConnected(t, "after the new stream failed", c, false)

		cancel()
		synctest.Wait()
		if got := connected(c); len(got) != 0 {
			t.Fatalf("connected gauge with nothing watched = %+v, want none", got)
		}
	})
}

// TestMetrics_Connected_StreamCreationFails checks that the connected
// gauge stays 0 when no stream can be created, and that
// server_failure counts 1 however often the client retries.
func TestMetrics_Connected_StreamCreationFails(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		m := newFakeMetrics()
		rb := newRecordingBuilder(failingBuilder{})
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb), client.WithMetrics(m))
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		w.wantKind(ctx, t, resourceError, client.ErrConnection)
		for range 5 {
			w.wantKind(ctx, t, resourceError, client.ErrConnection)
			wantConnected(t, "retrying", c, false)
		}
		if n := len(rb.streamsOpened()); n < 6 {
			t.Fatalf("stream attempts = %d, want at least 6", n)
		}
		if got := m.failuresOf(client.DefaultTarget, testutil.InMemoryAddress); got != 1 {
			t.Fatalf("server_failure = %d after 6 failed attempts, want 1", got)
		}
	})
}

// TestMetrics_ServerFailure_CountsTransitions checks server_failure
// one per transition from healthy to unhealthy, not one per
// failed attempt (grpc-go's over-count); a stream that had responses and
// ends is no failure; watching again a server that stayed down is no new
// transition; a response makes the server healthy again.
func TestMetrics_ServerFailure_CountsTransitions(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Clusters: namedClusters("a")})
		m := newFakeMetrics()
		rb := newRecordingBuilder(ms.TransportBuilder())
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb), client.WithMetrics(m), client.WithTarget("xds:///svc"))
		failures := func() int64 { return m.failuresOf("xds:///svc", testutil.InMemoryAddress) }

		ms.RejectStreams(errors.New("down"))
		w := newRecorder[*resources.Cluster]()
		cancel := client.Watch(c, resources.ClusterType, "a", w)
		w.wantKind(ctx, t, resourceError, client.ErrConnection)
		time.Sleep(10 * time.Minute) // fake time: about 8 more attempts
		if n := len(rb.streamsOpened()); n < 5 {
			t.Fatalf("stream attempts = %d, want at least 5", n)
		}
		if got := failures(); got != 1 {
			t.Fatalf("server_failure after %d failed attempts = %d, want 1", len(rb.streamsOpened()), got)
		}

		// Nothing watched, then watched again: the new stream fails too,
		// and the server was unhealthy already.
		cancel()
		synctest.Wait()
		w = newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		w.wantKind(ctx, t, resourceError, client.ErrConnection)
		if got := failures(); got != 1 {
			t.Fatalf("server_failure after watching the down server again = %d, want 1", got)
		}

		ms.RejectStreams(nil)
		waitChanged(ctx, t, w)
		ms.BreakStreams() // a stream that had responses ends: no failure
		synctest.Wait()
		time.Sleep(5 * time.Minute)
		if got := failures(); got != 1 {
			t.Fatalf("server_failure after a stream with responses ended = %d, want 1", got)
		}

		ms.RejectStreams(errors.New("down again"))
		ms.BreakStreams()
		w.wantKind(ctx, t, ambientError, client.ErrConnection)
		time.Sleep(10 * time.Minute)
		if got := failures(); got != 2 {
			t.Fatalf("server_failure after the server went down again = %d, want 2", got)
		}
		if len(m.failures) != 1 {
			t.Fatalf("server_failure label sets = %v, want one", m.failures)
		}
	})
}

// TestMetrics_ResourcesGauge checks the resources gauge (R-21.1, gRFC A78
// and A88 cache states) through a resource's life: requested, acked,
// does_not_exist (watch expiry and deletion), nacked, nacked_but_cached,
// and the authority label of old-style and xdstp names.
func TestMetrics_ResourcesGauge(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		const x = "xdstp://auth.example/envoy.config.cluster.v3.Cluster/x"
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Version: "1", Clusters: namedClusters("a", x)})
		c := newClient(t, ms, testutil.BootstrapOptions{Authorities: map[string]string{"auth.example": ""}})
		w := map[string]*recorder[*resources.Cluster]{}
		for _, name := range []string{"a", "b", "missing", x} {
			w[name] = newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, name, w[name])()
		}
		count := func(authority, state string, n int64) client.ResourceCount {
			return client.ResourceCount{Authority: authority, ResourceType: cdsTypeName, CacheState: state, Count: n}
		}
		want := func(step string, counts ...client.ResourceCount) {
			t.Helper()
			synctest.Wait()
			got := c.Gauges()
			if diff := cmp.Diff(client.Gauges{Target: client.DefaultTarget, Connected: got.Connected, Resources: counts}, got); diff != "" {
				t.Fatalf("%s: gauges (-want, +got):\n%s", step, diff)
			}
		}
		w["a"].wantKind(ctx, t, changed, nil)
		w[x].wantKind(ctx, t, changed, nil)
		want("first response", count(client.OldStyleAuthority, client.CacheStateACKed, 1), count(client.OldStyleAuthority, client.CacheStateRequested, 2), count("auth.example", client.CacheStateACKed, 1))

		time.Sleep(15 * time.Second) // the watch expiry timeout, in fake time
		w["b"].wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		want("watch expired", count(client.OldStyleAuthority, client.CacheStateACKed, 1), count(client.OldStyleAuthority, client.CacheStateDoesNotExist, 2), count("auth.example", client.CacheStateACKed, 1))

		ms.Update("", testutil.Resources{Version: "2", Clusters: []*v3clusterpb.Cluster{invalidCluster("a"), invalidCluster("b"), testutil.Cluster(x, "eds")}})
		w["a"].wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
		w["b"].wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
		want("a and b invalid", count(client.OldStyleAuthority, client.CacheStateDoesNotExist, 1), count(client.OldStyleAuthority, client.CacheStateNACKed, 1), count(client.OldStyleAuthority, client.CacheStateNACKedButCached, 1), count("auth.example", client.CacheStateACKed, 1))

		ms.Update("", testutil.Resources{Version: "3", Clusters: namedClusters(x)})
		w["a"].wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		want("a deleted", count(client.OldStyleAuthority, client.CacheStateDoesNotExist, 2), count(client.OldStyleAuthority, client.CacheStateNACKed, 1), count("auth.example", client.CacheStateACKed, 1))
	})
}

// TestMetrics_ResourcesGauge_DeletionIgnored checks that a deletion the
// client ignores (ignore_resource_deletion, R-2.1) shows as
// does_not_exist_but_cached (gRFC A88), and acked again once the resource
// is back.
func TestMetrics_ResourcesGauge_DeletionIgnored(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Version: "1", Clusters: namedClusters("a")})
		c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: []string{bootstrap.FeatureIgnoreResourceDeletion}})
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		w.wantKind(ctx, t, changed, nil)
		states := func() []client.ResourceCount { synctest.Wait(); return c.Gauges().Resources }
		acked := []client.ResourceCount{{Authority: "#old", ResourceType: cdsTypeName, CacheState: "acked", Count: 1}}
		if diff := cmp.Diff(acked, states()); diff != "" {
			t.Fatalf("resources gauge (-want, +got):\n%s", diff)
		}
		ms.Update("", testutil.Resources{Version: "2"})
		want := []client.ResourceCount{{Authority: "#old", ResourceType: cdsTypeName, CacheState: "does_not_exist_but_cached", Count: 1}}
		if diff := cmp.Diff(want, states()); diff != "" {
			t.Fatalf("resources gauge after an ignored deletion (-want, +got):\n%s", diff)
		}
		ms.Update("", testutil.Resources{Version: "3", Clusters: namedClusters("a")})
		if diff := cmp.Diff(acked, states()); diff != "" {
			t.Fatalf("resources gauge once the resource is back (-want, +got):\n%s", diff)
		}
	})
}

// TestMetrics_RegisterGauges checks that New registers the client's gauges
// with the recorder once, that reading them there is Gauges, and that
// Close unregisters them; Gauges after Close is empty.
func TestMetrics_RegisterGauges(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{Clusters: namedClusters("a")})
	m := newFakeMetrics()
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithMetrics(m), client.WithTarget("xds:///svc"))
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	w.wantKind(ctx, t, changed, nil)
	if m.registered != 1 || m.unregistered != 0 {
		t.Fatalf("RegisterGauges calls = %d, unregistered %d; want 1, 0", m.registered, m.unregistered)
	}
	want := client.Gauges{
		Target:    "xds:///svc",
		Connected: []client.ServerConnected{{Server: ms.Address(), Connected: true}},
		Resources: []client.ResourceCount{{Authority: "#old", ResourceType: cdsTypeName, CacheState: "acked", Count: 1}},
	}
	if diff := cmp.Diff(want, m.read()); diff != "" {
		t.Fatalf("gauges read by the recorder (-want, +got):\n%s", diff)
	}
	c.Close()
	if m.unregistered != 1 {
		t.Fatalf("unregistered %d times after Close, want 1", m.unregistered)
	}
	if diff := cmp.Diff(client.Gauges{Target: "xds:///svc"}, c.Gauges()); diff != "" {
		t.Fatalf("gauges after Close (-want, +got):\n%s", diff)
	}
}

// reentrantMetrics is a client.MetricsRecorder that calls back into its
// client from every Record method: Dump, and a Watch that it cancels at
// once. A call that does not return within defaultTestTimeout (the
// client's lock held while the recorder runs) is reported as a deadlock
// and given up, so that the test fails instead of hanging.
type reentrantMetrics struct {
	c        atomic.Pointer[client.Client]
	updates  chan error // one value per RecordResourceUpdates: nil, or the deadlock
	failures chan error // one value per RecordServerFailure
}

func (m *reentrantMetrics) callBack() error {
	c := m.c.Load()
	if c == nil {
		return nil
	}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		c.Dump()
		client.Watch(c, resources.ClusterType, "from-the-recorder", watcher.Funcs[*resources.Cluster]{})()
	}()
	t := time.NewTimer(defaultTestTimeout)
	defer t.Stop()
	select {
	case <-returned:
		return nil
	case <-t.C:
		return errors.New("the recorder could not call the client: it runs under the client's lock")
	}
}

func (m *reentrantMetrics) RecordResourceUpdates(client.ResourceUpdates) {
	select {
	case m.updates <- m.callBack():
	default:
	}
}

func (m *reentrantMetrics) RecordServerFailure(client.ServerFailure) {
	select {
	case m.failures <- m.callBack():
	default:
	}
}

func (m *reentrantMetrics) RegisterGauges(func() client.Gauges) func() { return func() {} }

// TestMetrics_RecorderRunsWithoutTheLock checks that the MetricsRecorder,
// user code, is not called with the client's lock held (docs/style.md
// "Concurrency"): a recorder that calls Dump and Watch from
// RecordResourceUpdates and RecordServerFailure does not deadlock, and
// both records arrive. On c70070a both were called under Client.mu.
func TestMetrics_RecorderRunsWithoutTheLock(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	m := &reentrantMetrics{updates: make(chan error, 100), failures: make(chan error, 100)}
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithMetrics(m))
	m.c.Store(c)
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.wantKind(ctx, t, changed, nil)
	wantRecord := func(ch chan error, what string) {
		t.Helper()
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-ctx.Done():
			t.Fatalf("no %s recorded", what)
		}
	}
	wantRecord(m.updates, "RecordResourceUpdates")

	ms.RejectStreams(errors.New("down"))
	ms.BreakStreams()
	w.wantKind(ctx, t, ambientError, client.ErrConnection)
	wantRecord(m.failures, "RecordServerFailure")
	ms.RejectStreams(nil)
}
