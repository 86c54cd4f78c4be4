// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	// defaultTestTimeout bounds waits for what must happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout bounds waits for what must not happen.
	defaultTestShortTimeout = 10 * time.Millisecond
)

// event is one call of the recorder's watcher methods.
type event struct {
	cfg     *depmgr.XDSConfig // ResourceChanged
	err     error             // ResourceError
	ambient error             // AmbientError
}

func (e event) String() string {
	switch {
	case e.cfg != nil:
		return "ResourceChanged(" + describe(e.cfg) + ")"
	case e.err != nil:
		return fmt.Sprintf("ResourceError(%v)", e.err)
	default:
		return fmt.Sprintf("AmbientError(%v)", e.ambient)
	}
}

// recorder is a watcher of a Manager that queues every call for the test
// and calls done at once.
type recorder struct {
	events chan event
}

func newRecorder() *recorder { return &recorder{events: make(chan event, 1000)} }

func (r *recorder) ResourceChanged(cfg *depmgr.XDSConfig, done func()) {
	defer done()
	r.events <- event{cfg: cfg}
}

func (r *recorder) ResourceError(err error, done func()) {
	defer done()
	r.events <- event{err: err}
}

func (r *recorder) AmbientError(err error, done func()) {
	defer done()
	r.events <- event{ambient: err}
}

// next returns the next call, or an error when ctx ends first.
func (r *recorder) next(ctx context.Context) (event, error) {
	select {
	case ev := <-r.events:
		return ev, nil
	case <-ctx.Done():
		return event{}, fmt.Errorf("waiting for a watcher call: %w", ctx.Err())
	}
}

// waitForChanged returns the first ResourceChanged whose config satisfies ok,
// skipping the calls before it. It fails the test on an ResourceError call, or
// when ctx ends first.
func (r *recorder) waitForChanged(ctx context.Context, t *testing.T, what string, ok func(*depmgr.XDSConfig) bool) *depmgr.XDSConfig {
	t.Helper()
	var seen []string
	for {
		ev, err := r.next(ctx)
		if err != nil {
			t.Fatalf("%s: %v; calls so far: %q", what, err, seen)
		}
		seen = append(seen, ev.String())
		if ev.err != nil {
			t.Fatalf("%s: got %v", what, ev)
		}
		if ev.cfg != nil && ok(ev.cfg) {
			return ev.cfg
		}
	}
}

// waitForResourceError returns the next ResourceError call, skipping
// ResourceChanged calls and ambient errors; it fails the test when ctx
// ends first.
func (r *recorder) waitForResourceError(ctx context.Context, t *testing.T) error {
	t.Helper()
	var seen []string
	for {
		ev, err := r.next(ctx)
		if err != nil {
			t.Fatalf("waiting for ResourceError: %v; calls so far: %q", err, seen)
		}
		if ev.err != nil {
			return ev.err
		}
		seen = append(seen, ev.String())
	}
}

// expectNoCall fails the test if the watcher is called within
// defaultTestShortTimeout.
func (r *recorder) expectNoCall(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestShortTimeout)
	defer cancel()
	if ev, err := r.next(ctx); err == nil {
		t.Fatalf("unexpected watcher call %v", ev)
	}
}

// testContext returns a context bounded by defaultTestTimeout.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a client of ms; it is closed when the test ends.
func newClient(t testing.TB, ms *testutil.ManagementServer, opts ...client.Option) *client.Client {
	t.Helper()
	return newClientOf(t, ms.Bootstrap(testutil.BootstrapOptions{NodeID: "depmgr-test"}),
		append([]client.Option{client.WithTransportBuilder(ms.TransportBuilder())}, opts...)...)
}

// newClientOf is newClient for the bootstrap file b.
func newClientOf(t testing.TB, b []byte, opts ...client.Option) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// env is one test's management server, client, Manager and recorder.
type env struct {
	ms  *testutil.ManagementServer
	c   *client.Client
	m   *depmgr.Manager
	rec *recorder
}

// newEnv starts a management server over gRPC on loopback serving res,
// and a Manager of the Listener "svc" on a client of it. Everything is
// closed when the test ends.
func newEnv(t *testing.T, res testutil.Resources, opts ...depmgr.Option) *env {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", res)
	c := newClient(t, ms)
	rec := newRecorder()
	m := depmgr.New(c, "svc", rec, opts...)
	t.Cleanup(m.Close) // runs before c.Close
	return &env{ms: ms, c: c, m: m, rec: rec}
}

// listeners, routes, clusters and endpoints shorten resource lists.
func listeners(l ...*v3listenerpb.Listener) []*v3listenerpb.Listener            { return l }
func routes(r ...*v3routepb.RouteConfiguration) []*v3routepb.RouteConfiguration { return r }
func clusters(c ...*v3clusterpb.Cluster) []*v3clusterpb.Cluster                 { return c }
func endpoints(e ...*v3endpointpb.ClusterLoadAssignment) []*v3endpointpb.ClusterLoadAssignment {
	return e
}

// edsChain returns, for each name c, an EDS cluster c with the EDS service
// name "eds-"+c and its ClusterLoadAssignment, one endpoint 127.0.0.1:port
// (port 8000 + the index of c).
func edsChain(names ...string) ([]*v3clusterpb.Cluster, []*v3endpointpb.ClusterLoadAssignment) {
	var cs []*v3clusterpb.Cluster
	var es []*v3endpointpb.ClusterLoadAssignment
	for i, c := range names {
		cs = append(cs, testutil.Cluster(c, "eds-"+c))
		es = append(es, testutil.Endpoints("eds-"+c, "127.0.0.1", uint32(8000+i)))
	}
	return cs, es
}

// describe renders a config on one line, for messages and comparisons:
// "L=svc RC=route-svc VH=svc-vh c1=[127.0.0.1:8000] c2=ERR(…)".
func describe(cfg *depmgr.XDSConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "L=%s RC=%s VH=%s", cfg.Listener.Name, cfg.RouteConfig.Name, cfg.VirtualHost.Name)
	for _, n := range cfg.ClusterNames() {
		fmt.Fprintf(&b, " %s=%s", n, describeResult(cfg.Cluster(n)))
	}
	return b.String()
}

func describeResult(r *depmgr.ClusterResult) string {
	if r.Err != nil {
		return "ERR"
	}
	if r.Config.IsAggregate() {
		var leaves []string
		for _, l := range r.Config.Leaves {
			leaves = append(leaves, l.Name+"="+describeLeaf(l))
		}
		return "AGG{" + strings.Join(leaves, " ") + "}"
	}
	return describeLeaf(r.Config)
}

func describeLeaf(l *depmgr.ClusterConfig) string {
	if l.ResolutionNote != nil {
		return "NOTE"
	}
	return "[" + strings.Join(addresses(l.Endpoints), ",") + "]"
}

// addresses returns every address of e, in order.
func addresses(e *resources.Endpoints) []string {
	var out []string
	for _, l := range e.Localities {
		for _, ep := range l.Endpoints {
			out = append(out, ep.Addresses...)
		}
	}
	return out
}

// clusterNames returns the names of cfg's top-level clusters, sorted.
func clusterNames(cfg *depmgr.XDSConfig) []string { return cfg.ClusterNames() }

// waitForSubscription waits until the client's latest request of typeURL
// on the server names exactly want (sorted): the client subscribes to
// those resources and to no other of the type.
func waitForSubscription(ctx context.Context, t *testing.T, ms *testutil.ManagementServer, typeURL string, want ...string) {
	t.Helper()
	slices.Sort(want)
	for {
		var last []string
		found := false
		for _, r := range ms.Requests() {
			if r.Req.GetTypeUrl() == typeURL {
				last, found = r.Req.GetResourceNames(), true
			}
		}
		if found && slices.Equal(last, want) {
			return
		}
		if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Req.GetTypeUrl() == typeURL }); err != nil {
			t.Fatalf("the client subscribes to %q of %s, want %q: %v", last, typeURL, want, err)
		}
	}
}

// fakeResolver is a depmgr.DNSResolver whose answers the test sets.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string]answer // by host
	lookups chan string       // receives every host looked up, if not nil (cap large)
}

type answer struct {
	addrs []string
	err   error
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{answers: make(map[string]answer), lookups: make(chan string, 100)}
}

func (f *fakeResolver) set(host string, err error, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[host] = answer{addrs: addrs, err: err}
}

func (f *fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	f.mu.Lock()
	a, ok := f.answers[host]
	f.mu.Unlock()
	select {
	case f.lookups <- host:
	default:
	}
	if !ok {
		return nil, fmt.Errorf("fake resolver: no such host %q", host)
	}
	return a.addrs, a.err
}
