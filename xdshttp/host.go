// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdshttp/internal/balance"
	"github.com/proxyless/xds/xdshttp/internal/policy"
)

// host is the configuration of one URL host and virtual host: a depmgr
// Manager of the Listener the URL host names, following the virtual host
// selected for the authority, and the state built from its last
// snapshot, which requests read without a lock.
type host struct {
	t        *Transport
	key      hostKey
	listener string
	mgr      *depmgr.Manager

	st    atomic.Pointer[hostState]
	used  atomic.Int64  // the time of the last request, in Unix nanoseconds
	ready chan struct{} // closed once st is set
	once  sync.Once
	gone  chan struct{} // closed by close: the host was dropped
}

// hostState is what a host's requests use: the configuration built from
// one snapshot, or the error that makes the whole configuration unusable.
// It is immutable.
type hostState struct {
	cfg      *dataplane.Config
	clusters map[string]*clusterState // by canonical name
	err      error                    // whole-configuration error; cfg is nil
	snap     *depmgr.XDSConfig        // nil with err

	// What the configuration uses, for Transport.sweep.
	endpoints map[endpointKey]*balance.Host
	byEP      map[*dataplane.Endpoint]*balance.Host
	outlier   map[*dataplane.Endpoint]outlierRef
	odGroups  map[string]bool // the outlier detectors it uses
	retries   []*policy.Retry // by route index; nil for none
	security  map[*resources.SecurityConfig]*handshake.ClientHandshakeInfo
	addrs     map[upstreamUse]bool
}

// upstreamUse is an endpoint address with the TLS configuration of its
// cluster, as a configuration uses it.
type upstreamUse struct {
	addr string
	hs   *handshake.ClientHandshakeInfo
}

// clusterState is a route cluster of a hostState: its balancer, or its
// error.
type clusterState struct {
	c   *dataplane.Cluster
	bal *balance.Cluster
	err error
	// sessions are the endpoints a stateful session's cookie may pin a
	// request to (gRFC A55: health in override_host_status), by address;
	// nil without a stateful session filter.
	sessions map[string]balance.Pick
}

// startHost starts the host of k; the caller holds t.mu.
func (t *Transport) startHost(k hostKey) (*host, error) {
	listener, err := t.c.BootstrapConfig().ListenerResourceName("", k.urlHost)
	if err != nil {
		return nil, err
	}
	h := &host{t: t, key: k, listener: listener, ready: make(chan struct{}), gone: make(chan struct{})}
	opts := []depmgr.Option{
		depmgr.WithDataPlaneAuthority(k.authority),
		depmgr.WithHTTPRoutes(),
		depmgr.WithLogger(t.logger.With(xdslog.KeyDataPlaneAuthority, k.authority)),
	}
	opts = append(opts, t.opts.depmgrOpts...)
	t.logger.Debug("starting host", xdslog.KeyListener, listener, xdslog.KeyDataPlaneAuthority, k.authority)
	h.mgr = depmgr.New(t.c, listener, h, opts...)
	return h, nil
}

func (h *host) touch()                                  { h.used.Store(time.Now().UnixNano()) }
func (h *host) lastUsed() time.Time                     { return time.Unix(0, h.used.Load()) }
func (h *host) state() *hostState                       { return h.st.Load() }
func (h *host) markReady()                              { h.once.Do(func() { close(h.ready) }) }
func (h *host) close()                                  { h.mgr.Close() }
func (h *host) describe() string                        { return fmt.Sprintf("listener %q", h.listener) }
func (st *hostState) cluster(name string) *clusterState { return st.clusters[name] }

// retryOf returns the retry policy of route rt; nil for none.
func (st *hostState) retryOf(rt *dataplane.Route) retrier {
	if rt.Index < len(st.retries) && st.retries[rt.Index] != nil {
		return st.retries[rt.Index]
	}
	return nil
}

// errHostDropped is the error of a wait for a host dropped as idle at that
// moment; the request starts the host again.
var errHostDropped = errors.New("host dropped")

// wait returns the host's state, waiting for its first one until ctx is
// done or the Transport closed. A state that is an error is returned as
// the error.
func (h *host) wait(ctx context.Context) (*hostState, error) {
	st := h.st.Load()
	if st == nil {
		select {
		case <-h.ready:
			st = h.st.Load()
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the configuration of %s: %w", h.describe(), errContext(ctx))
		case <-h.t.closing:
			return nil, ErrClosed
		case <-h.gone:
			return nil, errHostDropped
		}
	}
	if st.err != nil {
		return nil, st.err
	}
	return st, nil
}

// selects reports whether authority selects the virtual host st's
// configuration uses, so that a request with it can use st.
func (st *hostState) selects(authority string) bool {
	vh, err := routing.SelectVirtualHost(authority, st.snap.RouteConfig)
	return err == nil && vh == st.snap.VirtualHost
}

// ResourceChanged builds the state of a new snapshot (depmgr's goroutine).
func (h *host) ResourceChanged(cfg *depmgr.XDSConfig, done func()) {
	defer done()
	st := h.t.buildState(h, cfg)
	h.st.Store(st)
	h.markReady()
	if st.err == nil {
		h.t.load.Ensure(st.cfg)
	}
	h.t.sweep()
}

// ResourceError makes the host's requests fail with err until the next
// snapshot (gRFC A74: the configuration as a whole is unusable).
func (h *host) ResourceError(err error, done func()) {
	defer done()
	h.t.logger.Warn("configuration unusable", xdslog.KeyListener, h.listener, xdslog.KeyDataPlaneAuthority, h.key.authority, xdslog.KeyError, err)
	h.st.Store(&hostState{err: err})
	h.markReady()
	h.t.sweep()
}

// AmbientError is logged; the last configuration stays in use.
func (h *host) AmbientError(err error, done func()) {
	defer done()
	h.t.logger.Info("configuration kept after an error", xdslog.KeyListener, h.listener, xdslog.KeyDataPlaneAuthority, h.key.authority, xdslog.KeyError, err)
}

// buildState builds the state of snapshot cfg of h: the data-plane
// configuration of its virtual host with HTTP's routes, and per route
// cluster its balancer and its endpoints' TLS configuration.
func (t *Transport) buildState(h *host, cfg *depmgr.XDSConfig) *hostState {
	dp, err := dataplane.Build(dataplane.SnapshotOf(cfg), dataplane.Options{Providers: t.opts.providers, Policy: balance.Policy, HTTP: true})
	if err != nil {
		return &hostState{err: err}
	}
	st := &hostState{
		cfg:       dp,
		snap:      cfg,
		clusters:  make(map[string]*clusterState, len(dp.Clusters)),
		endpoints: make(map[endpointKey]*balance.Host),
		byEP:      make(map[*dataplane.Endpoint]*balance.Host),
		outlier:   make(map[*dataplane.Endpoint]outlierRef),
		odGroups:  make(map[string]bool),
		security:  make(map[*resources.SecurityConfig]*handshake.ClientHandshakeInfo),
		addrs:     make(map[upstreamUse]bool),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, c := range dp.Clusters {
		cs := &clusterState{c: c, err: c.Err}
		if cs.err == nil {
			cs.err = t.addClusterLocked(st, c)
		}
		if cs.err == nil {
			cs.bal = balance.New(c, func(e *dataplane.Endpoint) *balance.Host { return st.byEP[e] })
			if dp.Sessions {
				cs.sessions = sessionPicks(c, st.byEP)
			}
		}
		st.clusters[name] = cs
		t.notePoliciesLocked(c)
	}
	st.retries = make([]*policy.Retry, len(dp.Routes))
	for i := range dp.Routes {
		rp := dp.Routes[i].Res.Action.RetryPolicy
		if rp == nil {
			rp = dp.VirtualHost.RetryPolicy // the route's, else the virtual host's
		}
		st.retries[i] = policy.NewRetry(rp)
	}
	t.od.add(st)
	return st
}

// addClusterLocked adds what cluster c uses to st: its endpoints' state,
// kept across configurations, and the TLS configurations of its leaves.
// The caller holds t.mu.
func (t *Transport) addClusterLocked(st *hostState, c *dataplane.Cluster) error {
	for _, p := range c.Priorities {
		var hs *handshake.ClientHandshakeInfo
		if p.Security != nil {
			if hs = st.security[p.Security]; hs == nil {
				if hs = t.security[p.Security]; hs == nil {
					var err error
					if hs, err = handshake.NewClientHandshakeInfo(p.Leaf, p.Security, t.opts.providers.Provider); err != nil {
						return err
					}
					t.security[p.Security] = hs
				}
				st.security[p.Security] = hs
			}
		}
		for li := range p.Localities {
			for ei := range p.Localities[li].Endpoints {
				e := &p.Localities[li].Endpoints[ei]
				k := endpointKey{p.Leaf, e.Key()}
				bh := t.endpoints[k]
				if bh == nil {
					bh = &balance.Host{}
					t.endpoints[k] = bh
				}
				st.endpoints[k] = bh
				st.byEP[e] = bh
				st.addrs[upstreamUse{e.Addresses[0], hs}] = true
			}
		}
	}
	return nil
}

// sessionPicks returns the endpoints of c that sessions may be pinned to,
// by address: those its priorities list as allowed session hosts.
func sessionPicks(c *dataplane.Cluster, byEP map[*dataplane.Endpoint]*balance.Host) map[string]balance.Pick {
	out := make(map[string]balance.Pick)
	for _, p := range c.Priorities {
		allowed := make(map[string]bool, len(p.Hosts))
		for _, h := range p.Hosts {
			allowed[h.Addr] = h.Allowed
		}
		for li := range p.Localities {
			l := &p.Localities[li]
			for ei := range l.Endpoints {
				e := &l.Endpoints[ei]
				for _, a := range e.Addresses {
					if _, dup := out[a]; !dup && allowed[a] {
						out[a] = balance.Pick{Priority: p, Locality: l, Endpoint: e, Host: byEP[e]}
					}
				}
			}
		}
	}
	return out
}

// notePoliciesLocked logs, once per leaf cluster and note, how the HTTP
// path runs an endpoint policy differently from what it names (balance's
// PolicyConfig.Note). The caller holds t.mu.
func (t *Transport) notePoliciesLocked(c *dataplane.Cluster) {
	for _, p := range c.Priorities {
		pc, ok := p.PolicyConfig.(*balance.PolicyConfig)
		if !ok || pc.Note() == "" {
			continue
		}
		k := p.Leaf + "\x00" + pc.Note()
		if t.noted[k] {
			continue
		}
		if t.noted == nil {
			t.noted = make(map[string]bool)
		}
		t.noted[k] = true
		t.logger.Info("endpoint policy run differently over HTTP", xdslog.KeyCluster, p.Leaf, xdslog.KeyPolicy, pc.Note())
	}
}
