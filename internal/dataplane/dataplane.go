// SPDX-License-Identifier: Apache-2.0

// Package dataplane is the data-plane configuration of one virtual host,
// built from a complete configuration of depmgr (a depmgr.XDSConfig), and
// the per-request decisions every data path of this module makes with it
// the same way, whatever it carries: the gRPC channel of package
// xdsresolver and the net/http data path. It imports nothing of gRPC.
//
// # What a request goes through
//
//	cfg, err := dataplane.Build(dataplane.SnapshotOf(xdsConfig), opts)
//	rt := cfg.Route(path, &headers)            // the first route that matches (gRFC A28); nil: none
//	t := rt.PickTarget()                        // weighted clusters: one at random by weight
//	c := cfg.Clusters[t.Cluster]                // c.Err: the cluster's requests fail
//	p := c.Priorities[i]                        // the data path selects the priority (gRFC A56)
//	if cat, drop := p.PickDrop(); drop {...}    // drop_overloads (gRFC A27), before anything else
//	n := breakers.Counter(p.BreakerKey())       // circuit breaking (gRFC A32):
//	if !dataplane.Acquire(n, p.MaxRequests) {...} // refused; else n.Add(-1) when the request ends
//	l := p.Localities[j]                        // by Locality.Weight among the usable ones
//	e := l.Endpoints[k]                         // by the cluster's endpoint policy (Priority.Policy)
//
// with, around it: the route's hash (Route.RequestHash, gRFC A42) for
// ring hash; its deadline cap (Config.MaxStreamDuration, gRFC A31); its
// fault injection filters (Target.Faults, InjectFault, gRFC A33); its
// stateful session (Route.Session, NewSession, SessionTable, gRFC A55,
// A60); the load report of the pick (Priority.LoadReported,
// lrs.Store.Cluster with Priority.Leaf and Priority.LRSService, then
// ClusterLoad.Locality: lrs.LocalityLoad.Start and Finish); and the
// result of the request for outlier detection (OutlierEndpoint.Record,
// OutlierDetector, gRFC A50). Headers reach the matchers through
// routing.Headers: a data path that is not gRPC sets its Source.
//
// What stays with the data path: the connections and their states, which
// priority and which localities serve (a gRPC channel follows its
// connectivity states), the endpoint policy (round_robin, ring_hash, …:
// Options.Policy checks that the data path can run one, and its result
// rides with the priorities), retries, and the TLS handshakes of a
// cluster's Priority.Security (checked with Options.Providers).
//
// # Concurrency and immutability
//
// A Config and everything it points to (routes, targets, clusters,
// priorities, localities, endpoints, the resources values they share
// with the depmgr.XDSConfig) are immutable once Build returns: share one
// between any number of goroutines, and build a new one for every new
// XDSConfig. Its methods, and Route's, Target's and Priority's, are safe
// for concurrent use and take no lock. A routing.Headers is one
// request's: it caches the headers it read, and is used by one goroutine.
//
// The stateful parts are safe for concurrent use as their docs say:
// Breakers (shared by every channel or transport of a client, as gRPC
// shares circuit breakers per xDS client), the active fault count of
// InjectFault (process-wide, as gRFC A33 says), a Session (its request's,
// read and written by the request's pick and its response), a
// SessionTable (lookups lock-free; updates by one goroutine), and an
// OutlierDetector, which its owner guards with a lock of its own, but
// for OutlierEndpoint.Record, which the end of any request calls without
// one.
//
// # Outlier detection
//
// One OutlierDetector per priority of a leaf cluster whose
// Priority.Outlier is set: SetEndpoints with the priority's endpoints on
// every configuration (it keeps the state of the endpoints that stay);
// Endpoint(addr) gives the OutlierEndpoint of an address, whose Record
// the end of each request calls with its error (nil: success; the data
// path decides what a failure is: gRPC counts any non-OK status, HTTP a
// 5xx or a failed connection). The owner runs the interval timer:
// Start(now) says when the current interval ends (a whole interval for
// a new detector, the rest of it after an update, as gRPC does), Sweep(now, nil)
// at that time runs the algorithms on the interval's counts and returns
// the endpoints to eject and uneject; an ejected endpoint is not picked
// until unejected (OutlierEndpoint.Ejected). The clock is the caller's:
// pass time.Now(), or a fake one in tests.
//
// # Errors
//
// Build fails for the virtual host as a whole (none, or no route:
// ErrNoRoute). A cluster's error (ErrNoUsableEndpoints, an unsupported
// policy wrapping ErrUnsupported, an unknown certificate provider
// instance) is in Cluster.Err and fails only the requests routed to it;
// a route's fault or session config error is in Route.FaultErr (a
// weighted cluster's own: Target.FaultErr; Target.FaultsFor picks) and
// Route.SessionErr, and fails the route's requests. Every error names the
// resource it comes from.
package dataplane

import (
	"errors"
	"fmt"
	"strings"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// Errors of Build. The errors of a Config wrap them; test with errors.Is.
var (
	// ErrNoRoute is wrapped when the selected virtual host has no route.
	ErrNoRoute = errors.New("virtual host has no route")

	// ErrNoUsableEndpoints is wrapped by the error of a cluster that has
	// no endpoint a request may be sent to: none at all, or none HEALTHY
	// or UNKNOWN.
	ErrNoUsableEndpoints = errors.New("no usable endpoints")

	// ErrUnsupported is wrapped by the error of what the data path cannot
	// run: a cluster's endpoint policy (Options.Policy), a route's fault
	// filter override of another filter's type.
	ErrUnsupported = errors.New("not supported by the xds resolver")
)

// Options are what Build needs of the data path.
type Options struct {
	// DefaultHashHeader is the header hashed for the routes without hash
	// policies (a ring hash cluster's requests then hash it, gRFC A76's
	// requestHashHeader); "" for none: those requests get a random hash.
	DefaultHashHeader string
	// Providers checks the certificate provider instances that a leaf
	// cluster's TLS configuration names (xdscreds.ProviderStore does); nil
	// fails the clusters that have one.
	Providers interface{ Check(instance string) error }
	// Policy checks that the data path can run a leaf cluster's endpoint
	// policy, and returns what the data path keeps of it, which
	// Priority.PolicyConfig carries. An error (wrapping ErrUnsupported)
	// leaves the leaf out, as if it had no endpoint. nil accepts every
	// policy.
	Policy func(resources.LBPolicy) (any, error)
	// HTTP builds the routes of an HTTP data plane
	// (resources.VirtualHost.RoutesForHTTP: with those that match query
	// parameters, R-17.7) instead of gRPC's. The depmgr.Manager must
	// follow them too (depmgr.WithHTTPRoutes).
	HTTP bool
	// HeaderMutations adapts a level of header mutations (of the
	// RouteConfiguration, the virtual host, a route or a weighted
	// cluster; never nil) to the data path, once per Build: it returns
	// the level as the data path applies it (the same, a copy without
	// what the data path refuses, or nil for nothing). The gRPC path
	// refuses what gRPC reserves and decodes the values of "-bin" keys.
	// nil applies every level as it is.
	HeaderMutations func(*resources.HeaderMutations) *resources.HeaderMutations
}

// Snapshot is what Build reads of a configuration. SnapshotOf makes one
// of a depmgr.XDSConfig; tests make their own.
type Snapshot struct {
	Listener    *resources.Listener
	RouteConfig *resources.RouteConfig
	VirtualHost *resources.VirtualHost
	// Cluster returns the result of a cluster the routes name, by
	// canonical name; nil when it has none.
	Cluster func(name string) *depmgr.ClusterResult
	// Others are the names of top-level clusters that may not be named by
	// a route: those subscribed to for cluster specifier plugins (RLS
	// targets, depmgr.Manager.SubscribeToCluster). Build builds them too.
	Others []string
}

// SnapshotOf returns the Snapshot of cfg, whose virtual host depmgr
// selected for its data-plane authority.
func SnapshotOf(cfg *depmgr.XDSConfig) Snapshot {
	s := Snapshot{Listener: cfg.Listener, RouteConfig: cfg.RouteConfig, VirtualHost: cfg.VirtualHost, Cluster: cfg.Cluster}
	if hasPluginRoute(cfg.VirtualHost) {
		for name := range cfg.Clusters() {
			s.Others = append(s.Others, name)
		}
	}
	return s
}

// hasPluginRoute reports whether a route of vh uses a cluster specifier
// plugin, whose clusters are subscribed to dynamically.
func hasPluginRoute(vh *resources.VirtualHost) bool {
	if vh == nil {
		return false
	}
	for i := range vh.Routes {
		if vh.Routes[i].Action.Kind == resources.RouteActionClusterSpecifierPlugin {
			return true
		}
	}
	return false
}

// Config is the data-plane configuration of one virtual host: its routes,
// compiled for matching, and the clusters they lead to. It is immutable.
type Config struct {
	// Routes are the routes of the virtual host, in order.
	Routes []Route
	// Clusters are the clusters the routes name, and Snapshot.Others, by
	// canonical name.
	Clusters map[string]*Cluster
	// Listener is the Listener of the configuration (its HTTP filters,
	// its max_stream_duration); nil only in tests.
	Listener *resources.Listener
	// VirtualHost is the virtual host the routes come from.
	VirtualHost *resources.VirtualHost
	// Sessions: the Listener has a stateful session filter (gRFC A55):
	// the priorities list their SessionHosts.
	Sessions bool
}

// Build compiles the virtual host of s. Errors concern the whole virtual
// host; a cluster's error is in its Cluster and fails only the requests
// routed to it.
func Build(s Snapshot, opts Options) (*Config, error) {
	where := describeVH(s)
	if s.VirtualHost == nil {
		return nil, fmt.Errorf("%s: no virtual host", where)
	}
	vh := s.VirtualHost
	routes := vh.Routes
	if opts.HTTP {
		routes = vh.RoutesForHTTP()
	}
	if len(routes) == 0 {
		return nil, fmt.Errorf("%s: %w", where, ErrNoRoute)
	}
	cfg := &Config{Routes: make([]Route, 0, len(routes)), Clusters: make(map[string]*Cluster), Listener: s.Listener, VirtualHost: vh}
	cfg.Sessions = s.Listener != nil && hasSessionFilter(s.Listener.HTTPFilters)
	names := routing.NewIndex()
	hc := &headerChain{adapter: opts.HeaderMutations}
	hc.vh = hc.adapt(vh.HeaderMutations)
	if s.RouteConfig != nil {
		hc.rc = hc.adapt(s.RouteConfig.HeaderMutations)
		hc.mostSpecificWins = s.RouteConfig.MostSpecificHeaderMutationsWins
	}
	for i := range routes {
		rt := buildRoute(i, &routes[i], names, s.Listener, vh, hc, cfg.Sessions, opts.DefaultHashHeader)
		for _, t := range rt.Targets {
			if _, done := cfg.Clusters[t.Cluster]; !done {
				cfg.Clusters[t.Cluster] = buildCluster(t.Cluster, s.Cluster(t.Cluster), opts, cfg.Sessions)
			}
		}
		cfg.Routes = append(cfg.Routes, rt)
	}
	for _, name := range s.Others {
		if _, done := cfg.Clusters[name]; !done {
			cfg.Clusters[name] = buildCluster(name, s.Cluster(name), opts, cfg.Sessions)
		}
	}
	ms := make([]*routing.Match, len(cfg.Routes))
	for i := range cfg.Routes {
		ms[i] = &cfg.Routes[i].Match
	}
	// An RPC that does not match a route is told so after fewer
	// evaluations: rarest matchers first.
	routing.OrderMatchers(ms)
	return cfg, nil
}

// describeVH names where a configuration's virtual host comes from, for
// errors.
func describeVH(s Snapshot) string {
	var b strings.Builder
	if s.Listener != nil {
		fmt.Fprintf(&b, "listener %q, ", s.Listener.Name)
	}
	switch {
	case s.RouteConfig == nil:
	case s.Listener != nil && s.Listener.InlineRouteConfig == s.RouteConfig:
		fmt.Fprintf(&b, "inline route configuration %q, ", s.RouteConfig.Name)
	default:
		fmt.Fprintf(&b, "route configuration %q, ", s.RouteConfig.Name)
	}
	if s.VirtualHost != nil {
		fmt.Fprintf(&b, "virtual host %q", s.VirtualHost.Name)
	}
	return strings.TrimSuffix(b.String(), ", ")
}

// joinErrors joins errs in one line (errors.Join would use newlines, which
// read badly in an RPC status), keeping them all for errors.Is.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	format := strings.TrimSuffix(strings.Repeat("%w; ", len(errs)), "; ")
	args := make([]any, len(errs))
	for i, e := range errs {
		args[i] = e
	}
	return fmt.Errorf(format, args...)
}
