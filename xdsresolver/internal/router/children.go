// SPDX-License-Identifier: Apache-2.0

package router

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// children are the router's endpoint-policy balancers, by ChildConfig.Key,
// and the calls into them that wait for childMu. Guarded by the router's
// mu.
type children struct {
	byKey   map[string]*child
	pending []pendingUpdate // calls into children to make; see withChildren
	// inChildren: a withChildren is running: it makes the pending calls
	// and rebuilds the picker.
	inChildren bool
	dirty      bool // the picker is to be rebuilt at the end of withChildren
}

// pendingUpdate is a child to build (if not yet built) and give endpoints.
type pendingUpdate struct {
	c     *child
	eps   []resolver.Endpoint
	attrs *attributes.Attributes // of the resolver state; nil for none
}

// takeAll removes every child and pending call, and returns the children
// for the caller to close (closeChildren).
func (cs *children) takeAll() []*child {
	out := slices.Collect(maps.Values(cs.byKey))
	cs.byKey, cs.pending = nil, nil
	return out
}

// child is one endpoint-policy balancer: a locality of a priority of a
// leaf cluster (or the whole priority, for ring_hash). It is the
// balancer.ClientConn of that balancer: SubConns go to the channel, the
// state it reports is kept for the router's picker.
type child struct {
	balancer.ClientConn // the channel's
	r                   *router
	key                 string
	policy              ChildPolicy       // guarded by r.mu
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
	// locality is the child's locality for the metrics its balancer
	// records (lbmetrics.go): "" for a child over the whole priority.
	locality string
}

// NewSubConn creates a SubConn on the channel: its state listener runs
// under the router's childMu, its locality is noted for a child over a
// whole priority, and, when the priority has outlier detection or
// sessions, the child gets it wrapped (subConn).
func (c *child) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	// w is the wrapper, if any: set in this call, which the child makes
	// under childMu, before the listener (run under childMu) can read it.
	var w *subConn
	var created atomic.Pointer[balancer.SubConn] // the channel's SubConn, once made
	if l := opts.StateListener; l != nil {
		opts.StateListener = func(s balancer.SubConnState) {
			if sc := created.Load(); sc != nil && s.ConnectivityState == connectivity.Shutdown {
				c.r.hostnames.Delete(*sc)
			}
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
	if h := handshake.HostnameFromAttributes(addrs[0].Attributes); h != "" {
		// For authority rewriting (gRFC A81); forgotten at its shutdown.
		c.r.hostnames.Store(sc, h)
		chSC := sc
		created.Store(&chSC)
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
// child calls from elsewhere (then, if that queued calls into children, a
// goroutine of the router makes them).
func (c *child) UpdateState(s balancer.State) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.removed || r.closed {
		return
	}
	c.state = s
	if r.children.inChildren {
		r.children.dirty = true
		return
	}
	r.updateStateLocked()
	if len(r.children.pending) > 0 {
		r.goLocked(func() { r.withChildren(nil) })
	}
}

// withChildren runs f (which may call into children) under childMu, then
// makes the pending calls into children and rebuilds the picker until
// nothing is pending.
func (r *router) withChildren(f func()) {
	r.childMu.Lock()
	defer r.childMu.Unlock()
	r.mu.Lock()
	r.children.inChildren = true
	r.mu.Unlock()
	if f != nil {
		f()
	}
	for {
		r.mu.Lock()
		if r.closed {
			r.children.inChildren, r.children.pending = false, nil
			r.mu.Unlock()
			return
		}
		if len(r.children.pending) == 0 {
			if !r.children.dirty {
				r.children.inChildren = false
				r.mu.Unlock()
				return
			}
			r.children.dirty = false
			r.updateStateLocked() // may start a priority: more pending
			r.mu.Unlock()
			continue
		}
		ps := r.children.pending
		var providers *xdscreds.ProviderStore
		if r.cfg != nil {
			providers = r.cfg.Providers
		}
		r.children.pending = nil
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
				// The resolver checked that the balancer is registered.
				p.c.b = balancer.Get(policy.Name).Build(p.c, r.bopts)
			}
			// A child that rejects its endpoints reports
			// TRANSIENT_FAILURE itself; the error says nothing more.
			_ = p.c.b.UpdateClientConnState(balancer.ClientConnState{
				ResolverState:  resolver.State{Endpoints: withHandshakeInfo(p.eps, p.c.hs), Attributes: p.attrs},
				BalancerConfig: policy.Config,
			})
		}
		r.mu.Lock()
		r.children.dirty = true
		r.mu.Unlock()
	}
}

// startPriorityLocked queues the creation (or the update) of the children
// of priority p, and notes their keys in want (nil: none wanted).
func (r *router) startPriorityLocked(p *Priority, want map[string]bool) {
	for _, l := range p.Children {
		if want != nil {
			if want[l.Key] {
				continue
			}
			want[l.Key] = true
		}
		c := r.children.byKey[l.Key]
		if c == nil {
			c = &child{ClientConn: r.cc, r: r, key: l.Key, leaf: p.Leaf, security: p.Security,
				state: balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker{}}}
			if l.Labels != nil { // a child per locality, under a pick by locality weight
				c.locality = l.Labels.Locality
			}
			r.children.byKey[l.Key] = c
		}
		c.policy, c.addrLocality, c.od, c.sess = p.Policy, l.AddrLocality, nil, nil
		if p.Outlier != nil {
			c.od = r.ods[p.GroupKey()]
		}
		if p.Sessions {
			c.sess = r.sess[p.GroupKey()]
		}
		r.children.pending = append(r.children.pending, pendingUpdate{c: c, eps: l.Endpoints})
	}
}

// builtChildren returns the built children; the caller holds childMu.
func (r *router) builtChildren() []*child {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*child, 0, len(r.children.byKey))
	for _, c := range r.children.byKey {
		if c.b != nil {
			out = append(out, c)
		}
	}
	return out
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

// withHandshakeInfo returns copies of eps whose addresses carry hi, for
// the handshakes of their connections; eps when hi is nil (gRFC A29: the
// credentials of package xdscreds read it at each handshake).
func withHandshakeInfo(eps []resolver.Endpoint, hi *handshake.ClientHandshakeInfo) []resolver.Endpoint {
	if hi == nil {
		return eps
	}
	out := make([]resolver.Endpoint, len(eps))
	for i, ep := range eps {
		addrs := make([]resolver.Address, len(ep.Addresses))
		for j, a := range ep.Addresses {
			addrs[j] = handshake.SetClientHandshakeInfo(a, hi)
		}
		ep.Addresses = addrs
		out[i] = ep
	}
	return out
}
