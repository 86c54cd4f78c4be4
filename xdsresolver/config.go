// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
	"google.golang.org/grpc/serviceconfig"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// routerConfig is one configuration of a channel, made by the resolver
// from a depmgr.XDSConfig and handed to the router balancer in the
// resolver.State's attributes: the routes of the virtual host, compiled
// for matching, and for each cluster they name, its priorities. It is
// immutable once made.
type routerConfig struct {
	// routes are the routes of the virtual host, in order.
	routes []route
	// clusters are the clusters the routes name, by canonical name.
	clusters map[string]*clusterConfig
	// version counts the configurations of a resolver, for logs.
	version uint64
	// source is the XDSConfig the configuration was made from, for the
	// interceptors (filters, Listener settings); nil in unit tests.
	source *depmgr.XDSConfig
	// timer starts the failover timers; nil for time.AfterFunc.
	timer timerFunc
	// load receives the load of clusters with lrs_server "self"; nil
	// when not reported.
	load *lrs.Store
	// breakers counts the RPCs in flight per leaf cluster and EDS
	// service for max_requests (gRFC A32), shared by the channels of a
	// Builder; nil in unit tests (the router then has its own).
	breakers *breakers
	// intercepted: the channel has DialOptions' interceptors, which put
	// the route they matched in the RPC's context.
	intercepted bool
	// retrying: the service config has retry policies (retry.go); the
	// interceptors turn retries off for the RPCs of routes without one.
	retrying bool
	// sessions: the Listener has a stateful session filter (gRFC A55):
	// every priority tracks its SubConns for sessions (session.go).
	sessions bool
	// providers are the certificate providers of clusters with a
	// transport socket (gRFC A29); nil in unit tests without security.
	providers *xdscreds.ProviderStore
}

// route is a route compiled for matching.
type route struct {
	desc    string // "route 2 (\"name\")", for messages
	match   routing.Match
	action  resources.RouteActionKind
	plugin  string           // cluster_specifier_plugin name, for messages
	targets []weightedTarget // cluster or weighted_clusters, cumulative weights
	total   uint64           // sum of the weights
	hash    []resources.HashPolicy
	res     *resources.Route // the route, for the interceptors
	// retry is the retry policy of the route's RPCs (the route's, else
	// the virtual host's) in service config JSON; "" for none (retry.go).
	retry retryKey
	// faults are the fault injection filters' configs for the route
	// (gRFC A33), in chain order; faultErr says why they cannot be used
	// (the route's RPCs then fail).
	faults   []*faultConfig
	faultErr error
	// session is the stateful session config of the route's RPCs (gRFC
	// A55, session.go); nil for none. sessionErr says why it cannot be
	// used (the route's RPCs then fail).
	session    *resources.CookieSession
	sessionErr error
}

// weightedTarget is a cluster of a route with the cumulative weight of the
// route's clusters up to and including it.
type weightedTarget struct {
	cluster string // canonical
	cum     uint64
	// faults and faultErr replace the route's when the weighted cluster
	// overrides a fault filter (typed_per_filter_config, gRFC A39);
	// ownFaults says so.
	faults    []*faultConfig
	faultErr  error
	ownFaults bool
}

// pickTarget picks a cluster of rt at random by weight.
func (rt *route) pickTarget() *weightedTarget {
	if len(rt.targets) == 1 {
		return &rt.targets[0]
	}
	x := rand.Uint64N(rt.total)
	for i := range rt.targets {
		if x < rt.targets[i].cum {
			return &rt.targets[i]
		}
	}
	return &rt.targets[len(rt.targets)-1] // cannot happen: x < total
}

// clusterConfig is what a route cluster leads to: its priorities, highest
// first (for an aggregate cluster, the priorities of its leaves in order,
// gRFC A37), or the error that makes RPCs routed to it fail.
type clusterConfig struct {
	name       string
	err        error
	priorities []*priorityConfig
}

// priorityConfig is one priority of a leaf cluster: its localities and the
// settings of the leaf cluster that apply to RPCs sent to it.
type priorityConfig struct {
	leaf        string // leaf cluster name, canonical
	edsService  string // EDS service name (for load reports); leaf when unset
	priority    uint32
	drops       []resources.DropOverload
	maxRequests uint32
	lrs         bool   // the leaf cluster has lrs_server "self"
	lrsService  string // eds_cluster_config.service_name as received, for load reports
	policy      childPolicy
	// security is the leaf cluster's TLS configuration (gRFC A29); nil
	// for plaintext (the channel's fallback credentials). Its children's
	// keys include it, so that a change gives new children, and so new
	// connections.
	security *resources.SecurityConfig
	// od is the leaf cluster's outlier detection (gRFC A50, outlier.go);
	// nil when it has none, or one that ejects nothing. Its children's
	// keys say whether it has one: their SubConns are wrapped.
	od *resources.OutlierDetection
	// session: sessions may be pinned to the priority's endpoints, hosts
	// (gRFC A55, session.go); its children's keys say so: their SubConns
	// are wrapped.
	session bool
	hosts   []sessHost
	// localities are the localities with a usable endpoint. For a
	// policy that balances over the whole priority (ring_hash), one
	// pseudo-locality holding every usable endpoint of the priority.
	localities []localityConfig
}

// childPolicy is the endpoint policy of a leaf cluster.
type childPolicy struct {
	name   string // registered grpc balancer name
	json   string // its config, for comparison
	config serviceconfig.LoadBalancingConfig
	// perPriority: one child for the whole priority, whose endpoint
	// weights carry the locality weights (ring_hash and every policy not
	// under wrr_locality, as in gRPC's xDS LB tree), rather than one per
	// locality.
	perPriority bool
	// ringHash: the policy is ring_hash, which the picker gives the
	// request hash of each RPC (gRFC A42).
	ringHash bool
}

// localityConfig is one locality of a priority.
type localityConfig struct {
	id        resources.LocalityID
	weight    uint32
	key       string // child balancer key: unique per leaf, priority, locality and policy
	endpoints []resolver.Endpoint
	// addrLocality maps each address to its locality, for the
	// pseudo-locality of a per-priority policy; nil otherwise.
	addrLocality map[string]resources.LocalityID
}

// buildConfig compiles the virtual host of s. ringHashHeader is the header
// hashed when a route to a RING_HASH cluster has no hash policy ("" for
// a random hash). Errors concern the whole virtual host; cluster errors
// are kept in the cluster's config and fail only the RPCs routed there.
func buildConfig(s snapshot, ringHashHeader string, providers *xdscreds.ProviderStore) (*routerConfig, error) {
	where := describeVH(s)
	if s.virtualHost == nil {
		return nil, fmt.Errorf("%s: no virtual host", where)
	}
	vh := s.virtualHost
	if len(vh.Routes) == 0 {
		return nil, fmt.Errorf("%s: %w", where, ErrNoRoute)
	}
	cfg := &routerConfig{routes: make([]route, 0, len(vh.Routes)), clusters: make(map[string]*clusterConfig), providers: providers}
	cfg.sessions = s.listener != nil && hasSessionFilter(s.listener.HTTPFilters)
	names := routing.NewIndex()
	for i := range vh.Routes {
		r := &vh.Routes[i]
		rt := route{desc: describeRoute(i, r), match: routing.Compile(&r.Match, names), action: r.Action.Kind, plugin: r.Action.ClusterSpecifierPlugin, hash: r.Action.HashPolicies, res: r}
		rt.retry = routePolicy(&rt, vh)
		if s.listener != nil {
			rt.faults, rt.faultErr = routeFaults(s.listener.HTTPFilters, vh, r, nil)
		}
		if cfg.sessions {
			rt.session, rt.sessionErr = routeSession(s.listener.HTTPFilters, vh, r)
		}
		if len(rt.hash) == 0 && ringHashHeader != "" {
			rt.hash = []resources.HashPolicy{{Kind: resources.HashPolicyHeader, HeaderName: ringHashHeader}}
		}
		var members []resources.WeightedCluster
		switch r.Action.Kind {
		case resources.RouteActionCluster:
			members = []resources.WeightedCluster{{Name: r.Action.Cluster, Weight: 1}}
		case resources.RouteActionWeightedClusters:
			members = r.Action.WeightedClusters
		}
		for _, m := range members {
			name := resources.CanonicalName(m.Name)
			rt.total += uint64(m.Weight)
			wt := weightedTarget{cluster: name, cum: rt.total}
			if s.listener != nil && overridesFault(s.listener.HTTPFilters, m.FilterOverrides) {
				wt.faults, wt.faultErr = routeFaults(s.listener.HTTPFilters, vh, r, m.FilterOverrides)
				wt.ownFaults = true
			}
			rt.targets = append(rt.targets, wt)
			if _, done := cfg.clusters[name]; !done {
				cfg.clusters[name] = buildCluster(name, s.cluster(name), providers, cfg.sessions)
			}
		}
		cfg.routes = append(cfg.routes, rt)
	}
	orderRoutes(cfg.routes)
	return cfg, nil
}

// buildCluster returns the config of the route cluster name, whose result
// is r (nil when absent). Its error names the cluster. providers hold the
// certificate providers that the security configs of its leaves name;
// sessions says whether its priorities track their SubConns for sessions.
func buildCluster(name string, r *depmgr.ClusterResult, providers *xdscreds.ProviderStore, sessions bool) *clusterConfig {
	cc := &clusterConfig{name: name}
	switch {
	case r == nil:
		cc.err = fmt.Errorf("cluster %q is not in the configuration", name)
	case r.Err != nil:
		cc.err = fmt.Errorf("cluster %q: %w", name, r.Err)
	case r.Config == nil || r.Config.Cluster == nil:
		cc.err = fmt.Errorf("cluster %q has no configuration", name)
	}
	if cc.err != nil {
		return cc
	}
	leaves := []*depmgr.ClusterConfig{r.Config}
	if r.Config.IsAggregate() {
		leaves = r.Config.Leaves
	}
	var errs []error
	for _, leaf := range leaves {
		if leaf == nil || leaf.Cluster == nil {
			continue
		}
		ps, err := leafPriorities(leaf, providers, sessions)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %q: %w", leaf.Name, err))
			continue
		}
		cc.priorities = append(cc.priorities, ps...)
	}
	if len(cc.priorities) == 0 {
		for _, sk := range r.Config.Skipped {
			if sk != nil {
				errs = append(errs, fmt.Errorf("cluster %q: %w", sk.Name, sk.Err))
			}
		}
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("cluster %q: %w", name, ErrNoUsableEndpoints))
		}
		if r.Config.IsAggregate() {
			cc.err = fmt.Errorf("aggregate cluster %q: %w", name, joinErrors(errs))
		} else {
			cc.err = joinErrors(errs)
		}
	}
	return cc
}

// leafPriorities returns the priorities of a leaf cluster that have a
// usable endpoint, highest first; an error when the cluster's policy
// cannot be run, when its security config names a certificate provider
// instance that providers cannot run, or when no priority has a usable
// endpoint. With sessions, each priority lists the addresses sessions may
// be pinned to, DRAINING ones included (gRFC A55).
func leafPriorities(leaf *depmgr.ClusterConfig, providers *xdscreds.ProviderStore, sessions bool) ([]*priorityConfig, error) {
	if _, err := usablePriority(leaf); err != nil {
		return nil, err
	}
	policy, err := childPolicyOf(leaf.Cluster.LBPolicy)
	if err != nil {
		return nil, err
	}
	c := leaf.Cluster
	if err := checkSecurity(c.Security, providers); err != nil {
		return nil, err
	}
	sec := securityKey(c.Security)
	var od *resources.OutlierDetection
	if odActive(c.OutlierDetection) {
		od = c.OutlierDetection
		sec += "\x00outlier-detection"
	}
	if sessions {
		sec += "\x00sessions"
	}
	eds := c.EDSServiceName
	if eds == "" {
		eds = leaf.Name
	}
	var drops []resources.DropOverload
	if leaf.Endpoints != nil {
		drops = leaf.Endpoints.DropOverloads
	}
	// The weight of the localities of each priority that have a usable
	// endpoint.
	localitySums := make(map[uint32]uint64)
	for _, l := range leaf.Endpoints.Localities {
		if slices.ContainsFunc(l.Endpoints, func(e resources.Endpoint) bool { return usable(e.HealthStatus) && len(e.Addresses) > 0 }) {
			localitySums[l.Priority] += uint64(l.Weight)
		}
	}
	byPrio := make(map[uint32]*priorityConfig)
	var out []*priorityConfig
	for _, l := range leaf.Endpoints.Localities {
		var eps []resolver.Endpoint
		var sum uint64
		for _, e := range l.Endpoints {
			if usable(e.HealthStatus) && len(e.Addresses) > 0 {
				sum += uint64(e.Weight)
			}
		}
		for _, e := range l.Endpoints {
			if !usable(e.HealthStatus) || len(e.Addresses) == 0 {
				continue
			}
			ep := resolver.Endpoint{Addresses: make([]resolver.Address, len(e.Addresses))}
			for i, a := range e.Addresses {
				ep.Addresses[i] = resolver.Address{Addr: a}
			}
			w := e.Weight
			if policy.perPriority {
				// The endpoint's share of its locality times the
				// locality's share of the priority, in UQ1.31, as gRPC
				// weights endpoints for ring_hash (gRFC A42, A113).
				w = max(1, fixedPointMul(fraction(uint64(e.Weight), sum), fraction(uint64(l.Weight), localitySums[l.Priority])))
			}
			ep = weight.Set(ep, weight.EndpointInfo{Weight: w})
			ep = ringhash.SetHashKey(ep, e.HashKey)
			ep = setEndpointInfo(ep, EndpointInfo{
				Cluster: leaf.Name, Locality: l.ID, Priority: l.Priority,
				LocalityWeight: l.Weight, Weight: e.Weight, HealthStatus: e.HealthStatus, Hostname: e.Hostname,
			})
			eps = append(eps, ep)
		}
		if len(eps) == 0 {
			continue
		}
		p := byPrio[l.Priority]
		if p == nil {
			p = &priorityConfig{leaf: leaf.Name, edsService: eds, priority: l.Priority, drops: drops, maxRequests: c.MaxRequests, lrs: c.LRSServerSelf, lrsService: c.EDSServiceName, policy: policy, security: c.Security, od: od, session: sessions}
			byPrio[l.Priority] = p
			out = append(out, p)
		}
		if policy.perPriority {
			if len(p.localities) == 0 {
				p.localities = []localityConfig{{weight: 1, key: childKey(leaf.Name, l.Priority, "*", policy.name, sec), addrLocality: make(map[string]resources.LocalityID)}}
			}
			p.localities[0].endpoints = append(p.localities[0].endpoints, eps...)
			for _, ep := range eps {
				for _, a := range ep.Addresses {
					p.localities[0].addrLocality[a.Addr] = l.ID
				}
			}
			continue
		}
		p.localities = append(p.localities, localityConfig{id: l.ID, weight: l.Weight, key: childKey(leaf.Name, l.Priority, l.ID.String(), policy.name, sec), endpoints: eps})
	}
	if sessions {
		addSessionHosts(leaf, byPrio)
	}
	// Priorities are numbered without gaps; those without a
	// usable endpoint are left out, which fails over at once, as their
	// child would report TRANSIENT_FAILURE.
	sortPriorities(out)
	return out, nil
}

// addSessionHosts lists, in each priority of byPrio, the addresses of
// leaf's endpoints of that priority that are UNKNOWN, HEALTHY or DRAINING,
// with whether the cluster's override_host_status allows sessions to them
// (gRFC A55).
func addSessionHosts(leaf *depmgr.ClusterConfig, byPrio map[uint32]*priorityConfig) {
	for _, l := range leaf.Endpoints.Localities {
		p := byPrio[l.Priority]
		if p == nil {
			continue
		}
		for _, e := range l.Endpoints {
			switch e.HealthStatus {
			case resources.HealthStatusUnknown, resources.HealthStatusHealthy, resources.HealthStatusDraining:
			default:
				continue
			}
			addrs := strings.Join(e.Addresses, ",")
			for _, a := range e.Addresses {
				p.hosts = append(p.hosts, sessHost{addr: a, addrs: addrs, health: e.HealthStatus, allowed: leaf.Cluster.OverrideHostStatus.Contains(e.HealthStatus), locality: l.ID})
			}
		}
	}
}

func sortPriorities(ps []*priorityConfig) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].priority < ps[j-1].priority; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// childKey is the key of the child balancer of a locality (or of a whole
// priority) of a leaf cluster with an endpoint policy and a security
// config (securityKey).
func childKey(leaf string, prio uint32, locality, policy, security string) string {
	return leaf + "\x00" + strconv.FormatUint(uint64(prio), 10) + "\x00" + locality + "\x00" + policy + "\x00" + security
}

// childPolicyOf returns the grpc balancer and its parsed config for the
// endpoint policy p of a leaf cluster (see the package doc, "Load
// balancing"). A ring_hash child hashes the header the router sets from
// the route's hash policies (requestHashHeader, gRFC A76).
func childPolicyOf(p resources.LBPolicy) (childPolicy, error) {
	name, cfg, err := policyConfig(p, hashHeader)
	if err != nil {
		return childPolicy{}, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return childPolicy{}, fmt.Errorf("encoding the config of %s: %w", name, err)
	}
	b := balancer.Get(name)
	// As in gRPC's xDS LB tree: a policy inside wrr_locality (lb_policy
	// ROUND_ROBIN, or load_balancing_policy WrrLocality) runs per
	// locality, under a pick by locality weight; any other (ring_hash,
	// lb_policy LEAST_REQUEST, a policy of load_balancing_policy on its
	// own, a custom one) over every endpoint of the priority.
	perPriority := name == lbRingHash || !p.WeightedByLocality
	cp := childPolicy{name: name, json: string(js), perPriority: perPriority, ringHash: name == lbRingHash}
	if parser, ok := b.(balancer.ConfigParser); ok {
		if cp.config, err = parser.ParseConfig(js); err != nil {
			return childPolicy{}, fmt.Errorf("load balancing policy %s: grpc's %s rejects %s: %w", p.Kind, name, js, err)
		}
	}
	return cp, nil
}

// maxStreamDuration returns the deadline cap of the RPCs of route r: the
// route's max_stream_duration, else the Listener's; 0 for none (gRFC A31).
func (c *routerConfig) maxStreamDuration(r *route) time.Duration {
	if d := r.res.Action.MaxStreamDuration; d != nil {
		return *d
	}
	if c.source != nil {
		return c.source.Listener.MaxStreamDuration
	}
	return 0
}

// breakers holds the in-flight RPC counters of circuit breaking (gRFC
// A32) by leaf cluster and EDS service name, shared by the channels of a
// Builder as gRPC shares them per xDS client. Safe for concurrent use.
type breakers struct {
	mu       sync.Mutex
	counters map[string]*atomic.Int64
}

// counter returns the counter of key, created on first use.
func (b *breakers) counter(key string) *atomic.Int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counters[key]
	if c == nil {
		c = new(atomic.Int64)
		b.counters[key] = c
	}
	return c
}

// Fixed-point shares, UQ1.31 (gRFC A113): 1<<31 is 1.
const fixedPointBits = 31

// fraction returns num/den in UQ1.31; num ≤ den; 0 when den is 0.
func fraction(num, den uint64) uint32 {
	if den == 0 {
		return 0
	}
	return uint32(num << fixedPointBits / den)
}

func fixedPointMul(a, b uint32) uint32 {
	return uint32(uint64(a) * uint64(b) >> fixedPointBits)
}

// orderRoutes reorders the header matchers of each route, rarest first
// (routing.OrderMatchers): an RPC that does not match a route is told so
// after fewer evaluations.
func orderRoutes(routes []route) {
	ms := make([]*routing.Match, len(routes))
	for i := range routes {
		ms[i] = &routes[i].match
	}
	routing.OrderMatchers(ms)
}
