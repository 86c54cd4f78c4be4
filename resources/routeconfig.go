// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// RouteConfigTypeURL is the type URL of RDS resources.
const RouteConfigTypeURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

// RouteConfigType is the RDS resource type: RouteConfiguration resources,
// decoded to *RouteConfig and validated by. A SotW response need not
// carry every subscribed resource. Its name is found without decoding.
var RouteConfigType = NewType(TypeConfig[*RouteConfig]{
	TypeURL:                    RouteConfigTypeURL,
	TypeName:                   "RouteConfiguration",
	AllResourcesRequiredInSotW: false,
	Decode:                     decodeRouteConfig,
	NameField:                  1, // name
})

// RouteConfig is a decoded RouteConfiguration: the virtual hosts and routes
// a gRPC client matches RPCs against (gRFC A28). It is immutable once
// decoded and shared by every watcher: do not modify it, its slices or the
// protos it points to.
type RouteConfig struct {
	// Name is the resource name in canonical form. For a route
	// configuration inline in a Listener it is the name given there,
	// possibly "".
	Name string
	// VirtualHosts are the virtual hosts in the order received.
	VirtualHosts []VirtualHost
	// ClusterSpecifierPlugins are the cluster_specifier_plugins in the
	// order received, nil when there are none; names are unique. Routes
	// refer to them by name (RouteActionClusterSpecifierPlugin).
	ClusterSpecifierPlugins []ClusterSpecifierPlugin

	raw *anypb.Any // the resource as received (unwrapped); nil when inline
}

// Raw returns the resource exactly as received, after removing any
// Resource wrapper; nil for a route configuration inline in a Listener.
// The caller must not modify it.
func (r *RouteConfig) Raw() *anypb.Any { return r.raw }

// ClusterSpecifierPlugin is one entry of cluster_specifier_plugins (gRFC
// A28, RLS in xDS). Whether its type is supported is up to the consumer.
type ClusterSpecifierPlugin struct {
	// Name is extension.name, unique in the RouteConfig, never empty.
	Name string
	// Config is extension.typed_config, never nil. It must not be
	// modified.
	Config *anypb.Any
	// Optional is is_optional: routes that use an unsupported optional
	// plugin are to be ignored rather than the resource rejected.
	Optional bool
}

// VirtualHost is a set of domains and the routes for them.
type VirtualHost struct {
	// Name is the virtual host's name, for messages.
	Name string
	// Domains are the domain patterns (exact, "*.suffix", "prefix.*" or
	// "*") in the order received.
	Domains []string
	// Routes are the usable routes in the order received: routes with
	// query_parameters matchers, and routes whose action is "route" with a
	// cluster specifier gRPC does not support, are left out.
	Routes []Route
}

// Route is one route: a match and what to do with matching RPCs.
type Route struct {
	// Name is the route's name, "" if unset.
	Name string
	// Match selects the RPCs of the route.
	Match RouteMatch
	// Action says where matching RPCs go.
	Action RouteAction
}

// RouteMatch is the match of a route. An RPC matches when its
// path matches, every header matcher matches, and it falls in the runtime
// fraction.
type RouteMatch struct {
	// PathKind says which of Prefix, Path and SafeRegex applies.
	PathKind PathKind
	// Prefix is the path prefix of PathKindPrefix ("" matches every path).
	Prefix string
	// Path is the full path of PathKindPath.
	Path string
	// SafeRegex is the RE2 pattern of PathKindSafeRegex, which must match
	// the whole path. It is not compiled here.
	SafeRegex string
	// CaseSensitive is case_sensitive, true when unset. It applies to
	// Prefix and Path.
	CaseSensitive bool
	// Headers are the header matchers, all of which must match; nil when
	// there are none.
	Headers []HeaderMatcher
	// FractionPerMillion is runtime_fraction.default_value in parts per
	// million (at most 1,000,000); nil when unset, which means every RPC.
	FractionPerMillion *uint32
}

// PathKind is the kind of path match of a route. The zero value is not a
// valid kind; Decode never returns it.
type PathKind uint8

// The path match kinds (RouteMatch path_specifier).
const (
	PathKindPrefix PathKind = iota + 1
	PathKindPath
	PathKindSafeRegex
)

// String returns "prefix", "path" or "safe_regex".
func (k PathKind) String() string {
	switch k {
	case PathKindPrefix:
		return "prefix"
	case PathKindPath:
		return "path"
	case PathKindSafeRegex:
		return "safe_regex"
	default:
		return fmt.Sprintf("PathKind(%d)", uint8(k))
	}
}

// HeaderMatcher matches one request header. The deprecated
// exact_match, prefix_match, suffix_match and contains_match forms are
// reported like their string_match equivalents.
type HeaderMatcher struct {
	// Name is the header name, lowercased (gRPC metadata keys are
	// lowercase).
	Name string
	// Kind says which of the fields below apply.
	Kind HeaderMatchKind
	// Value is the string of HeaderMatchExact, HeaderMatchPrefix,
	// HeaderMatchSuffix and HeaderMatchContains (non-empty for the last
	// three), or the RE2 pattern of HeaderMatchSafeRegex (not compiled
	// here; it must match the whole value).
	Value string
	// IgnoreCase is string_match.ignore_case; it applies to Exact, Prefix,
	// Suffix and Contains.
	IgnoreCase bool
	// RangeStart and RangeEnd bound HeaderMatchRange: the header, as a
	// base-10 integer, is in [RangeStart, RangeEnd).
	RangeStart, RangeEnd int64
	// Present is present_match for HeaderMatchPresent: true matches when
	// the header is present, false when it is absent.
	Present bool
	// Invert is invert_match: the result of the match is negated.
	Invert bool
}

// HeaderMatchKind is the kind of a header matcher. The zero value is not a
// valid kind; Decode never returns it.
type HeaderMatchKind uint8

// The header match kinds.
const (
	HeaderMatchExact HeaderMatchKind = iota + 1
	HeaderMatchSafeRegex
	HeaderMatchRange
	HeaderMatchPresent
	HeaderMatchPrefix
	HeaderMatchSuffix
	HeaderMatchContains
)

// String returns the kind's name, for example "exact".
func (k HeaderMatchKind) String() string {
	switch k {
	case HeaderMatchExact:
		return "exact"
	case HeaderMatchSafeRegex:
		return "safe_regex"
	case HeaderMatchRange:
		return "range"
	case HeaderMatchPresent:
		return "present"
	case HeaderMatchPrefix:
		return "prefix"
	case HeaderMatchSuffix:
		return "suffix"
	case HeaderMatchContains:
		return "contains"
	default:
		return fmt.Sprintf("HeaderMatchKind(%d)", uint8(k))
	}
}

// RouteAction is what a route does with matching RPCs.
type RouteAction struct {
	// Kind says which of the fields below apply.
	Kind RouteActionKind
	// Cluster is the cluster name of RouteActionCluster, as received,
	// never empty.
	Cluster string
	// WeightedClusters are the clusters of RouteActionWeightedClusters
	// with a non-zero weight, in the order received; never empty, and the
	// weights sum to at most MaxUint32. total_weight is ignored.
	WeightedClusters []WeightedCluster
	// ClusterSpecifierPlugin is the plugin name of
	// RouteActionClusterSpecifierPlugin; it names an entry of
	// RouteConfig.ClusterSpecifierPlugins.
	ClusterSpecifierPlugin string
	// MaxStreamDuration is the route's max_stream_duration:
	// grpc_timeout_header_max when set, else max_stream_duration. nil when
	// neither is set (the Listener's applies); zero means no limit. Only
	// for the forwarding kinds.
	MaxStreamDuration *time.Duration
}

// WeightedCluster is one cluster of a weighted_clusters action.
type WeightedCluster struct {
	// Name is the cluster name, as received, never empty.
	Name string
	// Weight is the cluster's weight, ≥ 1.
	Weight uint32
}

// RouteActionKind is the kind of a route action. The zero value is not a
// valid kind; Decode never returns it.
type RouteActionKind uint8

// The route action kinds.
const (
	// RouteActionCluster sends RPCs to one cluster (route.cluster).
	RouteActionCluster RouteActionKind = iota + 1
	// RouteActionWeightedClusters splits RPCs between clusters by weight
	// (route.weighted_clusters).
	RouteActionWeightedClusters
	// RouteActionClusterSpecifierPlugin lets a plugin pick the cluster
	// (route.cluster_specifier_plugin).
	RouteActionClusterSpecifierPlugin
	// RouteActionUnsupported is any action a gRPC client does not forward
	// with: redirect, direct_response, filter_action,
	// non_forwarding_action. RPCs matching such a route fail.
	RouteActionUnsupported
)

// String returns the kind's name, for example "cluster".
func (k RouteActionKind) String() string {
	switch k {
	case RouteActionCluster:
		return "cluster"
	case RouteActionWeightedClusters:
		return "weighted_clusters"
	case RouteActionClusterSpecifierPlugin:
		return "cluster_specifier_plugin"
	case RouteActionUnsupported:
		return "unsupported"
	default:
		return fmt.Sprintf("RouteActionKind(%d)", uint8(k))
	}
}

// decodeRouteConfig decodes a RouteConfiguration.
func decodeRouteConfig(inner *anypb.Any) (string, *RouteConfig, error) {
	rc := &v3routepb.RouteConfiguration{}
	if err := unmarshalResource(inner, rc, "RouteConfiguration"); err != nil {
		return "", nil, err
	}
	name := rc.GetName()
	if name == "" {
		return "", nil, errEmptyName("name")
	}
	out, err := routeConfigFromProto(rc)
	if err != nil {
		return name, nil, err
	}
	out.raw = inner
	return name, out, nil
}

// routeConfigFromProto validates and converts rc; field paths in errors are
// relative to rc. It serves both RDS resources and inline route
// configurations in a Listener.
func routeConfigFromProto(rc *v3routepb.RouteConfiguration) (*RouteConfig, error) {
	out := &RouteConfig{Name: CanonicalName(rc.GetName())}
	var plugins map[string]bool
	if csps := rc.GetClusterSpecifierPlugins(); len(csps) > 0 {
		out.ClusterSpecifierPlugins = make([]ClusterSpecifierPlugin, 0, len(csps))
		plugins = make(map[string]bool, len(csps))
		for i, csp := range csps {
			ext := csp.GetExtension()
			switch {
			case ext.GetName() == "":
				return nil, invalid(indexed("cluster_specifier_plugins", i)+".extension.name", "empty")
			case plugins[ext.GetName()]:
				return nil, invalid(indexed("cluster_specifier_plugins", i)+".extension.name", "duplicate plugin name %q", ext.GetName())
			case ext.GetTypedConfig() == nil:
				return nil, invalid(indexed("cluster_specifier_plugins", i)+".extension.typed_config", "missing")
			}
			plugins[ext.GetName()] = true
			out.ClusterSpecifierPlugins = append(out.ClusterSpecifierPlugins, ClusterSpecifierPlugin{
				Name:     ext.GetName(),
				Config:   ext.GetTypedConfig(),
				Optional: csp.GetIsOptional(),
			})
		}
	}
	vhs := rc.GetVirtualHosts()
	if len(vhs) > 0 {
		out.VirtualHosts = make([]VirtualHost, 0, len(vhs))
	}
	for i, vh := range vhs {
		routes, err := routesFromProto(vh.GetRoutes(), plugins)
		if err != nil {
			return nil, withFieldPrefix(indexed("virtual_hosts", i), err)
		}
		out.VirtualHosts = append(out.VirtualHosts, VirtualHost{
			Name:    vh.GetName(),
			Domains: vh.GetDomains(),
			Routes:  routes,
		})
	}
	return out, nil
}

// routesFromProto converts the routes of a virtual host; error fields are
// relative to the VirtualHost. plugins holds the names of the
// RouteConfiguration's cluster specifier plugins.
func routesFromProto(routes []*v3routepb.Route, plugins map[string]bool) ([]Route, error) {
	if len(routes) == 0 {
		return nil, nil
	}
	out := make([]Route, 0, len(routes))
	for i, r := range routes {
		m := r.GetMatch()
		if m == nil {
			return nil, invalid(indexed("routes", i)+".match", "missing")
		}
		if len(m.GetQueryParameters()) > 0 {
			// gRPC has no query; such a route never matches.
			continue
		}
		match, err := routeMatchFromProto(m)
		if err != nil {
			return nil, withFieldPrefix(indexed("routes", i)+".match", err)
		}
		action, ok, err := routeActionFromProto(r, plugins)
		if err != nil {
			return nil, withFieldPrefix(indexed("routes", i), err)
		}
		if !ok {
			continue
		}
		out = append(out, Route{Name: r.GetName(), Match: match, Action: action})
	}
	return out, nil
}

// routeMatchFromProto converts a RouteMatch; error fields are relative to
// it.
func routeMatchFromProto(m *v3routepb.RouteMatch) (RouteMatch, error) {
	out := RouteMatch{CaseSensitive: true}
	switch ps := m.GetPathSpecifier().(type) {
	case *v3routepb.RouteMatch_Prefix:
		out.PathKind, out.Prefix = PathKindPrefix, ps.Prefix
	case *v3routepb.RouteMatch_Path:
		out.PathKind, out.Path = PathKindPath, ps.Path
	case *v3routepb.RouteMatch_SafeRegex:
		// Not compiled here: full-match RE2 validation belongs to the
		// safe-regex helper.
		out.PathKind, out.SafeRegex = PathKindSafeRegex, ps.SafeRegex.GetRegex()
	case nil:
		return RouteMatch{}, invalid("", "no path specifier (prefix, path or safe_regex)")
	default:
		return RouteMatch{}, invalid("", "unsupported path specifier %T", ps)
	}
	if cs := m.GetCaseSensitive(); cs != nil {
		out.CaseSensitive = cs.GetValue()
	}
	if hs := m.GetHeaders(); len(hs) > 0 {
		out.Headers = make([]HeaderMatcher, 0, len(hs))
		for i, h := range hs {
			hm, err := headerMatcherFromProto(h)
			if err != nil {
				return RouteMatch{}, withFieldPrefix(indexed("headers", i), err)
			}
			out.Headers = append(out.Headers, hm)
		}
	}
	if rf := m.GetRuntimeFraction(); rf != nil {
		pm, err := perMillion(rf.GetDefaultValue())
		if err != nil {
			return RouteMatch{}, withFieldPrefix("runtime_fraction.default_value", err)
		}
		out.FractionPerMillion = &pm
	}
	return out, nil
}

// headerMatcherFromProto converts a HeaderMatcher; error fields are
// relative to it.
func headerMatcherFromProto(h *v3routepb.HeaderMatcher) (HeaderMatcher, error) {
	out := HeaderMatcher{Name: strings.ToLower(h.GetName()), Invert: h.GetInvertMatch()}
	if out.Name == "" {
		return HeaderMatcher{}, invalid("name", "empty")
	}
	switch hm := h.GetHeaderMatchSpecifier().(type) {
	case *v3routepb.HeaderMatcher_ExactMatch:
		out.Kind, out.Value = HeaderMatchExact, hm.ExactMatch
	case *v3routepb.HeaderMatcher_SafeRegexMatch:
		out.Kind, out.Value = HeaderMatchSafeRegex, hm.SafeRegexMatch.GetRegex()
	case *v3routepb.HeaderMatcher_RangeMatch:
		out.Kind, out.RangeStart, out.RangeEnd = HeaderMatchRange, hm.RangeMatch.GetStart(), hm.RangeMatch.GetEnd()
	case *v3routepb.HeaderMatcher_PresentMatch:
		out.Kind, out.Present = HeaderMatchPresent, hm.PresentMatch
	case *v3routepb.HeaderMatcher_PrefixMatch:
		out.Kind, out.Value = HeaderMatchPrefix, hm.PrefixMatch
	case *v3routepb.HeaderMatcher_SuffixMatch:
		out.Kind, out.Value = HeaderMatchSuffix, hm.SuffixMatch
	case *v3routepb.HeaderMatcher_ContainsMatch:
		out.Kind, out.Value = HeaderMatchContains, hm.ContainsMatch
	case *v3routepb.HeaderMatcher_StringMatch:
		sm := hm.StringMatch
		out.IgnoreCase = sm.GetIgnoreCase()
		switch p := sm.GetMatchPattern().(type) {
		case *v3matcherpb.StringMatcher_Exact:
			out.Kind, out.Value = HeaderMatchExact, p.Exact
		case *v3matcherpb.StringMatcher_Prefix:
			out.Kind, out.Value = HeaderMatchPrefix, p.Prefix
		case *v3matcherpb.StringMatcher_Suffix:
			out.Kind, out.Value = HeaderMatchSuffix, p.Suffix
		case *v3matcherpb.StringMatcher_Contains:
			out.Kind, out.Value = HeaderMatchContains, p.Contains
		case *v3matcherpb.StringMatcher_SafeRegex:
			out.Kind, out.Value = HeaderMatchSafeRegex, p.SafeRegex.GetRegex()
		case nil:
			return HeaderMatcher{}, invalid("string_match", "empty string matcher")
		default:
			return HeaderMatcher{}, invalid("string_match", "unsupported string matcher %T", p)
		}
	case nil:
		return HeaderMatcher{}, invalid("", "no header match specifier")
	default:
		return HeaderMatcher{}, invalid("", "unsupported header match specifier %T", hm)
	}
	switch out.Kind {
	case HeaderMatchPrefix, HeaderMatchSuffix, HeaderMatchContains:
		if out.Value == "" {
			return HeaderMatcher{}, invalid("", "empty %s match", out.Kind)
		}
	}
	return out, nil
}

// routeActionFromProto converts the action of route r; error fields are
// relative to the Route. ok is false when the route is to be left out (an
// unsupported cluster specifier, R-17.3).
func routeActionFromProto(r *v3routepb.Route, plugins map[string]bool) (RouteAction, bool, error) {
	ra, isRoute := r.GetAction().(*v3routepb.Route_Route)
	if !isRoute {
		// redirect, direct_response, filter_action, non_forwarding_action
		// or nothing: kept, and RPCs matching it fail.
		return RouteAction{Kind: RouteActionUnsupported}, true, nil
	}
	a := ra.Route
	var out RouteAction
	switch cs := a.GetClusterSpecifier().(type) {
	case *v3routepb.RouteAction_Cluster:
		if cs.Cluster == "" {
			return RouteAction{}, false, invalid("route.cluster", "empty")
		}
		out.Kind, out.Cluster = RouteActionCluster, cs.Cluster
	case *v3routepb.RouteAction_WeightedClusters:
		cls := cs.WeightedClusters.GetClusters()
		out.Kind = RouteActionWeightedClusters
		out.WeightedClusters = make([]WeightedCluster, 0, len(cls))
		var sum uint64
		for i, c := range cls {
			w := c.GetWeight().GetValue()
			if w == 0 {
				continue // zero weights are skipped
			}
			if c.GetName() == "" {
				return RouteAction{}, false, invalid(indexed("route.weighted_clusters.clusters", i)+".name", "empty")
			}
			if !addWeight(&sum, w) {
				return RouteAction{}, false, invalid("route.weighted_clusters", "sum of weights exceeds the uint32 range")
			}
			out.WeightedClusters = append(out.WeightedClusters, WeightedCluster{Name: c.GetName(), Weight: w})
		}
		if sum == 0 {
			return RouteAction{}, false, invalid("route.weighted_clusters", "no cluster with a non-zero weight")
		}
	case *v3routepb.RouteAction_ClusterSpecifierPlugin:
		if !plugins[cs.ClusterSpecifierPlugin] {
			return RouteAction{}, false, invalid("route.cluster_specifier_plugin", "plugin %q is not in cluster_specifier_plugins", cs.ClusterSpecifierPlugin)
		}
		out.Kind, out.ClusterSpecifierPlugin = RouteActionClusterSpecifierPlugin, cs.ClusterSpecifierPlugin
	default:
		// cluster_header, inline_cluster_specifier_plugin or none: the route
		// is ignored.
		return RouteAction{}, false, nil
	}
	if msd := a.GetMaxStreamDuration(); msd != nil {
		// grpc_timeout_header_max is preferred.
		d, field := msd.GetGrpcTimeoutHeaderMax(), "route.max_stream_duration.grpc_timeout_header_max"
		if d == nil {
			d, field = msd.GetMaxStreamDuration(), "route.max_stream_duration.max_stream_duration"
		}
		if d != nil {
			v, err := duration(field, d)
			if err != nil {
				return RouteAction{}, false, err
			}
			out.MaxStreamDuration = &v
		}
	}
	return out, true, nil
}
