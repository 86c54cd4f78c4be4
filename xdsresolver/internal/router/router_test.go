// SPDX-License-Identifier: Apache-2.0

package router

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

// testPolicy is an endpoint policy for the router's tests: it reports
// READY when it gets its endpoints; a test makes it report other states
// through its ClientConn (testChildren, by the first address).
const testPolicy = "proxyless_router_test_child"

var (
	registerTestPolicy sync.Once
	testChildren       sync.Map // first address → *testChild
)

type testChild struct{ cc balancer.ClientConn }

type testBuilder struct{}

func (testBuilder) Name() string { return testPolicy }

func (testBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &testChild{cc: cc}
}

func (c *testChild) UpdateClientConnState(s balancer.ClientConnState) error {
	testChildren.Store(s.ResolverState.Endpoints[0].Addresses[0].Addr, c)
	c.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Ready, Picker: donePicker{}})
	return nil
}

func (*testChild) ResolverError(error)                                        {}
func (*testChild) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (*testChild) Close()                                                     {}
func (*testChild) ExitIdle()                                                  {}

// donePicker picks nothing, with a Done callback.
type donePicker struct{}

func (donePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{Done: func(balancer.DoneInfo) {}}, nil
}

// fakeCC is the channel of a router under test: it keeps the last state.
type fakeCC struct {
	balancer.ClientConn // nil: any other call panics
	mu                  sync.Mutex
	state               balancer.State
}

func (cc *fakeCC) UpdateState(s balancer.State) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.state = s
}

func (cc *fakeCC) picker() balancer.Picker {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.state.Picker
}

// testConfig returns a configuration whose route "/<c>/" goes to cluster
// c, for each cluster c of prios, whose priority i has one endpoint,
// "<c>-p<i>:1", of testPolicy.
func testConfig(t *testing.T, prios map[string]int) *Config {
	t.Helper()
	registerTestPolicy.Do(func() { balancer.Register(testBuilder{}) })
	vh := &resources.VirtualHost{Name: "vh", Domains: []string{"*"}}
	leaves := map[string]*depmgr.ClusterConfig{}
	for c, n := range prios {
		vh.Routes = append(vh.Routes, resources.Route{
			Match:  resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/" + c + "/", CaseSensitive: true},
			Action: resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: c},
		})
		leaf := &depmgr.ClusterConfig{Name: c, Cluster: &resources.Cluster{Name: c, Kind: resources.ClusterKindEDS, MaxRequests: 100}, Endpoints: &resources.Endpoints{ClusterName: c}}
		for i := range n {
			leaf.Endpoints.Localities = append(leaf.Endpoints.Localities, resources.Locality{Priority: uint32(i), Weight: 1, Endpoints: []resources.Endpoint{
				{Addresses: []string{fmt.Sprintf("%s-p%d:1", c, i)}, HealthStatus: resources.HealthStatusHealthy, Weight: 1},
			}})
		}
		leaves[c] = leaf
	}
	dp, err := dataplane.Build(dataplane.Snapshot{VirtualHost: vh, Cluster: func(name string) *depmgr.ClusterResult {
		return &depmgr.ClusterResult{Name: name, Config: leaves[name]}
	}}, dataplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{DP: dp, Clusters: map[string]*Cluster{}}
	for name, c := range dp.Clusters {
		rc := &Cluster{DP: c}
		for _, p := range c.Priorities {
			addr := p.Localities[0].Endpoints[0].Addresses[0]
			rc.Priorities = append(rc.Priorities, &Priority{Priority: p, Policy: ChildPolicy{Name: testPolicy}, Children: []ChildConfig{{
				Weight: 1, Key: addr, Endpoints: []resolver.Endpoint{{Addresses: []resolver.Address{{Addr: addr}}}},
			}}})
		}
		cfg.Clusters[name] = rc
	}
	return cfg
}

func update(t *testing.T, r *router, cfg *Config) {
	t.Helper()
	if err := r.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Attributes: attributes.New(configKey{}, cfg)}}); err != nil {
		t.Fatal(err)
	}
}

// routerCode matches a frame of the package's code, not of its tests.
var routerCode = regexp.MustCompile(`/xdsresolver/internal/router/[a-z]+\.go:`)

// routerGoroutines returns the stacks of the goroutines, other than the
// caller's, that run code of this package (or were started by it).
func routerGoroutines() []string {
	buf := make([]byte, 1<<20)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
	var out []string
	for _, s := range stacks[1:] { // the first is the caller's
		if routerCode.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// TestRouter_CloseWaitsForItsGoroutines checks that the goroutines the
// router starts have an owner that Close waits for (docs/style.md): the
// one that closes the children of a retired cluster when its last RPC
// ends, and the one that makes the calls into children that a child's
// state queued when it came from outside the router's calls. With one P,
// a goroutine that Close does not wait for has not even run when Close
// returns.
func TestRouter_CloseWaitsForItsGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	t.Run("last RPC of a retired cluster", func(t *testing.T) {
		cc := &fakeCC{}
		r := newRouter(cc, balancer.BuildOptions{})
		update(t, r, testConfig(t, map[string]int{"a": 1, "b": 1}))
		res, err := cc.picker().Pick(balancer.PickInfo{FullMethodName: "/a/m"})
		if err != nil {
			t.Fatal(err)
		}
		update(t, r, testConfig(t, map[string]int{"b": 1})) // a is retained while its RPC runs
		runtime.GOMAXPROCS(1)
		res.Done(balancer.DoneInfo{}) // the last RPC of a: its children are to be closed
		r.Close()
		if gs := routerGoroutines(); len(gs) > 0 {
			t.Errorf("after Close, %d goroutines of the router still run:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
	})

	t.Run("a child's state from outside", func(t *testing.T) {
		cc := &fakeCC{}
		r := newRouter(cc, balancer.BuildOptions{})
		update(t, r, testConfig(t, map[string]int{"c": 2}))
		v, ok := testChildren.Load("c-p0:1")
		if !ok {
			t.Fatal("the child of priority 0 was not built")
		}
		runtime.GOMAXPROCS(1)
		// Priority 0 fails, from the child's own goroutine: priority 1 is
		// to be started, on a goroutine of the router.
		v.(*testChild).cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: donePicker{}})
		r.Close()
		if gs := routerGoroutines(); len(gs) > 0 {
			t.Errorf("after Close, %d goroutines of the router still run:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
	})
}
