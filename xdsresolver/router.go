// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// routerName is the name of the LB policy of this package that the
// resolver's service config names: it routes each RPC (gRFC A28) and
// balances it over the cluster's priorities, localities and endpoints.
const routerName = "proxyless_xds_router_experimental"

// routerServiceConfig is the service config the resolver gives the
// channel; the configuration itself travels in the State's attributes.
const routerServiceConfig = `{"loadBalancingConfig":[{"` + routerName + `":{}}]}`

// failoverTimeout is how long a priority may stay CONNECTING before the
// next one is used (gRFC A56).
const failoverTimeout = 10 * time.Second

// childRetention is how long the children of a started priority stay
// once a higher priority is used instead, ready for the next failover,
// before they are closed (gRFC A56, the priority policy's child
// retention).
const childRetention = 15 * time.Minute

var registerOnce sync.Once

// registerRouter registers the router LB policy with grpc, once per
// process; NewBuilder calls it (never an init function).
func registerRouter() {
	registerOnce.Do(func() { balancer.Register(routerBuilder{}) })
}

// routerConfigKey is the resolver.State attribute key of *routerConfig.
type routerConfigKey struct{}

// timerFunc starts a timer that calls f after d; the returned function
// stops it. Tests give their own (export_test.go).
type timerFunc func(d time.Duration, f func()) (stop func() bool)

func realTimer(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

type routerBuilder struct{}

func (routerBuilder) Name() string { return routerName }

func (routerBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &router{
		cc:        cc,
		bopts:     opts,
		channelID: rand.Uint64(),
		children:  make(map[string]*child),
		prios:     make(map[string][]*prioState),
		counters:  make(map[string]*atomic.Int64),
		refs:      make(map[string]*clusterRef),
		retained:  make(map[string]*clusterConfig),
		ods:       make(map[string]*odGroup),
		sess:      make(map[string]*sessGroup),
	}
}

// clusterRef counts the RPCs in flight that were picked for a route
// cluster, from the pick to their end (balancer.PickResult.Done). A
// cluster that a new configuration no longer has keeps its children while
// it has RPCs in flight (retired), as gRPC's cluster manager keeps the
// child of a cluster its config selector still refers to (gRFC A28, A31);
// the last of them to end has the children closed.
type clusterRef struct {
	n       atomic.Int64
	retired atomic.Bool // set, under r.mu, while the cluster is in r.retained
	r       *router
	name    string
}

// release notes the end of an RPC of the cluster.
func (c *clusterRef) release() {
	if c.n.Add(-1) == 0 && c.retired.Load() {
		go c.r.withChildren(c.r.pruneChildren)
	}
}

type routerLBConfig struct {
	serviceconfig.LoadBalancingConfig
}

func (routerBuilder) ParseConfig(json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return routerLBConfig{}, nil
}

// router is the balancer of one channel.
//
// Locking. childMu serializes every call into the children's balancers
// (grpc's calls into the router, the children's SubConn listeners, which
// the router wraps, and the failover timers); mu guards the router's
// state. childMu is taken before mu, never after. A child calls back
// (UpdateState) with childMu held by whoever called into it: it takes mu
// only, and work that needs calls into children (starting a priority,
// gRFC A56) is queued in pending, done by the holder of childMu before it
// releases it (withChildren).
type router struct {
	cc        balancer.ClientConn
	bopts     balancer.BuildOptions
	channelID uint64 // hashed by channel_id hash policies (gRFC A42)

	childMu sync.Mutex

	mu         sync.Mutex
	cfg        *routerConfig
	children   map[string]*child         // by childKey
	prios      map[string][]*prioState   // by route cluster, one per priority
	counters   map[string]*atomic.Int64  // in-flight RPCs by leaf cluster and EDS service (gRFC A32)
	refs       map[string]*clusterRef    // RPCs in flight by route cluster: of cfg, and retained
	retained   map[string]*clusterConfig // clusters no longer in cfg whose RPCs are in flight: their children stay
	ods        map[string]*odGroup       // outlier detection by leaf cluster and priority (odKey, gRFC A50)
	sess       map[string]*sessGroup     // sessions by leaf cluster and priority (odKey, gRFC A55)
	pending    []pendingUpdate           // calls into children to make; see withChildren
	inChildren bool                      // a withChildren is running: it makes the pending calls and the picker
	dirty      bool                      // the picker is to be rebuilt at the end of withChildren
	closed     bool
}

// pendingUpdate is a child to build (if not yet built) and give endpoints.
type pendingUpdate struct {
	c   *child
	eps []resolver.Endpoint
}

// prioState is the failover state of one priority of a cluster (gRFC A56).
type prioState struct {
	started    bool        // its children were created: the selection reached it once
	failedOver bool        // the failover timer fired; treated as failed until READY
	stop       func() bool // stops the running failover timer; nil when none
	gen        uint64      // counts the timers started, so that a stale one does nothing
	retire     func() bool // stops the running child retention timer; nil when none
	retireGen  uint64      // counts the retention timers started
}

// child is one endpoint-policy balancer: a locality of a priority of a
// leaf cluster (or the whole priority, for ring_hash). It is the
// balancer.ClientConn of that balancer: SubConns go to the channel, the
// state it reports is kept for the router's picker.
type child struct {
	balancer.ClientConn // the channel's
	r                   *router
	key                 string
	policy              childPolicy       // guarded by r.mu
	b                   balancer.Balancer // set by withChildren, under r.childMu
	state               balancer.State    // guarded by r.mu
	removed             bool              // guarded by r.mu
	// For a child over a whole priority (ring_hash): the locality of
	// each address (guarded by r.mu), and of each SubConn, so that the
	// load of an RPC is reported for its locality.
	addrLocality map[string]resources.LocalityID
	scLocality   sync.Map // balancer.SubConn → resources.LocalityID
	// leaf and security are the child's leaf cluster and its TLS
	// configuration (nil: plaintext), set at creation: they are part of
	// the child's key. hs is the handshake info of security, acquired
	// when b is built and released when the child is closed; only
	// accessed under r.childMu.
	leaf     string
	security *resources.SecurityConfig
	hs       *handshake.ClientHandshakeInfo
	// od and sess are the outlier detection group (gRFC A50) and the
	// sessions (gRFC A55) of the child's priority, for which its SubConns
	// are wrapped; nil without. Guarded by r.mu; set before the child's
	// balancer is built, as its key says whether the priority has them.
	od   *odGroup
	sess *sessGroup
}

// NewSubConn creates a SubConn on the channel: its state listener runs
// under the router's childMu, its locality is noted for a child over a
// whole priority, and, when the priority has outlier detection or
// sessions, the child gets it wrapped (subConn).
func (c *child) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	// w is the wrapper, if any: set in this call, which the child makes
	// under childMu, before the listener (run under childMu) can read it.
	var w *subConn
	if l := opts.StateListener; l != nil {
		opts.StateListener = func(s balancer.SubConnState) {
			c.r.withChildren(func() {
				if w != nil && !w.stateChanged(s.ConnectivityState) {
					return // an orphan (session.go)
				}
				c.r.mu.Lock()
				gone := c.removed || c.r.closed
				c.r.mu.Unlock()
				if !gone {
					l(s)
				}
			})
		}
	}
	//lint:ignore SA1019 this wraps the child policy's own NewSubConn call, which gRPC's public balancers still make.
	sc, err := c.ClientConn.NewSubConn(addrs, opts)
	if err != nil || len(addrs) == 0 {
		return sc, err
	}
	c.r.mu.Lock()
	id, ok := c.addrLocality[addrs[0].Addr]
	if c.od != nil || c.sess != nil {
		w = newSubConn(c.r, c, c.od, c.sess, sc, addrs)
		sc = w
	}
	c.r.mu.Unlock()
	if ok {
		c.scLocality.Store(sc, id)
	}
	return sc, nil
}

// UpdateState records the child's state; the picker is rebuilt at the end
// of the withChildren that called into the child, or at once when the
// child calls from elsewhere.
func (c *child) UpdateState(s balancer.State) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.removed || r.closed {
		return
	}
	c.state = s
	if r.inChildren {
		r.dirty = true
		return
	}
	r.updateStateLocked()
	if len(r.pending) > 0 {
		go r.withChildren(nil)
	}
}

// withChildren runs f (which may call into children) under childMu, then
// makes the pending calls into children and rebuilds the picker until
// nothing is pending.
func (r *router) withChildren(f func()) {
	r.childMu.Lock()
	defer r.childMu.Unlock()
	r.mu.Lock()
	r.inChildren = true
	r.mu.Unlock()
	if f != nil {
		f()
	}
	for {
		r.mu.Lock()
		if r.closed {
			r.inChildren, r.pending = false, nil
			r.mu.Unlock()
			return
		}
		if len(r.pending) == 0 {
			if !r.dirty {
				r.inChildren = false
				r.mu.Unlock()
				return
			}
			r.dirty = false
			r.updateStateLocked() // may start a priority: more pending
			r.mu.Unlock()
			continue
		}
		ps := r.pending
		var providers *xdscreds.ProviderStore
		if r.cfg != nil {
			providers = r.cfg.providers
		}
		r.pending = nil
		r.mu.Unlock()
		for _, p := range ps {
			r.mu.Lock()
			gone, policy := p.c.removed, p.c.policy
			r.mu.Unlock()
			if gone {
				continue
			}
			if p.c.b == nil {
				if err := p.c.acquireSecurity(providers); err != nil {
					// Tried again at the child's next update.
					r.mu.Lock()
					if !p.c.removed {
						p.c.state = balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: base.NewErrPicker(unavailable(err.Error()))}
					}
					r.mu.Unlock()
					continue
				}
				// childPolicyOf checked that the balancer is registered.
				p.c.b = balancer.Get(policy.name).Build(p.c, r.bopts)
			}
			// A child that rejects its endpoints reports
			// TRANSIENT_FAILURE itself; the error says nothing more.
			_ = p.c.b.UpdateClientConnState(balancer.ClientConnState{
				ResolverState:  resolver.State{Endpoints: withHandshakeInfo(p.eps, p.c.hs)},
				BalancerConfig: policy.config,
			})
		}
		r.mu.Lock()
		r.dirty = true
		r.mu.Unlock()
	}
}

// UpdateClientConnState applies a configuration: the children of the
// priorities already started get their new endpoints (new localities get
// a child), children no longer used are closed, and the picker is
// rebuilt, which starts the priorities it needs (gRFC A56).
func (r *router) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.ResolverState.Attributes.Value(routerConfigKey{}).(*routerConfig)
	if !ok {
		return balancer.ErrBadResolverState
	}
	r.withChildren(func() {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		old := r.cfg
		r.cfg = cfg
		want := make(map[string]bool)
		for name, cc := range cfg.clusters {
			ref := r.refs[name]
			if ref == nil {
				ref = &clusterRef{r: r, name: name}
				r.refs[name] = ref
			}
			ref.retired.Store(false)
			delete(r.retained, name)
			ps := r.prios[name]
			for len(ps) < len(cc.priorities) {
				ps = append(ps, &prioState{})
			}
			for _, p := range ps[len(cc.priorities):] {
				p.stopTimers()
			}
			ps = ps[:len(cc.priorities)]
			r.prios[name] = ps
			for i, p := range cc.priorities {
				if p.od != nil {
					r.updateODLocked(p)
				}
				if p.session {
					r.updateSessLocked(p)
				}
				key := counterKey(p)
				if r.counters[key] == nil {
					if cfg.breakers != nil {
						r.counters[key] = cfg.breakers.counter(key)
					} else {
						r.counters[key] = new(atomic.Int64)
					}
				}
				if ps[i].started {
					r.startPriorityLocked(p, want)
				}
			}
		}
		for name, ps := range r.prios {
			if _, ok := cfg.clusters[name]; !ok {
				for _, p := range ps {
					p.stopTimers()
				}
				if ref := r.refs[name]; ref == nil || ref.n.Load() == 0 {
					delete(r.prios, name)
				} // else retained (see pruneLocked): its children stay started
			}
		}
		if old != nil {
			for name, cc := range old.clusters {
				if _, ok := cfg.clusters[name]; !ok {
					r.retained[name] = cc
				}
			}
		}
		removed := r.pruneLocked(want)
		r.pruneGroupsLocked()
		r.dirty = true
		r.mu.Unlock()
		closeChildren(removed)
	})
	return nil
}

// pruneLocked forgets the retained clusters that no longer have an RPC in
// flight, adds the children of the others to want, and removes the
// children not in want, which the caller closes (closeChildren) after
// releasing mu, under childMu.
func (r *router) pruneLocked(want map[string]bool) []*child {
	for name, cc := range r.retained {
		ref := r.refs[name]
		if ref == nil || ref.n.Load() == 0 {
			if ref != nil {
				ref.retired.Store(false)
			}
			delete(r.retained, name)
			delete(r.refs, name)
			delete(r.prios, name)
			continue
		}
		ref.retired.Store(true)
		for _, p := range cc.priorities {
			for _, l := range p.localities {
				want[l.key] = true
			}
		}
	}
	var removed []*child
	for key, c := range r.children {
		if !want[key] {
			c.removed = true
			delete(r.children, key)
			removed = append(removed, c)
		}
	}
	return removed
}

// pruneChildren closes the children that are no longer wanted: those of
// the retained clusters whose last RPC ended, and those of priorities no
// longer started. It runs in withChildren, which holds childMu.
func (r *router) pruneChildren() {
	r.mu.Lock()
	if r.closed || r.cfg == nil {
		r.mu.Unlock()
		return
	}
	want := make(map[string]bool)
	for name, cc := range r.cfg.clusters {
		ps := r.prios[name]
		for i, p := range cc.priorities {
			if i < len(ps) && ps[i].started {
				for _, l := range p.localities {
					want[l.key] = true
				}
			}
		}
	}
	removed := r.pruneLocked(want)
	r.mu.Unlock()
	closeChildren(removed)
}

// closeChildren closes the balancers of cs, then releases their
// certificate providers; the caller holds childMu.
func closeChildren(cs []*child) {
	for _, c := range cs {
		if c.b != nil {
			c.b.Close()
		}
		if c.hs != nil {
			c.hs.Close()
			c.hs = nil
		}
	}
}

// acquireSecurity acquires the certificate providers of c's security
// config from providers, unless c has none or has them already; the
// caller holds childMu.
func (c *child) acquireSecurity(providers *xdscreds.ProviderStore) error {
	if c.security == nil || c.hs != nil {
		return nil
	}
	if providers == nil {
		return fmt.Errorf("cluster %q has a TLS configuration, and the channel no certificate provider store", c.leaf)
	}
	hs, err := handshake.NewClientHandshakeInfo(c.leaf, c.security, providers.Provider)
	if err != nil {
		return err
	}
	c.hs = hs
	return nil
}

// startPriorityLocked queues the creation (or the update) of the children
// of priority p, and notes their keys in want (nil: none wanted).
func (r *router) startPriorityLocked(p *priorityConfig, want map[string]bool) {
	for _, l := range p.localities {
		if want != nil {
			if want[l.key] {
				continue
			}
			want[l.key] = true
		}
		c := r.children[l.key]
		if c == nil {
			c = &child{ClientConn: r.cc, r: r, key: l.key, leaf: p.leaf, security: p.security,
				state: balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker{}}}
			r.children[l.key] = c
		}
		c.policy, c.addrLocality, c.od, c.sess = p.policy, l.addrLocality, nil, nil
		if p.od != nil {
			c.od = r.ods[odKey(p)]
		}
		if p.session {
			c.sess = r.sess[odKey(p)]
		}
		r.pending = append(r.pending, pendingUpdate{c: c, eps: l.endpoints})
	}
}

func counterKey(p *priorityConfig) string { return p.leaf + "\x00" + p.edsService }

func (p *prioState) stopTimer() {
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
}

// stopTimers stops the failover and the child retention timers.
func (p *prioState) stopTimers() {
	p.stopTimer()
	if p.retire != nil {
		p.retire()
		p.retire = nil
	}
}

// ResolverError passes err to the children, which fail their RPCs with it
// if they have no endpoint.
func (r *router) ResolverError(err error) {
	r.withChildren(func() {
		for _, c := range r.snapshotChildren() {
			c.b.ResolverError(err)
		}
	})
}

// UpdateSubConnState is not used: children's SubConns have listeners.
func (r *router) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle asks every child to connect.
func (r *router) ExitIdle() {
	r.withChildren(func() {
		for _, c := range r.snapshotChildren() {
			c.b.ExitIdle()
		}
	})
}

// Close closes the children and stops the failover timers.
func (r *router) Close() {
	r.childMu.Lock()
	defer r.childMu.Unlock()
	r.mu.Lock()
	r.closed = true
	for _, ps := range r.prios {
		for _, p := range ps {
			p.stopTimers()
		}
	}
	for _, g := range r.ods {
		if g.stop != nil {
			g.stop()
			g.stop = nil
		}
	}
	for _, g := range r.sess {
		g.close()
	}
	children := slices.Collect(maps.Values(r.children))
	r.children, r.pending = nil, nil
	r.mu.Unlock()
	closeChildren(children)
}

// snapshotChildren returns the built children; the caller holds childMu.
func (r *router) snapshotChildren() []*child {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*child, 0, len(r.children))
	for _, c := range r.children {
		if c.b != nil {
			out = append(out, c)
		}
	}
	return out
}

// updateStateLocked selects the priority of each cluster (gRFC A56),
// builds a picker over the selected priorities, and gives it to the
// channel with the aggregated connectivity state: READY when a selected
// priority is READY, else CONNECTING, IDLE, TRANSIENT_FAILURE in that
// order.
func (r *router) updateStateLocked() {
	if r.cfg == nil {
		return
	}
	p := &picker{cfg: r.cfg, clusters: make(map[string]*clusterPicker, len(r.cfg.clusters)), channelID: r.channelID}
	agg := connectivity.TransientFailure
	for name, cc := range r.cfg.clusters {
		cp := &clusterPicker{}
		p.clusters[name] = cp
		if cc.err != nil {
			cp.err = unavailable(cc.err.Error())
			continue
		}
		i, st := r.selectPriorityLocked(name, cc)
		agg = better(agg, st)
		prio := cc.priorities[i]
		pp := newPrioPicker(prio, r.counters[counterKey(prio)], r.refs[name])
		var load *lrs.ClusterLoad
		if prio.lrs && r.cfg.load != nil {
			load = r.cfg.load.Cluster(prio.leaf, prio.lrsService)
		}
		pp.errs = dropErrors(prio, load)
		if prio.policy.perPriority {
			pp.ringLoad = load
		}
		pp.clusterLoad, pp.wrapped = load, prio.od != nil || prio.session
		if prio.session {
			pp.sess = r.sess[odKey(prio)]
		}
		var best *child
		for _, l := range prio.localities {
			c := r.children[l.key]
			if c == nil {
				continue
			}
			var ll *lrs.LocalityLoad
			if load != nil {
				ll = load.Locality(l.id)
			}
			if c.state.ConnectivityState == connectivity.Ready {
				pp.total += uint64(l.weight)
				pp.ready = append(pp.ready, weightedPicker{cum: pp.total, p: c.state.Picker, load: ll})
			}
			if best == nil || rank(c.state.ConnectivityState) > rank(best.state.ConnectivityState) {
				best = c
				pp.other, pp.otherLoad = c.state.Picker, ll
			}
			if prio.policy.perPriority {
				pp.ring = c
				pp.ready = pp.ready[:0:0] // one child: picked through other
				pp.total = 0
				pp.other, pp.otherLoad = c.state.Picker, nil
			}
		}
		cp.prio = pp
	}
	r.cc.UpdateState(balancer.State{ConnectivityState: agg, Picker: p})
}

// selectPriorityLocked returns the priority of cluster name to use and its
// state (gRFC A56): the first that is READY or IDLE, or CONNECTING with
// its failover timer not yet fired (which starts it); priorities that are
// in TRANSIENT_FAILURE, or whose timer fired, are skipped. When every
// priority fails, the last one. A priority is started (its children
// created) the first time the selection reaches it, so lower priorities
// connect only when the higher ones fail; once started, it stays so
// while in use, and for childRetention after a higher priority is used
// instead (see retainLowerLocked).
func (r *router) selectPriorityLocked(name string, cc *clusterConfig) (int, connectivity.State) {
	i, st := r.choosePriorityLocked(name, cc)
	r.retainLowerLocked(r.prios[name], i)
	return i, st
}

// retainLowerLocked stops the child retention timers of the priorities
// up to i, the one in use, and starts them for the started priorities
// below it (gRFC A56): when such a timer fires, the priority's children
// are closed, to be created again if the selection reaches it.
func (r *router) retainLowerLocked(ps []*prioState, i int) {
	for j, s := range ps {
		if j <= i || !s.started {
			if s.retire != nil {
				s.retire()
				s.retire = nil
			}
			continue
		}
		if s.retire != nil {
			continue
		}
		s.retireGen++
		gen := s.retireGen
		s.retire = r.newTimerLocked()(childRetention, func() {
			r.withChildren(func() {
				r.mu.Lock()
				if r.closed || s.retire == nil || s.retireGen != gen {
					r.mu.Unlock()
					return
				}
				s.retire = nil
				s.stopTimer()
				s.started, s.failedOver = false, false
				r.dirty = true
				r.mu.Unlock()
				r.pruneChildren()
			})
		})
	}
}

func (r *router) newTimerLocked() timerFunc {
	if r.cfg.timer != nil {
		return r.cfg.timer
	}
	return realTimer
}

// choosePriorityLocked is selectPriorityLocked without the child
// retention.
func (r *router) choosePriorityLocked(name string, cc *clusterConfig) (int, connectivity.State) {
	ps := r.prios[name]
	last := connectivity.TransientFailure
	for i, p := range cc.priorities {
		s := ps[i]
		if !s.started {
			// Reached for the first time: create its children, which
			// start CONNECTING (and so start its failover timer).
			s.started = true
			r.startPriorityLocked(p, nil)
		}
		st := r.priorityStateLocked(p)
		last = st
		switch st {
		case connectivity.Ready, connectivity.Idle:
			s.stopTimer()
			s.failedOver = false
			return i, st
		case connectivity.Connecting:
			if s.failedOver {
				continue
			}
			if s.stop == nil {
				s.gen++
				gen := s.gen
				s.stop = r.newTimerLocked()(failoverTimeout, func() {
					r.withChildren(func() {
						r.mu.Lock()
						defer r.mu.Unlock()
						if r.closed || s.stop == nil || s.gen != gen {
							return
						}
						s.stop, s.failedOver = nil, true
						r.dirty = true
					})
				})
			}
			return i, st
		default:
			s.stopTimer()
		}
	}
	return len(cc.priorities) - 1, last
}

// priorityStateLocked aggregates the states of a priority's children:
// READY if one is, else CONNECTING, IDLE, TRANSIENT_FAILURE.
func (r *router) priorityStateLocked(p *priorityConfig) connectivity.State {
	st := connectivity.TransientFailure
	for _, l := range p.localities {
		if c := r.children[l.key]; c != nil {
			st = better(st, c.state.ConnectivityState)
		}
	}
	return st
}

func rank(s connectivity.State) int {
	switch s {
	case connectivity.Ready:
		return 4
	case connectivity.Connecting:
		return 3
	case connectivity.Idle:
		return 2
	}
	return 1
}

func better(a, b connectivity.State) connectivity.State {
	if rank(b) > rank(a) {
		return b
	}
	return a
}
