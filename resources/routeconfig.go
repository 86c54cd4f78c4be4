// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"regexp"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// RouteConfigTypeURL is the type URL of RDS resources.
const RouteConfigTypeURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

// RouteConfigType, a Type[*RouteConfig], is the RDS resource type: RouteConfiguration resources,
// decoded to *RouteConfig and validated by. A SotW response need not
// carry every subscribed resource. Its name is found without decoding.
// It is a constant: importers cannot reassign it.
const RouteConfigType BuiltinType[*RouteConfig] = RouteConfigTypeURL

// routeConfigConfig describes RouteConfigType.
var routeConfigConfig = TypeConfig[*RouteConfig]{
	TypeURL:                    RouteConfigTypeURL,
	TypeName:                   "RouteConfiguration",
	AllResourcesRequiredInSotW: false,
	Decode:                     decodeRouteConfig,
	NameField:                  1, // name
}

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
	// ClusterSpecifierPlugins are the cluster_specifier_plugins that
	// routes use, in the order received; nil when there are none. Names
	// are unique. Routes refer to them by name
	// (RouteActionClusterSpecifierPlugin). Plugins no route uses are left
	// out ("RLS in xDS" design: the client does not provide them).
	ClusterSpecifierPlugins []ClusterSpecifierPlugin
	// HeaderMutations are the configuration's request and response
	// header changes, applied after the virtual host's; nil when
	// there are none.
	HeaderMutations *HeaderMutations
	// MostSpecificHeaderMutationsWins is
	// most_specific_header_mutations_wins: the header changes of the
	// route configuration, virtual host and route apply least specific
	// first, so that the route's win (a weighted cluster's still apply
	// first, as in Envoy's router).
	MostSpecificHeaderMutationsWins bool

	raw rawBytes // the serialized resource as received (the unwrapped Any's value); empty when inline
}

// Raw returns the resource exactly as received, after removing any
// Resource wrapper: a new Any on each call (type URL RouteConfigTypeURL)
// with a copy of the bytes; nil for a route configuration inline in a
// Listener.
func (r *RouteConfig) Raw() *anypb.Any { return r.raw.toAny(RouteConfigTypeURL) }

// ClusterSpecifierPlugin is one entry of cluster_specifier_plugins (gRFC
// A28, "RLS in xDS" design). The only plugin type gRPC supports is the
// route lookup plugin (grpc.lookup.v1.RouteLookupClusterSpecifier), whose
// route_lookup_config is validated as the RLS LB policy would. A plugin of another type is an error unless it is
// optional; routes using an unsupported optional plugin are left out.
type ClusterSpecifierPlugin struct {
	// Name is extension.name, unique in the RouteConfig, never empty.
	Name string
	// TypeURL is the type of Config.
	TypeURL string
	// Config is extension.typed_config, never nil. It must not be
	// modified.
	Config *anypb.Any
	// Optional is is_optional.
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
	// query_parameters matchers, routes whose action is "route" with a
	// cluster specifier gRPC does not support, and routes using an
	// unsupported optional cluster specifier plugin are left out.
	Routes []Route
	// HTTPRoutes are the routes of an HTTP data plane: Routes
	// with, in their place, the routes with query_parameters matchers
	// (RouteMatch.QueryParameters) that decode without error. nil when
	// the virtual host has no such route: Routes are then the HTTP
	// routes too (see RoutesForHTTP).
	HTTPRoutes []Route
	// HTTPRouteErrors say why routes with query_parameters were left out
	// of HTTPRoutes: they never make the resource invalid, as the gRPC
	// path does not check them. nil when none was.
	HTTPRouteErrors []error
	// HeaderMutations are the virtual host's request and response header
	// changes; nil when there are none.
	HeaderMutations *HeaderMutations
	// RetryPolicy is the virtual host's retry_policy, the default of its
	// routes; nil when unset.
	RetryPolicy *RetryPolicy
	// FilterOverrides is typed_per_filter_config, keyed by HTTP filter
	// name; nil when empty. Route-level overrides take precedence.
	FilterOverrides map[string]FilterOverride
}

// Route is one route: a match and what to do with matching RPCs.
type Route struct {
	// Name is the route's name, "" if unset.
	Name string
	// Match selects the RPCs of the route.
	Match RouteMatch
	// Action says where matching RPCs go.
	Action RouteAction
	// FilterOverrides is the route's typed_per_filter_config, keyed by
	// HTTP filter name; nil when empty. It takes precedence over the
	// virtual host's.
	FilterOverrides map[string]FilterOverride
	// HeaderMutations are the route's request and response header
	// changes; nil when there are none.
	HeaderMutations *HeaderMutations
}

// RoutesForHTTP returns the routes of an HTTP data plane: HTTPRoutes,
// or Routes when the virtual host has no route only HTTP uses.
func (vh *VirtualHost) RoutesForHTTP() []Route {
	if vh.HTTPRoutes != nil {
		return vh.HTTPRoutes
	}
	return vh.Routes
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
	// the whole path.
	SafeRegex string
	// Regex is SafeRegex compiled with full-match semantics (anchored at
	// both ends), for PathKindSafeRegex only; nil otherwise. It is safe
	// for concurrent use. CaseSensitive does not apply to it.
	Regex *regexp.Regexp
	// CaseSensitive is case_sensitive, true when unset. It applies to
	// Prefix and Path.
	CaseSensitive bool
	// Headers are the header matchers, all of which must match; nil when
	// there are none.
	Headers []HeaderMatcher
	// FractionPerMillion is runtime_fraction.default_value in parts per
	// million (at most 1,000,000); nil when unset, which means every RPC.
	FractionPerMillion *uint32
	// QueryParameters are the query parameter matchers, all of which must
	// match; only in the routes of VirtualHost.HTTPRoutes.
	QueryParameters []QueryParameterMatcher
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
// reported like their string_match equivalents. A name with upper-case
// letters is lowercased, as grpc-go does: gRPC metadata keys are
// lowercase. Header names are not otherwise checked (an empty name
// matches no header).
type HeaderMatcher struct {
	// Name is the header name, lowercased (gRPC metadata keys are
	// lowercase).
	Name string
	// Kind says which of the fields below apply.
	Kind HeaderMatchKind
	// Value is the string of HeaderMatchExact, HeaderMatchPrefix,
	// HeaderMatchSuffix and HeaderMatchContains (non-empty for the last
	// three), or the RE2 pattern of HeaderMatchSafeRegex.
	Value string
	// Regex is the pattern of HeaderMatchSafeRegex compiled with
	// full-match semantics; nil for other kinds. Safe for concurrent use.
	Regex *regexp.Regexp
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
	// HashPolicies are the hash policies gRPC supports, in order, for
	// the ring hash LB policy (gRFC A42); policies of other types, and
	// filter_state policies for keys other than "io.grpc.channel_id", are
	// left out. nil when there are none. Only for the forwarding kinds.
	HashPolicies []HashPolicy
	// RetryPolicy is the route's retry_policy; nil when unset, in which
	// case the virtual host's applies. Only for the forwarding kinds.
	RetryPolicy *RetryPolicy
	// AutoHostRewrite is auto_host_rewrite: an RPC's :authority is to be
	// the host name of the endpoint it goes to, if the endpoint has one
	// (gRFC A81). A client honours it only in a RouteConfiguration from a
	// management server it trusts (bootstrap.FeatureTrustedXDSServer); it
	// is decoded whatever the server. Only for the forwarding kinds.
	AutoHostRewrite bool

	// The fields below are for HTTP data planes; the gRPC path
	// ignores them. Only for the forwarding kinds.

	// Timeout is timeout, the limit of a request with its retries; nil
	// when unset (Envoy's default, 15 s: see RouteTimeout); 0 means none.
	Timeout *time.Duration
	// PrefixRewrite is prefix_rewrite: the matched prefix (the whole path
	// of a path or safe_regex match) is replaced by it; "" for none.
	PrefixRewrite string
	// RegexRewrite is regex_rewrite, applied to the path without its
	// query; nil for none. Never set with PrefixRewrite.
	RegexRewrite *RegexRewrite
	// HostRewriteLiteral is host_rewrite_literal: the Host sent; "" for
	// none.
	HostRewriteLiteral string
	// HTTPHashPolicies are the hash policies an HTTP data plane uses, in
	// order: header, cookie, source IP (connection_properties) and query
	// parameter policies. nil when there are none.
	HTTPHashPolicies []HashPolicy
}

// WeightedCluster is one cluster of a weighted_clusters action.
type WeightedCluster struct {
	// Name is the cluster name, as received, never empty.
	Name string
	// Weight is the cluster's weight, ≥ 1.
	Weight uint32
	// FilterOverrides is the cluster's typed_per_filter_config, keyed by
	// HTTP filter name; nil when empty. It takes precedence over the
	// route's.
	FilterOverrides map[string]FilterOverride
	// HeaderMutations are the cluster's request and response header
	// changes, applied before the route's; nil when there are
	// none.
	HeaderMutations *HeaderMutations
}

// RetryPolicy is a retry policy of a virtual host or route (gRFC A44),
// with gRPC's defaults applied.
type RetryPolicy struct {
	// RetryOn are the status codes to retry, from retry_on, in increasing
	// order without duplicates. gRPC knows "cancelled",
	// "deadline-exceeded", "internal", "resource-exhausted" and
	// "unavailable"; other conditions are ignored. Empty means RPCs are
	// not retried.
	RetryOn []codes.Code
	// NumRetries is num_retries, ≥ 1; 1 when unset.
	NumRetries uint32
	// BaseInterval is retry_back_off.base_interval, > 0; 25ms when
	// retry_back_off is unset.
	BaseInterval time.Duration
	// MaxInterval is retry_back_off.max_interval, > 0; ten times
	// BaseInterval when unset. It may be smaller than BaseInterval, as
	// in grpc-go.
	MaxInterval time.Duration

	// The fields below are for HTTP data planes (R-17.7, Envoy's
	// router); the gRPC path ignores them.

	// HTTPRetryOn are the HTTP conditions of retry_on; 0 means HTTP
	// requests are not retried.
	HTTPRetryOn HTTPRetryOn
	// RetriableStatusCodes is retriable_status_codes, as received; nil
	// when empty.
	RetriableStatusCodes []uint32
	// RetriableHeaders is retriable_headers, matched against the
	// response's headers; nil when empty.
	RetriableHeaders []HeaderMatcher
	// RetriableRequestHeaders is retriable_request_headers: a request is
	// retried only if all of them match it; nil when empty.
	RetriableRequestHeaders []HeaderMatcher
	// PerTryTimeout is per_try_timeout, the limit of each attempt until
	// its response headers; 0 when unset.
	PerTryTimeout time.Duration
}

// HashPolicy says how to compute the hash of an RPC for the ring hash LB
// policy (gRFC A42).
type HashPolicy struct {
	// Kind says which of the fields below apply.
	Kind HashPolicyKind
	// HeaderName is the header of HashPolicyHeader, as received.
	HeaderName string
	// RegexRewrite, when not nil, rewrites the header value before
	// hashing: every match is replaced by RegexSubstitution. Only for
	// HashPolicyHeader. Safe for concurrent use.
	RegexRewrite *regexp.Regexp
	// RegexRewritePattern is the pattern of RegexRewrite, "" when unset.
	RegexRewritePattern string
	// RegexSubstitution is regex_rewrite.substitution.
	RegexSubstitution string
	// Name is the cookie of HashPolicyCookie, or the parameter of
	// HashPolicyQueryParameter, never empty for those.
	Name string
	// Terminal is terminal: when this policy produces a hash, the
	// following policies are not evaluated.
	Terminal bool
}

// HashPolicyKind is the kind of a hash policy. The zero value is not a
// valid kind; Decode never returns it.
type HashPolicyKind uint8

// The hash policy kinds: those gRPC supports (in RouteAction.HashPolicies),
// and those of HTTP data planes (in RouteAction.HTTPHashPolicies).
const (
	// HashPolicyHeader hashes the value of a request header.
	HashPolicyHeader HashPolicyKind = iota + 1
	// HashPolicyChannelID hashes the identity of the client channel
	// (filter_state key "io.grpc.channel_id").
	HashPolicyChannelID
	// HashPolicyCookie hashes the value of a request cookie (HTTP only).
	HashPolicyCookie
	// HashPolicySourceIP hashes the source of the request
	// (connection_properties.source_ip; HTTP only).
	HashPolicySourceIP
	// HashPolicyQueryParameter hashes the value of a query parameter
	// (HTTP only).
	HashPolicyQueryParameter
)

// String returns the kind's name, for example "header".
func (k HashPolicyKind) String() string {
	switch k {
	case HashPolicyHeader:
		return "header"
	case HashPolicyChannelID:
		return "channel_id"
	case HashPolicyCookie:
		return "cookie"
	case HashPolicySourceIP:
		return "source_ip"
	case HashPolicyQueryParameter:
		return "query_parameter"
	default:
		return fmt.Sprintf("HashPolicyKind(%d)", uint8(k))
	}
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
	// with: redirect, direct_response, filter_action, or none. RPCs
	// matching such a route fail.
	RouteActionUnsupported
	// RouteActionNonForwarding is non_forwarding_action, which gRPC
	// servers use (gRFC A36); a client fails RPCs matching it.
	RouteActionNonForwarding
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
	case RouteActionNonForwarding:
		return "non_forwarding"
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
	out.raw = keepRaw(inner.GetValue())
	return name, out, nil
}

// pluginState is what routes need to know of a cluster specifier plugin.
type pluginState struct {
	supported bool // a type gRPC knows, with a valid config
	used      bool // referenced by a kept route
}

// routeConfigFromProto validates and converts rc; field paths in errors are
// relative to rc. It serves both RDS resources and inline route
// configurations in a Listener.
func routeConfigFromProto(rc *v3routepb.RouteConfiguration) (*RouteConfig, error) {
	out := &RouteConfig{Name: CanonicalName(rc.GetName())}
	plugins, err := pluginsFromProto(rc.GetClusterSpecifierPlugins())
	if err != nil {
		return nil, err
	}
	vhs := rc.GetVirtualHosts()
	if len(vhs) > 0 {
		out.VirtualHosts = make([]VirtualHost, len(vhs))
	}
	for i, vh := range vhs {
		if err := virtualHostFromProto(&out.VirtualHosts[i], vh, plugins); err != nil {
			return nil, withFieldPrefix(indexed("virtual_hosts", i), err)
		}
	}
	if out.HeaderMutations, err = headerMutationsFromProto(rc.GetRequestHeadersToAdd(), rc.GetRequestHeadersToRemove(), rc.GetResponseHeadersToAdd(), rc.GetResponseHeadersToRemove()); err != nil {
		return nil, err
	}
	out.MostSpecificHeaderMutationsWins = rc.GetMostSpecificHeaderMutationsWins()
	// "RLS in xDS": plugins no route refers to are not given to consumers.
	for _, csp := range rc.GetClusterSpecifierPlugins() {
		ext := csp.GetExtension()
		if ps := plugins[ext.GetName()]; ps != nil && ps.used {
			out.ClusterSpecifierPlugins = append(out.ClusterSpecifierPlugins, ClusterSpecifierPlugin{
				Name:     ext.GetName(),
				TypeURL:  ext.GetTypedConfig().GetTypeUrl(),
				Config:   ext.GetTypedConfig(),
				Optional: csp.GetIsOptional(),
			})
		}
	}
	return out, nil
}

// virtualHostFromProto converts vh into out; error fields are relative to
// the VirtualHost.
func virtualHostFromProto(out *VirtualHost, vh *v3routepb.VirtualHost, plugins map[string]*pluginState) error {
	routes, httpRoutes, httpErrs, err := routesFromProto(vh.GetRoutes(), plugins)
	if err != nil {
		return err
	}
	*out = VirtualHost{Name: vh.GetName(), Domains: vh.GetDomains(), Routes: routes, HTTPRoutes: httpRoutes, HTTPRouteErrors: httpErrs}
	if out.HeaderMutations, err = headerMutationsFromProto(vh.GetRequestHeadersToAdd(), vh.GetRequestHeadersToRemove(), vh.GetResponseHeadersToAdd(), vh.GetResponseHeadersToRemove()); err != nil {
		return err
	}
	if rp := vh.GetRetryPolicy(); rp != nil {
		if out.RetryPolicy, err = retryPolicyFromProto(rp); err != nil {
			return withFieldPrefix("retry_policy", err)
		}
	}
	if out.FilterOverrides, err = filterOverridesFromProto(vh.GetTypedPerFilterConfig()); err != nil {
		return withFieldPrefix("typed_per_filter_config", err)
	}
	return nil
}

// pluginsFromProto validates the cluster specifier plugins (R-17.3, "RLS
// in xDS"): names non-empty and unique; a plugin of a type gRPC does not
// support is an error unless it is optional; a supported one must have a
// valid config. It returns the plugins by name, nil when there are none.
func pluginsFromProto(csps []*v3routepb.ClusterSpecifierPlugin) (map[string]*pluginState, error) {
	if len(csps) == 0 {
		return nil, nil
	}
	plugins := make(map[string]*pluginState, len(csps))
	for i, csp := range csps {
		field := indexed("cluster_specifier_plugins", i) + ".extension"
		ext := csp.GetExtension()
		name := ext.GetName()
		switch {
		case name == "":
			// grpc-go keys plugins by name without checking it; an empty
			// or repeated name makes the routes that use it ambiguous.
			return nil, invalid(field+".name", "empty")
		case plugins[name] != nil:
			return nil, invalid(field+".name", "duplicate plugin name %q", name)
		}
		ps := &pluginState{}
		plugins[name] = ps
		tc := ext.GetTypedConfig()
		if tc.GetTypeUrl() != rlsPluginTypeURL {
			if csp.GetIsOptional() {
				continue // routes using it are left out
			}
			if tc == nil {
				return nil, invalid(field+".typed_config", "missing")
			}
			return nil, invalid(field+".typed_config", "unsupported cluster specifier plugin type %q", tc.GetTypeUrl())
		}
		if err := checkRLSPluginConfig(tc.GetValue()); err != nil {
			return nil, withFieldPrefix(field+".typed_config", err)
		}
		ps.supported = true
	}
	return plugins, nil
}
