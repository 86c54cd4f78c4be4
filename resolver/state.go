// SPDX-License-Identifier: Apache-2.0

package resolver

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/experimental/balancer/weight"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
)

// Errors of the conversion of a configuration into a State. The errors
// reported to the channel wrap them; test with errors.Is.
var (
	// ErrNoRoute is wrapped when the selected virtual host has no route.
	ErrNoRoute = errors.New("virtual host has no route")

	// ErrNoUsableEndpoints is wrapped when the clusters of the route have
	// no endpoint the resolver may use: none at all, or none HEALTHY or
	// UNKNOWN.
	ErrNoUsableEndpoints = errors.New("no usable endpoints")

	// ErrUnsupported is wrapped when the configuration asks for something
	// a resolver cannot express to the channel: a route action other than
	// cluster and weighted_clusters, hash policies other than one header,
	// clusters of one route with different load balancing policies. See
	// the package doc, "What is honoured".
	ErrUnsupported = errors.New("not supported by the xds resolver")
)

// snapshot is what resolve reads of a depmgr.XDSConfig. It exists so that
// tests can make one: an XDSConfig can only be made by depmgr.
type snapshot struct {
	listener    *resources.Listener
	routeConfig *resources.RouteConfig
	virtualHost *resources.VirtualHost
	cluster     func(name string) *depmgr.ClusterResult // by canonical name; nil when absent
}

func snapshotOf(cfg *depmgr.XDSConfig) snapshot {
	return snapshot{listener: cfg.Listener, routeConfig: cfg.RouteConfig, virtualHost: cfg.VirtualHost, cluster: cfg.Cluster}
}

// resolution is what a configuration gives the channel.
type resolution struct {
	endpoints     []grpcresolver.Endpoint
	serviceConfig string // JSON
	route         string // the route used, for logs
}

// resolve converts a configuration: the default route of its virtual host
// (defaultRoute), the cluster or clusters that route sends RPCs to, and
// for each the endpoints of the highest priority with a usable endpoint
// (pickCluster, appendEndpoints); the load balancing policy of the
// clusters becomes the service config. ringHashHeader is the request hash header of ring_hash
// when the route has no hash policy. Errors name the listener, route
// configuration, virtual host, route and cluster concerned.
func resolve(s snapshot, ringHashHeader string) (*resolution, error) {
	where := describeVH(s)
	if s.virtualHost == nil {
		return nil, fmt.Errorf("%s: no virtual host", where)
	}
	i := defaultRoute(s.virtualHost)
	if i < 0 {
		return nil, fmt.Errorf("%s: %w", where, ErrNoRoute)
	}
	route := &s.virtualHost.Routes[i]
	where = fmt.Sprintf("%s, %s", where, describeRoute(i, route))

	var members []resources.WeightedCluster // Weight 0 for a single cluster
	switch a := route.Action; a.Kind {
	case resources.RouteActionCluster:
		members = []resources.WeightedCluster{{Name: a.Cluster}}
	case resources.RouteActionWeightedClusters:
		members = a.WeightedClusters
	case resources.RouteActionClusterSpecifierPlugin:
		return nil, fmt.Errorf("%s: action cluster_specifier_plugin %q: %w", where, a.ClusterSpecifierPlugin, ErrUnsupported)
	default:
		return nil, fmt.Errorf("%s: action %s: %w", where, a.Kind, ErrUnsupported)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("%s: weighted_clusters lists no cluster: %w", where, ErrNoUsableEndpoints)
	}

	// Pick, per cluster of the route, the leaf cluster and priority whose
	// endpoints are used. A weighted cluster that has none is left out
	// and its weight goes to the others; the route fails only when none
	// has any.
	type pick struct {
		member resources.WeightedCluster // Name canonical
		picked
	}
	var (
		picks     []pick
		errs      []error
		weightSum uint64
	)
	for _, m := range mergeClusters(members) {
		p, err := pickCluster(m.Name, s.cluster(m.Name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		picks = append(picks, pick{member: m, picked: p})
		weightSum += uint64(m.Weight)
	}
	if len(picks) == 0 {
		return nil, fmt.Errorf("%s: %w", where, joinErrors(errs))
	}

	// One service config for the whole channel: every picked leaf must
	// have the same load balancing policy.
	var (
		sc     string
		scFrom string
	)
	for _, p := range picks {
		lb := p.leaf.Cluster.LBPolicy
		header := ""
		if lb.Kind == resources.LBPolicyRingHash {
			var err error
			if header, err = requestHashHeader(route.Action.HashPolicies, ringHashHeader); err != nil {
				return nil, fmt.Errorf("%s: cluster %q: RING_HASH: %w", where, p.leaf.Name, err)
			}
		}
		cfg, err := serviceConfig(lb, header)
		if err != nil {
			return nil, fmt.Errorf("%s: cluster %q: %w", where, p.leaf.Name, err)
		}
		switch {
		case sc == "":
			sc, scFrom = cfg, p.leaf.Name
		case cfg != sc:
			return nil, fmt.Errorf("%s: clusters %q and %q have different load balancing policies (%s and %s), and a channel has one: %w",
				where, scFrom, p.leaf.Name, lbName(sc), lbName(cfg), ErrUnsupported)
		}
	}

	var (
		endpoints []grpcresolver.Endpoint
		seen      = make(map[string]struct{})
	)
	for _, p := range picks {
		clusterFrac := fixedPointOne
		if weightSum > 0 {
			clusterFrac = fraction(uint64(p.member.Weight), weightSum)
		}
		endpoints = appendEndpoints(endpoints, seen, p.member.Name, p.member.Weight, clusterFrac, p.picked)
	}
	return &resolution{endpoints: endpoints, serviceConfig: sc, route: fmt.Sprintf("%s of %d", describeRoute(i, route), len(s.virtualHost.Routes))}, nil
}

// mergeClusters returns the clusters of a route with canonical names,
// each once, at its first position, with the sum of its weights: a
// cluster listed twice in weighted_clusters gets both shares.
func mergeClusters(members []resources.WeightedCluster) []resources.WeightedCluster {
	out := make([]resources.WeightedCluster, 0, len(members))
	for _, m := range members {
		name := resources.CanonicalName(m.Name)
		if i := slices.IndexFunc(out, func(o resources.WeightedCluster) bool { return o.Name == name }); i >= 0 {
			out[i].Weight += m.Weight // the sum fits: validated ≤ MaxUint32
			continue
		}
		out = append(out, resources.WeightedCluster{Name: name, Weight: m.Weight})
	}
	return out
}

// defaultRoute returns the index of the route of vh the resolver sends
// every RPC by: the first route that matches every RPC (path prefix "" or
// "/", no header matcher, no runtime fraction below 100%), else the last
// route, which in a route table is the most general; -1 when vh has no
// route. See the package doc, "What is honoured".
func defaultRoute(vh *resources.VirtualHost) int {
	for i := range vh.Routes {
		if matchesEveryRPC(&vh.Routes[i].Match) {
			return i
		}
	}
	return len(vh.Routes) - 1
}

// matchesEveryRPC reports whether m matches every gRPC request: gRPC paths
// all start with "/", so the prefixes "" and "/" match all of them,
// whatever the case sensitivity.
func matchesEveryRPC(m *resources.RouteMatch) bool {
	return m.PathKind == resources.PathKindPrefix && (m.Prefix == "" || m.Prefix == "/") &&
		len(m.Headers) == 0 && (m.FractionPerMillion == nil || *m.FractionPerMillion >= 1_000_000)
}

// picked is where the endpoints of a route's cluster come from: a leaf
// cluster (the cluster itself, or the first leaf of an aggregate cluster
// that has usable endpoints, gRFC A37, A75), and the highest priority of
// its endpoints that has a usable endpoint.
type picked struct {
	leaf     *depmgr.ClusterConfig
	priority uint32
}

// pickCluster picks the leaf cluster and priority of the cluster name,
// whose result is r (nil when it is not in the configuration). The error
// names the cluster.
func pickCluster(name string, r *depmgr.ClusterResult) (picked, error) {
	switch {
	case r == nil:
		return picked{}, fmt.Errorf("cluster %q is not in the configuration", name)
	case r.Err != nil:
		return picked{}, fmt.Errorf("cluster %q: %w", name, r.Err)
	case r.Config == nil || r.Config.Cluster == nil:
		return picked{}, fmt.Errorf("cluster %q has no configuration", name)
	}
	cfg := r.Config
	if !cfg.IsAggregate() {
		prio, err := usablePriority(cfg)
		if err != nil {
			return picked{}, fmt.Errorf("cluster %q: %w", name, err)
		}
		return picked{leaf: cfg, priority: prio}, nil
	}
	// Aggregate: the leaves in priority order, the first one with a usable
	// endpoint wins (gRFC A37); each leaf keeps its own policy (gRFC A75).
	var reasons []string
	for _, leaf := range cfg.Leaves {
		if leaf == nil || leaf.Cluster == nil {
			continue
		}
		prio, err := usablePriority(leaf)
		if err == nil {
			return picked{leaf: leaf, priority: prio}, nil
		}
		reasons = append(reasons, fmt.Sprintf("leaf %q: %v", leaf.Name, err))
	}
	for _, sk := range cfg.Skipped {
		if sk != nil {
			reasons = append(reasons, fmt.Sprintf("cluster %q: %v", sk.Name, sk.Err))
		}
	}
	return picked{}, fmt.Errorf("aggregate cluster %q: %w in any leaf cluster (%s)", name, ErrNoUsableEndpoints, strings.Join(reasons, "; "))
}

// usable reports whether an endpoint of status h may be used: as in gRPC
// (gRFC A27; gRPC Go's cluster resolver), HEALTHY and UNKNOWN only.
func usable(h resources.HealthStatus) bool {
	return h == resources.HealthStatusHealthy || h == resources.HealthStatusUnknown
}

// usablePriority returns the highest priority (lowest number) of the
// endpoints of leaf that has a usable endpoint, or an error wrapping
// ErrNoUsableEndpoints that says why there is none.
func usablePriority(leaf *depmgr.ClusterConfig) (uint32, error) {
	var (
		best  uint32
		found bool
		total int
		bad   map[resources.HealthStatus]int
	)
	if leaf.Endpoints != nil {
		for _, l := range leaf.Endpoints.Localities {
			for _, ep := range l.Endpoints {
				total++
				if !usable(ep.HealthStatus) {
					if bad == nil {
						bad = make(map[resources.HealthStatus]int)
					}
					bad[ep.HealthStatus]++
					continue
				}
				if !found || l.Priority < best {
					best, found = l.Priority, true
				}
			}
		}
	}
	switch {
	case found:
		return best, nil
	case leaf.ResolutionNote != nil:
		return 0, fmt.Errorf("%w: %w", ErrNoUsableEndpoints, leaf.ResolutionNote)
	case total == 0:
		return 0, fmt.Errorf("%w: the cluster has no endpoint", ErrNoUsableEndpoints)
	}
	statuses := make([]resources.HealthStatus, 0, len(bad))
	for h := range bad {
		statuses = append(statuses, h)
	}
	slices.Sort(statuses)
	counts := make([]string, len(statuses))
	for i, h := range statuses {
		counts[i] = fmt.Sprintf("%d %s", bad[h], h)
	}
	return 0, fmt.Errorf("%w: none of the %d endpoints is HEALTHY or UNKNOWN (%s)", ErrNoUsableEndpoints, total, strings.Join(counts, ", "))
}

// appendEndpoints appends to eps a resolver.Endpoint per usable endpoint
// of p's priority, with its EndpointInfo, its A76 hash key, and its weight
// for weight-aware balancers (weight.EndpointInfo): the product of the
// cluster's share of the route (clusterFrac), the locality's share of the
// priority, and the endpoint's share of its locality, computed over the
// usable endpoints and the localities that have one, in the UQ1.31
// fixed point of gRFC A113, as gRPC Go does. An endpoint whose addresses
// are already in eps (from another cluster) is left out.
func appendEndpoints(eps []grpcresolver.Endpoint, seen map[string]struct{}, routeCluster string, clusterWeight, clusterFrac uint32, p picked) []grpcresolver.Endpoint {
	locs := p.leaf.Endpoints.Localities
	var localitySum uint64
	for _, l := range locs {
		if l.Priority == p.priority && slices.ContainsFunc(l.Endpoints, func(e resources.Endpoint) bool { return usable(e.HealthStatus) }) {
			localitySum += uint64(l.Weight)
		}
	}
	for _, l := range locs {
		if l.Priority != p.priority {
			continue
		}
		var endpointSum uint64
		for _, e := range l.Endpoints {
			if usable(e.HealthStatus) {
				endpointSum += uint64(e.Weight)
			}
		}
		if endpointSum == 0 {
			continue
		}
		localityFrac := fraction(uint64(l.Weight), localitySum)
		for _, e := range l.Endpoints {
			if !usable(e.HealthStatus) || len(e.Addresses) == 0 {
				continue
			}
			key := strings.Join(e.Addresses, " ")
			if _, dup := seen[key]; dup {
				continue
			}
			seen[key] = struct{}{}
			ep := grpcresolver.Endpoint{Addresses: make([]grpcresolver.Address, len(e.Addresses))}
			for i, a := range e.Addresses {
				ep.Addresses[i] = grpcresolver.Address{Addr: a}
			}
			w := fixedPointMul(fixedPointMul(clusterFrac, localityFrac), fraction(uint64(e.Weight), endpointSum))
			ep = weight.Set(ep, weight.EndpointInfo{Weight: max(w, 1)})
			ep = ringhash.SetHashKey(ep, e.HashKey)
			ep = setEndpointInfo(ep, EndpointInfo{
				RouteCluster:   routeCluster,
				Cluster:        p.leaf.Name,
				ClusterWeight:  clusterWeight,
				Locality:       l.ID,
				Priority:       l.Priority,
				LocalityWeight: l.Weight,
				Weight:         e.Weight,
				HealthStatus:   e.HealthStatus,
				Hostname:       e.Hostname,
			})
			eps = append(eps, ep)
		}
	}
	return eps
}

// Fixed-point shares, UQ1.31 (gRFC A113): 1<<31 is 1.
const (
	fixedPointBits = 31
	fixedPointOne  = uint32(1) << fixedPointBits
)

// fraction returns num/den in UQ1.31; num ≤ den, den > 0, both < 2^32.
func fraction(num, den uint64) uint32 {
	if den == 0 {
		return 0
	}
	return uint32(num << fixedPointBits / den)
}

func fixedPointMul(a, b uint32) uint32 {
	return uint32(uint64(a) * uint64(b) >> fixedPointBits)
}

// describeVH names where a configuration's virtual host comes from, for
// errors.
func describeVH(s snapshot) string {
	var b strings.Builder
	if s.listener != nil {
		fmt.Fprintf(&b, "listener %q, ", s.listener.Name)
	}
	switch {
	case s.routeConfig == nil:
	case s.listener != nil && s.listener.InlineRouteConfig == s.routeConfig:
		fmt.Fprintf(&b, "inline route configuration %q, ", s.routeConfig.Name)
	default:
		fmt.Fprintf(&b, "route configuration %q, ", s.routeConfig.Name)
	}
	if s.virtualHost != nil {
		fmt.Fprintf(&b, "virtual host %q", s.virtualHost.Name)
	}
	return strings.TrimSuffix(b.String(), ", ")
}

func describeRoute(i int, r *resources.Route) string {
	if r.Name != "" {
		return fmt.Sprintf("route %d (%q)", i, r.Name)
	}
	return fmt.Sprintf("route %d", i)
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
