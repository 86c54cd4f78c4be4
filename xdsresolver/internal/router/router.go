// SPDX-License-Identifier: Apache-2.0

// Package router is the LB policy of package xdsresolver's channels, on
// gRPC's public balancer API: per RPC it routes (gRFC A28) with the
// data-plane configuration of package dataplane, and balances over the
// route cluster's priorities (gRFC A56: the first READY one, failover
// timers, child retention), localities and endpoints, whose endpoint
// policies (round_robin, ring_hash, …) are gRPC's own balancers, its
// children. Around them it does what gRPC's xDS LB tree does: drops and
// circuit breaking, load reports, outlier detection (ejection through the
// health listener of the children's SubConns, gRFC A50), stateful
// sessions (gRFC A55), the TLS of a cluster's addresses (gRFC A29) and
// the request hash of ring hash (gRFC A42).
//
// The resolver hands it a Config in the resolver.State's attributes
// (Attributes); Register registers it with grpc under Name.
//
// Files by concern: router.go (the balancer's API, its goroutines),
// children.go (the endpoint-policy children and the calls into them),
// clusters.go (route clusters, kept while RPCs picked for them run),
// priority.go (priority selection, failover and child retention),
// picker.go (the per-RPC pick), subconn.go (SubConns of outlier detection
// and sessions), outlier.go, session.go, ringhash.go.
package router

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// Name is the name of the LB policy that the resolver's service config
// names.
const Name = "proxyless_xds_router_experimental"

// ServiceConfig is the service config that names the router, without
// method configs; the configuration itself travels in the State's
// attributes.
const ServiceConfig = `{"loadBalancingConfig":[{"` + Name + `":{}}]}`

// failoverTimeout is how long a priority may stay CONNECTING before the
// next one is used (gRFC A56).
const failoverTimeout = 10 * time.Second

// childRetention is how long the children of a started priority stay
// once a higher priority is used instead, ready for the next failover,
// before they are closed (gRFC A56, the priority policy's child
// retention).
const childRetention = 15 * time.Minute

var registerOnce sync.Once

// Register registers the router LB policy with grpc, once per process;
// xdsresolver.NewBuilder calls it (never an init function).
func Register() {
	registerOnce.Do(func() {
		balancer.Register(builder{})
		balancer.Register(targetBuilder{}) // rls.go
		registerLBMetrics()
	})
}

// Config is one configuration of a channel, made by the resolver from a
// dataplane.Config and handed to the router in the resolver.State's
// attributes. It is immutable once made.
type Config struct {
	// DP is the data-plane configuration: the routes, the clusters.
	DP *dataplane.Config
	// Clusters are what the router runs of DP.Clusters, by the same
	// names.
	Clusters map[string]*Cluster
	// Version counts the configurations of a resolver, for logs.
	Version uint64
	// Timer starts the failover, child retention and outlier detection
	// timers; nil for time.AfterFunc.
	Timer TimerFunc
	// Load receives the load of clusters with lrs_server "self"; nil when
	// not reported.
	Load *lrs.Store
	// Breakers counts the RPCs in flight of circuit breaking (gRFC A32),
	// shared by the channels of a Builder; nil in unit tests (the router
	// then has its own).
	Breakers *dataplane.Breakers
	// Intercepted: the channel has DialOptions' interceptors, which put
	// the route they matched in the RPC's context (WithRouteChoice).
	Intercepted bool
	// Providers are the certificate providers of clusters with a
	// transport socket (gRFC A29); nil in unit tests without security.
	Providers *xdscreds.ProviderStore
	// AuthorityRewrite: the routes' auto_host_rewrite applies (gRFC A81):
	// the route configuration comes from trusted management servers.
	// An RPC of such a route gets its endpoint's host name as :authority.
	AuthorityRewrite bool
	// Plugins are the cluster specifier plugins the routes use, by name
	// (rls.go); nil when there are none.
	Plugins map[string]*Plugin
	// Subscribe subscribes to a cluster that no route names, for as long
	// as a plugin uses it (depmgr.Manager.SubscribeToCluster): the
	// configurations then have it; nil in unit tests.
	Subscribe func(cluster string) (cancel func())
}

// Cluster is what the router runs for a route cluster: its priorities,
// or its error.
type Cluster struct {
	// DP is the cluster's data-plane configuration; when DP.Err is set,
	// the cluster's RPCs fail with it.
	DP *dataplane.Cluster
	// Priorities are those of DP, highest first.
	Priorities []*Priority
}

// Priority is one priority of a leaf cluster with its children.
type Priority struct {
	*dataplane.Priority
	// Policy is the leaf cluster's endpoint policy.
	Policy ChildPolicy
	// Children are the priority's localities, each run by a child of
	// Policy; for a policy over the whole priority (PerPriority), one
	// child holding every endpoint of the priority.
	Children []ChildConfig
	// Labels are the xDS labels of the RPCs to each locality of the
	// priority (package calllabels), made once per configuration.
	Labels map[resources.LocalityID]*calllabels.Labels
	// BackendMetrics are the ORCA fields the load reports carry (gRFC
	// A64, A85); nil for none.
	BackendMetrics *lrs.BackendMetrics
}

// ChildPolicy is the endpoint policy of a leaf cluster: a grpc balancer
// and its config.
type ChildPolicy struct {
	Name   string // registered grpc balancer name
	JSON   string // its config, for comparison
	Config serviceconfig.LoadBalancingConfig
	// PerPriority: one child for the whole priority, whose endpoint
	// weights carry the locality weights (ring_hash and every policy not
	// under wrr_locality, as in gRPC's xDS LB tree), rather than one per
	// locality.
	PerPriority bool
	// RingHash: the policy is ring_hash, which the picker gives the
	// request hash of each RPC (gRFC A42).
	RingHash bool
}

// ChildConfig is one child of a priority: a locality, or the whole
// priority.
type ChildConfig struct {
	Locality resources.LocalityID // zero for a child over the whole priority
	Weight   uint32
	// Key identifies the child across configurations: unique per leaf,
	// priority, locality, policy and the leaf's TLS, outlier detection
	// and sessions (a change of any gives a new child, so new
	// connections).
	Key       string
	Endpoints []resolver.Endpoint
	// AddrLocality maps each address to its locality, for a child over a
	// whole priority; nil otherwise.
	AddrLocality map[string]resources.LocalityID
	// Labels are the xDS labels of the child's locality; nil for a child
	// over the whole priority.
	Labels *calllabels.Labels
}

// configKey is the resolver.State attribute key of *Config.
type configKey struct{}

// Attributes returns the State attributes that hand cfg to the router.
func Attributes(cfg *Config) *attributes.Attributes {
	return attributes.New(configKey{}, cfg)
}

// RouteChoice is the route an interceptor matched for an RPC, in the
// configuration Cfg; the picker uses it when its configuration is Cfg.
type RouteChoice struct {
	Cfg     *Config
	Route   *dataplane.Route
	Target  *dataplane.Target  // the route's cluster for the RPC; nil for a route that does not forward
	Session *dataplane.Session // the RPC's session (gRFC A55); nil for none
	// Headers, when not nil, is the RPC's context before the
	// interceptor's header rewriting: the picker routes, hashes and
	// balances (RLS keys included) on the headers the application sent,
	// as Envoy's router picks before it rewrites a request's headers.
	Headers context.Context
	// PickFailed: the picker failed the RPC's last pick with a status of
	// its own (a drop, circuit breaking, a route or cluster error), which
	// gRPC never retries; the interceptor's retries (package rpcretry)
	// read it after each attempt, and clear it before the next.
	PickFailed atomic.Bool
	// Labels are the xDS labels of the RPC's current attempt, set by the
	// picker (package calllabels); the RPC's context holds them.
	Labels calllabels.Holder
}

type routeChoiceKey struct{}

// WithRouteChoice returns ctx with rc, for the picker.
func WithRouteChoice(ctx context.Context, rc *RouteChoice) context.Context {
	return context.WithValue(ctx, routeChoiceKey{}, rc)
}

// TimerFunc starts a timer that calls f after d; the returned function
// stops it. Tests give their own.
type TimerFunc func(d time.Duration, f func()) (stop func() bool)

func realTimer(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

type builder struct{}

func (builder) Name() string { return Name }

func (builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return newRouter(cc, opts)
}

type lbConfig struct {
	serviceconfig.LoadBalancingConfig
}

func (builder) ParseConfig(json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return lbConfig{}, nil
}

// router is the balancer of one channel.
//
// Locking. childMu serializes every call into the children's balancers
// (grpc's calls into the router, the children's SubConn listeners, which
// the router wraps, the timers and the router's own goroutines); mu
// guards the router's state. childMu is taken before mu, never after. A
// child calls back (UpdateState) with childMu held by whoever called into
// it: it takes mu only, and work that needs calls into children (starting
// a priority, gRFC A56) is queued, done by the holder of childMu before
// it releases it (withChildren, children.go).
//
// Goroutines. The router starts goroutines for work that cannot run where
// it is found (a child's UpdateState from outside the router's calls, the
// end of the last RPC of a retired cluster), and its timers run their
// functions on goroutines of their own: each is counted in wg while it
// runs (enter, goLocked), never once closed is set, and Close waits for
// them.
type router struct {
	// Set at creation, read-only afterwards.
	cc        balancer.ClientConn
	bopts     balancer.BuildOptions
	channelID uint64 // hashed by channel_id hash policies (gRFC A42)

	childMu sync.Mutex
	wg      sync.WaitGroup // the router's running goroutines; see enter

	mu       sync.Mutex
	cfg      *Config
	closed   bool
	children children                 // children.go
	clusters clusters                 // clusters.go
	counters map[string]*atomic.Int64 // in-flight RPCs by Priority.BreakerKey (gRFC A32)
	ods      map[string]*odGroup      // outlier detection by Priority.GroupKey (gRFC A50)
	sess     map[string]*sessGroup    // sessions by Priority.GroupKey (gRFC A55)
	targets  targets                  // the children of RLS (rls.go)
	// current is the last picker, for the pickers of RLS's targets.
	current atomic.Pointer[picker]
	// hostnames are the host names of the endpoints of the SubConns the
	// children created (balancer.SubConn → string), for authority
	// rewriting (gRFC A81); only those with one.
	hostnames sync.Map
}

func newRouter(cc balancer.ClientConn, opts balancer.BuildOptions) *router {
	return &router{
		cc:        cc,
		bopts:     opts,
		channelID: rand.Uint64(),
		children:  children{byKey: make(map[string]*child)},
		clusters:  clusters{prios: make(map[string][]*prioState), refs: make(map[string]*clusterRef), retained: make(map[string]*Cluster)},
		counters:  make(map[string]*atomic.Int64),
		ods:       make(map[string]*odGroup),
		sess:      make(map[string]*sessGroup),
	}
}

// enter counts a goroutine of the router that is about to do f's work:
// false once the router is closed (the work is not to be done). The
// caller calls r.wg.Done when the work is over.
func (r *router) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

// goLocked runs f on a goroutine of its own, which Close waits for;
// nothing once the router is closed. The caller holds mu.
func (r *router) goLocked(f func()) {
	if r.closed {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// newTimerLocked starts a timer that runs f after d, on a goroutine
// counted as the router's (nothing once closed); the returned function
// stops it. The caller holds mu.
func (r *router) newTimerLocked(d time.Duration, f func()) func() bool {
	start := realTimer
	if r.cfg.Timer != nil {
		start = r.cfg.Timer
	}
	return start(d, func() {
		if !r.enter() {
			return
		}
		defer r.wg.Done()
		f()
	})
}

// UpdateClientConnState applies a configuration: the children of the
// priorities already started get their new endpoints (new localities get
// a child), children no longer used are closed, and the picker is
// rebuilt, which starts the priorities it needs (gRFC A56).
func (r *router) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.ResolverState.Attributes.Value(configKey{}).(*Config)
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
		for name, c := range cfg.Clusters {
			r.clusters.keep(r, name, len(c.Priorities))
			for i, p := range c.Priorities {
				if p.Outlier != nil {
					r.updateODLocked(p)
				}
				if p.Sessions {
					r.updateSessLocked(p)
				}
				key := p.BreakerKey()
				if r.counters[key] == nil {
					if cfg.Breakers != nil {
						r.counters[key] = cfg.Breakers.Counter(key)
					} else {
						r.counters[key] = new(atomic.Int64)
					}
				}
				if r.clusters.prios[name][i].started {
					r.startPriorityLocked(p, want)
				}
			}
		}
		r.startPluginsLocked(want)
		r.clusters.retire(old, cfg)
		removed := r.pruneLocked(want)
		r.pruneGroupsLocked()
		r.children.dirty = true
		r.mu.Unlock()
		closeChildren(removed)
	})
	return nil
}

// ResolverError passes err to the children, which fail their RPCs with it
// if they have no endpoint.
func (r *router) ResolverError(err error) {
	r.withChildren(func() {
		for _, c := range r.builtChildren() {
			c.b.ResolverError(err)
		}
	})
}

// UpdateSubConnState is not used: children's SubConns have listeners.
func (r *router) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle asks every child to connect.
func (r *router) ExitIdle() {
	r.withChildren(func() {
		for _, c := range r.builtChildren() {
			c.b.ExitIdle()
		}
	})
}

// Close closes the children and stops the timers, then waits for the
// router's goroutines (which find it closed and do nothing more).
func (r *router) Close() {
	r.childMu.Lock()
	r.mu.Lock()
	r.closed = true
	r.clusters.stopTimers()
	for _, g := range r.ods {
		g.stopTimer()
	}
	for _, g := range r.sess {
		g.close()
	}
	children := r.children.takeAll()
	r.mu.Unlock()
	closeChildren(children)
	r.childMu.Unlock()
	r.wg.Wait()
}
