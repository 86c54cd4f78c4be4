// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// Route is a route compiled for matching.
type Route struct {
	// Index is the route's position in the virtual host.
	Index int
	// Desc names the route in messages: `route 2 ("name")`.
	Desc string
	// Match is the route's match, compiled.
	Match routing.Match
	// Action is the route's action; only RouteActionCluster and
	// RouteActionWeightedClusters forward.
	Action resources.RouteActionKind
	// Plugin is the cluster_specifier_plugin's name, for messages.
	Plugin string
	// Targets are the route's clusters (one for RouteActionCluster), with
	// their weights; none when the route does not forward.
	Targets []Target
	total   uint64 // the sum of the weights
	// HashPolicies are the route's hash policies (gRFC A42), or, when it
	// has none, a header policy on Options.DefaultHashHeader when set.
	HashPolicies []resources.HashPolicy
	// Res is the route as decoded.
	Res *resources.Route
	// Faults are the configs of the Listener's fault injection filters
	// for the route (gRFC A33, with the virtual host's and route's
	// overrides, gRFC A39), in chain order; FaultErr says why they
	// cannot be used (the route's requests then fail). A Target with its
	// own overrides has its own: use Target.FaultsFor.
	Faults   []*resources.HTTPFault
	FaultErr error
	// Session is the stateful session config of the route's requests
	// (gRFC A55); nil for none. SessionErr says why it cannot be used
	// (the route's requests then fail).
	Session    *resources.CookieSession
	SessionErr error
	// RequestMutations and ResponseMutations are the header mutations of
	// the route's requests and responses (request_headers_to_add /
	// _to_remove, response_…) of the route, its virtual host and its
	// RouteConfiguration, in the order they apply (headers.go), as
	// Options.HeaderMutations adapted them; nil when none. A target adds
	// its weighted cluster's: use Target.MutationsFor.
	RequestMutations, ResponseMutations []*resources.HeaderMutations
}

// Target is a cluster of a route.
type Target struct {
	// Cluster is the cluster's canonical name, a key of Config.Clusters.
	Cluster string
	// Weight is the cluster's weight in the route.
	Weight uint32
	cum    uint64 // the cumulative weight of the route's targets up to this one
	// Faults and FaultErr replace the route's when the weighted cluster
	// overrides a fault filter (typed_per_filter_config, gRFC A39), as
	// OwnFaults says.
	Faults    []*resources.HTTPFault
	FaultErr  error
	OwnFaults bool
	// RequestMutations and ResponseMutations are the header mutations of
	// the requests sent to the target and of their responses: the
	// weighted cluster's, then the route's (Route.RequestMutations); the
	// route's when the weighted cluster has none.
	RequestMutations, ResponseMutations []*resources.HeaderMutations
}

// FaultsFor returns the fault configs of the requests of rt sent to t:
// t's own when it overrides a fault filter, else rt's. t may be nil (a
// route that does not forward).
func (t *Target) FaultsFor(rt *Route) ([]*resources.HTTPFault, error) {
	if t != nil && t.OwnFaults {
		return t.Faults, t.FaultErr
	}
	return rt.Faults, rt.FaultErr
}

// buildRoute compiles route r, at index i of virtual host vh of listener
// lis (nil in tests); names numbers the header matchers of the
// configuration.
func buildRoute(i int, r *resources.Route, names *routing.Index, lis *resources.Listener, vh *resources.VirtualHost, hc *headerChain, sessions bool, defaultHashHeader string) Route {
	rt := Route{Index: i, Desc: describeRoute(i, r), Match: routing.Compile(&r.Match, names), Action: r.Action.Kind, Plugin: r.Action.ClusterSpecifierPlugin, HashPolicies: r.Action.HashPolicies, Res: r}
	routeLevel := hc.adapt(r.HeaderMutations)
	rt.RequestMutations, rt.ResponseMutations = hc.levels(nil, routeLevel)
	if lis != nil {
		rt.Faults, rt.FaultErr = routeFaults(lis.HTTPFilters, vh, r, nil)
	}
	if sessions {
		rt.Session, rt.SessionErr = routeSession(lis.HTTPFilters, vh, r)
	}
	if len(rt.HashPolicies) == 0 && defaultHashHeader != "" {
		rt.HashPolicies = []resources.HashPolicy{{Kind: resources.HashPolicyHeader, HeaderName: defaultHashHeader}}
	}
	var members []resources.WeightedCluster
	switch r.Action.Kind {
	case resources.RouteActionCluster:
		members = []resources.WeightedCluster{{Name: r.Action.Cluster, Weight: 1}}
	case resources.RouteActionWeightedClusters:
		members = r.Action.WeightedClusters
	}
	for _, m := range members {
		rt.total += uint64(m.Weight)
		t := Target{Cluster: resources.CanonicalName(m.Name), Weight: m.Weight, cum: rt.total}
		if lis != nil && overridesFault(lis.HTTPFilters, m.FilterOverrides) {
			t.Faults, t.FaultErr = routeFaults(lis.HTTPFilters, vh, r, m.FilterOverrides)
			t.OwnFaults = true
		}
		t.RequestMutations, t.ResponseMutations = rt.RequestMutations, rt.ResponseMutations
		if wc := hc.adapt(m.HeaderMutations); wc != nil {
			t.RequestMutations, t.ResponseMutations = hc.levels(wc, routeLevel)
		}
		rt.Targets = append(rt.Targets, t)
	}
	return rt
}

func describeRoute(i int, r *resources.Route) string {
	if r.Name != "" {
		return fmt.Sprintf("route %d (%q)", i, r.Name)
	}
	return fmt.Sprintf("route %d", i)
}

// Route returns the first route that a request of path and headers h
// matches (gRFC A28), nil when none does.
func (c *Config) Route(path string, h *routing.Headers) *Route {
	for i := range c.Routes {
		if c.Routes[i].Match.Matches(path, h) {
			return &c.Routes[i]
		}
	}
	return nil
}

// Forwards reports whether the route's action sends requests to a
// cluster (cluster or weighted_clusters); the requests of any other
// (non_forwarding, cluster_specifier_plugin, …) fail.
func (rt *Route) Forwards() bool {
	return rt.Action == resources.RouteActionCluster || rt.Action == resources.RouteActionWeightedClusters
}

// PickTarget picks a cluster of rt at random by weight; nil when rt has
// none (it does not forward).
func (rt *Route) PickTarget() *Target {
	switch len(rt.Targets) {
	case 0:
		return nil
	case 1:
		return &rt.Targets[0]
	}
	x := rand.Uint64N(rt.total)
	for i := range rt.Targets {
		if x < rt.Targets[i].cum {
			return &rt.Targets[i]
		}
	}
	return &rt.Targets[len(rt.Targets)-1] // cannot happen: x < total
}

// TargetOf returns the target of rt whose cluster is cluster (canonical),
// nil when it has none.
func (rt *Route) TargetOf(cluster string) *Target {
	for i := range rt.Targets {
		if rt.Targets[i].Cluster == cluster {
			return &rt.Targets[i]
		}
	}
	return nil
}

// RequestHash computes the hash of a request of headers h to route rt
// (gRFC A42), as gRPC's xDS config selector does: each hash policy that
// yields a hash is combined by rotating the running hash left by one bit
// and XORing; a terminal policy that yields a hash ends the list. A
// header policy hashes the header's values joined with "," (XXH64),
// after its regex_rewrite; channelID is what filter_state channel ID
// policies hash (a random number per channel, or per transport). ok is
// false when no policy yields a hash: the request gets a random one.
func (rt *Route) RequestHash(h *routing.Headers, channelID uint64) (hash uint64, ok bool) {
	for i := range rt.HashPolicies {
		hp := &rt.HashPolicies[i]
		var ph uint64
		switch hp.Kind {
		case resources.HashPolicyHeader:
			name := strings.ToLower(hp.HeaderName)
			if strings.HasSuffix(name, "-bin") {
				continue
			}
			v, present := h.Get(name)
			if !present {
				continue
			}
			if hp.RegexRewrite != nil {
				v = hp.RegexRewrite.ReplaceAllString(v, hp.RegexSubstitution)
			}
			ph = xxhash.Sum64String(v)
		case resources.HashPolicyChannelID:
			ph = channelID
		default:
			continue
		}
		hash = bits.RotateLeft64(hash, 1) ^ ph
		ok = true
		if hp.Terminal {
			break
		}
	}
	return hash, ok
}

// MaxStreamDuration returns the deadline cap of the requests of route rt:
// the route's max_stream_duration (grpc_timeout_header_max when set, as
// package resources decoded it), else the Listener's; 0 for none (gRFC
// A31).
func (c *Config) MaxStreamDuration(rt *Route) time.Duration {
	if d := rt.Res.Action.MaxStreamDuration; d != nil {
		return *d
	}
	if c.Listener != nil {
		return c.Listener.MaxStreamDuration
	}
	return 0
}
