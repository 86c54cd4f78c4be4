// SPDX-License-Identifier: Apache-2.0

package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
)

// Cluster specifier plugins (gRFC A28, the RLS plugin): a route whose
// action names a plugin sends its RPCs to the plugin's balancer, gRPC's
// RLS LB policy (google.golang.org/grpc/balancer/rls), run as a child of
// the router (key "rls" + Plugin.Key). RLS asks its lookup service for the
// target of each RPC, and runs a child of the policy TargetName per
// target: a target is a cluster of the configuration, which that child
// subscribes to (Config.Subscribe, depmgr's dynamic subscriptions) for as
// long as RLS keeps it; the router then has the cluster in its
// configuration and runs its priorities as a route cluster's. The
// target's picker picks in the cluster as the router's picker does for a
// route cluster (drops, circuit breaking, load reports, priorities), and
// its connectivity state is the cluster's, which RLS reads to fall back
// to its other targets. The children reach the router through the
// resolver state the router gives RLS, which RLS gives them.

// TargetName is the LB policy of RLS's children: one cluster of the
// configuration. Register registers it with the router.
const TargetName = "proxyless_xds_rls_target_experimental"

// Plugin is a cluster specifier plugin the routes use.
type Plugin struct {
	// Key identifies the plugin's balancer across configurations: its name
	// and config; another key gives another balancer.
	Key string
	// Policy is gRPC's RLS LB policy with the plugin's config, whose
	// child policy is TargetName with the target in "cluster".
	Policy ChildPolicy
	// Err, when set, says why the plugin cannot be run: the RPCs of its
	// routes fail with it.
	Err error
}

// routerKey is the attribute key of the router in the resolver state
// given to RLS (and so to its children).
type routerKey struct{}

// pluginKey is the key of a plugin's child.
func pluginKey(p *Plugin) string { return "rls\x00" + p.Key }

// startPluginsLocked creates (or updates) the children of the plugins of
// the configuration and notes their keys in want. The caller holds mu.
func (r *router) startPluginsLocked(want map[string]bool) {
	for _, p := range r.cfg.Plugins {
		if p.Err != nil {
			continue
		}
		key := pluginKey(p)
		want[key] = true
		c := r.children.byKey[key]
		if c == nil {
			c = &child{ClientConn: r.cc, r: r, key: key, state: balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker{}}}
			r.children.byKey[key] = c
		}
		c.policy = p.Policy
		r.children.pending = append(r.children.pending, pendingUpdate{c: c, attrs: attributes.New(routerKey{}, r)})
	}
}

// wantPluginsLocked notes the keys of the plugins' children in want. The
// caller holds mu.
func (r *router) wantPluginsLocked(want map[string]bool) {
	for _, p := range r.cfg.Plugins {
		if p.Err == nil {
			want[pluginKey(p)] = true
		}
	}
}

// targets are the children RLS runs, one per target cluster in use, and
// the state of each cluster they are told. Guarded by the router's mu.
type targets struct {
	all       map[*target]bool
	states    map[string]connectivity.State // of every cluster, by the last picker
	notifying bool                          // a goroutine tells the targets their states
	again     bool                          // states changed while it was doing so
}

// notifyTargetsLocked has the targets told the states of their clusters,
// on a goroutine of the router (they call into RLS, which calls the
// router back). The caller holds mu.
func (r *router) notifyTargetsLocked() {
	ts := &r.targets
	if len(ts.all) == 0 {
		return
	}
	if ts.notifying {
		ts.again = true
		return
	}
	ts.notifying = true
	r.goLocked(func() {
		for {
			r.mu.Lock()
			if r.closed || !r.targets.notifying {
				r.targets.notifying = false
				r.mu.Unlock()
				return
			}
			r.targets.again = false
			all := make([]*target, 0, len(r.targets.all))
			for t := range r.targets.all {
				all = append(all, t)
			}
			r.mu.Unlock()
			for _, t := range all {
				t.push()
			}
			r.mu.Lock()
			if !r.targets.again {
				r.targets.notifying = false
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
		}
	})
}

// stateOf returns the state of cluster name for a target: that of the
// last picker; CONNECTING for a cluster the configuration does not have
// yet (its subscription is in progress).
func (r *router) stateOf(name string) connectivity.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.targets.states[name]; ok {
		return st
	}
	return connectivity.Connecting
}

// targetBuilder builds targets.
type targetBuilder struct{}

func (targetBuilder) Name() string { return TargetName }

func (targetBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &target{cc: cc}
}

// targetConfig is the config of a target: the cluster RLS named.
type targetConfig struct {
	serviceconfig.LoadBalancingConfig
	Cluster string `json:"cluster"`
}

func (targetBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var cfg targetConfig
	if err := json.Unmarshal(js, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", TargetName, err)
	}
	if cfg.Cluster == "" {
		return nil, fmt.Errorf("%s: no cluster", TargetName)
	}
	return &cfg, nil
}

// target is a child of RLS: one cluster of the configuration.
type target struct {
	cc balancer.ClientConn // RLS's

	mu      sync.Mutex
	r       *router
	cluster string
	cancel  func() // the cluster's subscription
	closed  bool
	last    connectivity.State
	told    bool // last was told
}

var errNotFromRouter = errors.New("the RLS target policy runs only under the xds router")

func (t *target) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*targetConfig)
	r, ok2 := s.ResolverState.Attributes.Value(routerKey{}).(*router)
	if !ok || !ok2 {
		return errNotFromRouter
	}
	t.mu.Lock()
	if t.r != nil || t.closed {
		t.mu.Unlock()
		return nil // RLS gives a child one target for its life
	}
	t.r, t.cluster = r, cfg.Cluster
	t.mu.Unlock()

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	if r.targets.all == nil {
		r.targets.all = make(map[*target]bool)
	}
	r.targets.all[t] = true
	subscribe := r.cfg.Subscribe
	r.mu.Unlock()
	if subscribe != nil {
		cancel := subscribe(cfg.Cluster)
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			cancel()
			return nil
		}
		t.cancel = cancel
		t.mu.Unlock()
	}
	t.push()
	return nil
}

// push tells RLS the cluster's state, with the target's picker, when it
// changed.
func (t *target) push() {
	t.mu.Lock()
	r, closed := t.r, t.closed
	t.mu.Unlock()
	if r == nil || closed {
		return
	}
	st := r.stateOf(t.cluster)
	t.mu.Lock()
	if t.told && t.last == st || t.closed {
		t.mu.Unlock()
		return
	}
	t.last, t.told = st, true
	t.mu.Unlock()
	t.cc.UpdateState(balancer.State{ConnectivityState: st, Picker: targetPicker{r: r, cluster: t.cluster}})
}

func (t *target) ResolverError(error) {}

func (t *target) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (t *target) ExitIdle() {}

func (t *target) Close() {
	t.mu.Lock()
	t.closed = true
	r, cancel := t.r, t.cancel
	t.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		delete(r.targets.all, t)
		r.mu.Unlock()
	}
	if cancel != nil {
		cancel()
	}
}

// targetPicker picks in a target cluster with the router's current
// picker.
type targetPicker struct {
	r       *router
	cluster string
}

func (tp targetPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	p := tp.r.current.Load()
	if p == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return p.pickTarget(tp.cluster, info)
}

// pickTarget picks in cluster for an RPC of a plugin's route: the route
// the interceptor matched in this configuration, else the one it
// matches here.
func (p *picker) pickTarget(cluster string, info balancer.PickInfo) (balancer.PickResult, error) {
	cp := p.clusters[cluster]
	if cp == nil {
		// Subscribed, not yet in the configuration.
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	if cp.err != nil {
		return balancer.PickResult{}, cp.err
	}
	h := routing.Headers{Ctx: info.Ctx}
	rt, sess := (*dataplane.Route)(nil), (*dataplane.Session)(nil)
	labels := calllabels.FromContext(info.Ctx) // set again for the target's endpoint
	if rc, ok := info.Ctx.Value(routeChoiceKey{}).(*RouteChoice); ok && rc.Cfg == p.cfg {
		rt, sess = rc.Route, rc.Session
	} else if rt = p.cfg.DP.Route(info.FullMethodName, &h); rt == nil {
		return balancer.PickResult{}, unavailable("RPC " + info.FullMethodName + " matches no route of the virtual host")
	}
	res, err := cp.prio.pick(p, rt, cluster, sess, info, &h, labels)
	p.rewriteAuthority(rt, &res, err)
	return res, err
}
