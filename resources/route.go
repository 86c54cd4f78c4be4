// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// routesFromProto converts the routes of a virtual host; error fields are
// relative to the VirtualHost. plugins holds the cluster specifier plugins
// of the RouteConfiguration by name.
//
// The order of the checks follows grpc-go's, so that a route that is
// left out is only checked as far as grpc-go checks it: query parameters
// end the checks; an unsupported cluster specifier ends them after the
// match and the hash policies.
func routesFromProto(routes []*v3routepb.Route, plugins map[string]*pluginState) (grpcRoutes []Route, httpRoutes []Route, httpErrs []error, err error) {
	if len(routes) == 0 {
		return nil, nil, nil, nil
	}
	out := make([]Route, 0, len(routes))
	var durs durationSlab
	for i, r := range routes {
		m := r.GetMatch()
		if m == nil {
			return nil, nil, nil, invalid(indexed("routes", i)+".match", "missing")
		}
		if len(m.GetQueryParameters()) > 0 {
			// gRPC has no query; such a route never matches, and
			// is not checked further. An HTTP data plane matches it
			// it is in httpRoutes only, and a problem with it
			// leaves it out of them, never failing the resource.
			if httpRoutes == nil {
				httpRoutes = append(make([]Route, 0, len(routes)), out...)
			}
			durs.n = len(routes) - i
			route, ok, err := routeFromProto(r, plugins, true, &durs)
			switch {
			case err != nil:
				httpErrs = append(httpErrs, withFieldPrefix(indexed("routes", i), err))
			case ok:
				httpRoutes = append(httpRoutes, route)
			}
			continue
		}
		durs.n = len(routes) - i // the most the remaining routes need
		route, ok, err := routeFromProto(r, plugins, false, &durs)
		if err != nil {
			return nil, nil, nil, withFieldPrefix(indexed("routes", i), err)
		}
		if !ok {
			continue
		}
		out = append(out, route)
		if httpRoutes != nil {
			httpRoutes = append(httpRoutes, route)
		}
	}
	return out, httpRoutes, httpErrs, nil
}

// routeFromProto converts route r; error fields are relative to it. ok
// is false when the route is left out. For a route only an HTTP
// data plane uses (httpOnly), a cluster specifier plugin is neither
// looked up nor marked used.
func routeFromProto(r *v3routepb.Route, plugins map[string]*pluginState, httpOnly bool, durs *durationSlab) (route Route, ok bool, err error) {
	if err := routeMatchFromProto(&route.Match, r.GetMatch()); err != nil {
		return Route{}, false, withFieldPrefix("match", err)
	}
	ok, err = routeActionFromProto(&route.Action, r, plugins, httpOnly, durs)
	if err != nil || !ok {
		return Route{}, false, err
	}
	if route.FilterOverrides, err = filterOverridesFromProto(r.GetTypedPerFilterConfig()); err != nil {
		return Route{}, false, withFieldPrefix("typed_per_filter_config", err)
	}
	if route.HeaderMutations, err = headerMutationsFromProto(r.GetRequestHeadersToAdd(), r.GetRequestHeadersToRemove(), r.GetResponseHeadersToAdd(), r.GetResponseHeadersToRemove()); err != nil {
		return Route{}, false, err
	}
	route.Name = r.GetName()
	return route, true, nil
}

// routeMatchFromProto converts a RouteMatch into out; error fields are
// relative to it.
func routeMatchFromProto(out *RouteMatch, m *v3routepb.RouteMatch) error {
	out.CaseSensitive = true
	switch ps := m.GetPathSpecifier().(type) {
	case *v3routepb.RouteMatch_Prefix:
		out.PathKind, out.Prefix = PathKindPrefix, ps.Prefix
	case *v3routepb.RouteMatch_Path:
		out.PathKind, out.Path = PathKindPath, ps.Path
	case *v3routepb.RouteMatch_SafeRegex:
		re, err := safeRegexFromProto(ps.SafeRegex)
		if err != nil {
			return withFieldPrefix("safe_regex", err)
		}
		out.PathKind, out.SafeRegex, out.Regex = PathKindSafeRegex, ps.SafeRegex.GetRegex(), re
	case nil:
		return invalid("", "no path specifier (prefix, path or safe_regex)")
	default:
		return invalid("", "unsupported path specifier %s", oneofName(m.ProtoReflect(), "path_specifier"))
	}
	if cs := m.GetCaseSensitive(); cs != nil {
		out.CaseSensitive = cs.GetValue()
	}
	if hs := m.GetHeaders(); len(hs) > 0 {
		out.Headers = make([]HeaderMatcher, len(hs))
		for i, h := range hs {
			hm, err := headerMatcherFromProto(h)
			if err != nil {
				return withFieldPrefix(indexed("headers", i), err)
			}
			out.Headers[i] = hm
		}
	}
	if qs := m.GetQueryParameters(); len(qs) > 0 {
		var err error
		if out.QueryParameters, err = queryParametersFromProto(qs); err != nil {
			return err
		}
	}
	if rf := m.GetRuntimeFraction(); rf != nil {
		// Deliberately stricter than grpc-go, which reads an unknown
		// denominator as MILLION: an unknown enum value is malformed input,
		// and gRPC C++ and Envoy reject it.
		pm, err := perMillion(rf.GetDefaultValue())
		if err != nil {
			return withFieldPrefix("runtime_fraction.default_value", err)
		}
		out.FractionPerMillion = &pm
	}
	return nil
}

// headerMatcherFromProto converts a HeaderMatcher; error fields are
// relative to it. As in grpc-go, the deprecated string forms follow the
// string_match rules: prefix, suffix and contains must not be empty.
func headerMatcherFromProto(h *v3routepb.HeaderMatcher) (HeaderMatcher, error) {
	out := HeaderMatcher{Name: h.GetName(), Invert: h.GetInvertMatch()}
	if hasUpper(out.Name) {
		out.Name = strings.ToLower(out.Name)
	}
	var sm StringMatcher
	switch hm := h.GetHeaderMatchSpecifier().(type) {
	case *v3routepb.HeaderMatcher_ExactMatch:
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		sm = StringMatcher{Kind: StringMatchExact, Value: hm.ExactMatch}
	case *v3routepb.HeaderMatcher_SafeRegexMatch:
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		re, err := safeRegexFromProto(hm.SafeRegexMatch)
		if err != nil {
			return HeaderMatcher{}, withFieldPrefix("safe_regex_match", err)
		}
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		out.Kind, out.Value, out.Regex = HeaderMatchSafeRegex, hm.SafeRegexMatch.GetRegex(), re
		return out, nil
	case *v3routepb.HeaderMatcher_RangeMatch:
		out.Kind, out.RangeStart, out.RangeEnd = HeaderMatchRange, hm.RangeMatch.GetStart(), hm.RangeMatch.GetEnd()
		return out, nil
	case *v3routepb.HeaderMatcher_PresentMatch:
		out.Kind, out.Present = HeaderMatchPresent, hm.PresentMatch
		return out, nil
	case *v3routepb.HeaderMatcher_PrefixMatch:
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		if hm.PrefixMatch == "" {
			return HeaderMatcher{}, invalid("prefix_match", "empty")
		}
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		sm = StringMatcher{Kind: StringMatchPrefix, Value: hm.PrefixMatch}
	case *v3routepb.HeaderMatcher_SuffixMatch:
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		if hm.SuffixMatch == "" {
			return HeaderMatcher{}, invalid("suffix_match", "empty")
		}
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		sm = StringMatcher{Kind: StringMatchSuffix, Value: hm.SuffixMatch}
	case *v3routepb.HeaderMatcher_ContainsMatch:
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		if hm.ContainsMatch == "" {
			return HeaderMatcher{}, invalid("contains_match", "empty")
		}
		//lint:ignore SA1019 gRFC A28: gRPC still accepts the deprecated header match forms beside string_match
		sm = StringMatcher{Kind: StringMatchContains, Value: hm.ContainsMatch}
	case *v3routepb.HeaderMatcher_StringMatch:
		var err error
		if sm, err = stringMatcherFromProto(hm.StringMatch); err != nil {
			return HeaderMatcher{}, withFieldPrefix("string_match", err)
		}
	case nil:
		return HeaderMatcher{}, invalid("", "no header match specifier")
	default:
		return HeaderMatcher{}, invalid("", "unsupported header match specifier %s", oneofName(h.ProtoReflect(), "header_match_specifier"))
	}
	out.Value, out.IgnoreCase, out.Regex = sm.Value, sm.IgnoreCase, sm.Regex
	switch sm.Kind {
	case StringMatchExact:
		out.Kind = HeaderMatchExact
	case StringMatchPrefix:
		out.Kind = HeaderMatchPrefix
	case StringMatchSuffix:
		out.Kind = HeaderMatchSuffix
	case StringMatchContains:
		out.Kind = HeaderMatchContains
	case StringMatchSafeRegex:
		out.Kind = HeaderMatchSafeRegex
	}
	return out, nil
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// routeActionFromProto converts the action of route r into out; error
// fields are relative to the Route. ok is false when the route is to be
// left out: an unsupported cluster specifier, or a cluster
// specifier plugin that is optional and unsupported.
func routeActionFromProto(out *RouteAction, r *v3routepb.Route, plugins map[string]*pluginState, httpOnly bool, durs *durationSlab) (ok bool, err error) {
	var a *v3routepb.RouteAction
	switch act := r.GetAction().(type) {
	case *v3routepb.Route_Route:
		a = act.Route
	case *v3routepb.Route_NonForwardingAction:
		out.Kind = RouteActionNonForwarding
		return true, nil
	default:
		// redirect, direct_response, filter_action or nothing: kept, and
		// RPCs matching it fail.
		out.Kind = RouteActionUnsupported
		return true, nil
	}
	if hps := a.GetHashPolicy(); len(hps) > 0 {
		if out.HashPolicies, err = hashPoliciesFromProto(hps); err != nil {
			return false, withFieldPrefix("route", err)
		}
	}
	switch cs := a.GetClusterSpecifier().(type) {
	case *v3routepb.RouteAction_Cluster:
		if cs.Cluster == "" {
			// Deliberately stricter than grpc-go, which accepts an empty
			// cluster name and then watches a Cluster named "": an empty
			// name names nothing. gRPC C++ and Envoy reject it.
			return false, invalid("route.cluster", "empty")
		}
		out.Kind, out.Cluster = RouteActionCluster, cs.Cluster
	case *v3routepb.RouteAction_WeightedClusters:
		out.Kind = RouteActionWeightedClusters
		if out.WeightedClusters, err = weightedClustersFromProto(cs.WeightedClusters.GetClusters()); err != nil {
			return false, withFieldPrefix("route.weighted_clusters", err)
		}
	case *v3routepb.RouteAction_ClusterSpecifierPlugin:
		if httpOnly {
			// A route only an HTTP data plane uses, which does not run
			// cluster specifier plugins: kept, and its requests fail.
			out.Kind, out.ClusterSpecifierPlugin = RouteActionClusterSpecifierPlugin, cs.ClusterSpecifierPlugin
			break
		}
		ps := plugins[cs.ClusterSpecifierPlugin]
		if ps == nil {
			return false, invalid("route.cluster_specifier_plugin", "plugin %q is not in cluster_specifier_plugins", cs.ClusterSpecifierPlugin)
		}
		if !ps.supported {
			return false, nil // optional and unsupported: the route is ignored
		}
		ps.used = true
		out.Kind, out.ClusterSpecifierPlugin = RouteActionClusterSpecifierPlugin, cs.ClusterSpecifierPlugin
	default:
		// cluster_header, inline_cluster_specifier_plugin or none: the route
		// is ignored.
		out.HashPolicies = nil
		return false, nil
	}
	if msd := a.GetMaxStreamDuration(); msd != nil {
		// grpc_timeout_header_max is preferred.
		d, field := msd.GetGrpcTimeoutHeaderMax(), "route.max_stream_duration.grpc_timeout_header_max"
		if d == nil {
			d, field = msd.GetMaxStreamDuration(), "route.max_stream_duration.max_stream_duration"
		}
		if d != nil {
			// Deliberately stricter than grpc-go: an invalid or negative
			// duration is malformed (Envoy rejects it too).
			v, err := duration(field, d)
			if err != nil {
				return false, err
			}
			out.MaxStreamDuration = durs.new(v)
		}
	}
	if rp := a.GetRetryPolicy(); rp != nil {
		if out.RetryPolicy, err = retryPolicyFromProto(rp); err != nil {
			return false, withFieldPrefix("route.retry_policy", err)
		}
	}
	out.AutoHostRewrite = a.GetAutoHostRewrite().GetValue() // gRFC A81
	if err := httpRouteActionFromProto(out, a, durs); err != nil {
		return false, withFieldPrefix("route", err)
	}
	return true, nil
}

// durationSlab hands out the *time.Duration values of one
// RouteConfiguration's routes from one allocation instead of one each: they
// share the resource's lifetime. n is how many the rest of the routes may
// need at most, the size of the next allocation.
type durationSlab struct {
	free []time.Duration
	n    int
}

// new returns a pointer to a copy of v.
func (s *durationSlab) new(v time.Duration) *time.Duration {
	if len(s.free) == 0 {
		s.free = make([]time.Duration, max(s.n, 1))
	}
	p := &s.free[0]
	*p, s.free = v, s.free[1:]
	return p
}

// weightedClustersFromProto converts the clusters of a weighted_clusters
// action: zero (or unset) weights are skipped, the running sum
// must stay within uint32 and must not be 0; total_weight is ignored.
// Error fields are relative to the WeightedCluster.
func weightedClustersFromProto(cls []*v3routepb.WeightedCluster_ClusterWeight) ([]WeightedCluster, error) {
	out := make([]WeightedCluster, 0, len(cls))
	var sum uint64
	for i, c := range cls {
		w := c.GetWeight().GetValue()
		if w == 0 {
			continue // zero weights are skipped
		}
		if c.GetName() == "" {
			// Deliberately stricter than grpc-go, as for route.cluster.
			return nil, invalid(indexed("clusters", i)+".name", "empty")
		}
		if !addWeight(&sum, w) {
			return nil, invalid("", "sum of weights exceeds the uint32 range")
		}
		wc := WeightedCluster{Name: c.GetName(), Weight: w}
		var err error
		if wc.FilterOverrides, err = filterOverridesFromProto(c.GetTypedPerFilterConfig()); err != nil {
			return nil, withFieldPrefix(indexed("clusters", i)+".typed_per_filter_config", err)
		}
		if wc.HeaderMutations, err = headerMutationsFromProto(c.GetRequestHeadersToAdd(), c.GetRequestHeadersToRemove(), c.GetResponseHeadersToAdd(), c.GetResponseHeadersToRemove()); err != nil {
			return nil, withFieldPrefix(indexed("clusters", i), err)
		}
		out = append(out, wc)
	}
	if sum == 0 {
		return nil, invalid("", "no cluster with a non-zero weight")
	}
	return out, nil
}

// Retry defaults (gRFC A44, R-17.3).
const (
	defaultRetryNumRetries   = 1
	defaultRetryBaseInterval = 25 * time.Millisecond
)

// retryPolicyFromProto converts a RetryPolicy with gRPC's defaults and
// bounds (R-17.3, gRFC A44); error fields are relative to it.
func retryPolicyFromProto(rp *v3routepb.RetryPolicy) (*RetryPolicy, error) {
	out := &RetryPolicy{NumRetries: defaultRetryNumRetries, BaseInterval: defaultRetryBaseInterval}
	for s := range strings.SplitSeq(rp.GetRetryOn(), ",") {
		var c codes.Code
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "cancelled":
			c = codes.Canceled
		case "deadline-exceeded":
			c = codes.DeadlineExceeded
		case "internal":
			c = codes.Internal
		case "resource-exhausted":
			c = codes.ResourceExhausted
		case "unavailable":
			c = codes.Unavailable
		default:
			continue // unsupported conditions are ignored
		}
		if !slices.Contains(out.RetryOn, c) {
			out.RetryOn = append(out.RetryOn, c)
		}
	}
	slices.Sort(out.RetryOn)
	if n := rp.GetNumRetries(); n != nil {
		if n.GetValue() < 1 {
			return nil, invalid("num_retries", "%d, must be at least 1", n.GetValue())
		}
		out.NumRetries = n.GetValue()
	}
	if bo := rp.GetRetryBackOff(); bo != nil {
		// An unset base_interval reads as 0 and is rejected, as in grpc-go
		// (and Envoy, which requires it).
		if bo.GetBaseInterval() == nil {
			return nil, invalid("retry_back_off.base_interval", "missing, must be greater than 0")
		}
		v, err := duration("retry_back_off.base_interval", bo.GetBaseInterval())
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, invalid("retry_back_off.base_interval", "%v, must be greater than 0", v)
		}
		out.BaseInterval = v
	}
	out.MaxInterval = 10 * out.BaseInterval
	if mi := rp.GetRetryBackOff().GetMaxInterval(); mi != nil {
		v, err := duration("retry_back_off.max_interval", mi)
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, invalid("retry_back_off.max_interval", "%v, must be greater than 0", v)
		}
		out.MaxInterval = v
	}
	if err := httpRetryFromProto(out, rp); err != nil {
		return nil, err
	}
	return out, nil
}

// channelIDKey is the only filter_state key gRPC hashes on (gRFC A42).
const channelIDKey = "io.grpc.channel_id"

// hashPoliciesFromProto converts the hash policies gRPC supports (R-17.3,
// gRFC A42): header policies, whose regex_rewrite pattern must compile,
// and filter_state policies for the channel ID; the others are left out.
// Error fields are relative to the RouteAction. It returns nil when no
// policy is kept.
func hashPoliciesFromProto(hps []*v3routepb.RouteAction_HashPolicy) ([]HashPolicy, error) {
	var out []HashPolicy
	for i, hp := range hps {
		p := HashPolicy{Terminal: hp.GetTerminal()}
		switch ps := hp.GetPolicySpecifier().(type) {
		case *v3routepb.RouteAction_HashPolicy_Header_:
			p.Kind, p.HeaderName = HashPolicyHeader, ps.Header.GetHeaderName()
			if rr := ps.Header.GetRegexRewrite(); rr != nil {
				re, err := rewriteRegexFromProto(rr)
				if err != nil {
					return nil, withFieldPrefix(indexed("hash_policy", i)+".header.regex_rewrite", err)
				}
				p.RegexRewrite, p.RegexRewritePattern, p.RegexSubstitution = re, rr.GetPattern().GetRegex(), rr.GetSubstitution()
			}
		case *v3routepb.RouteAction_HashPolicy_FilterState_:
			if ps.FilterState.GetKey() != channelIDKey {
				continue
			}
			p.Kind = HashPolicyChannelID
		default:
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// rewriteRegexFromProto compiles the pattern of a regex rewrite; error
// fields are relative to the RegexMatchAndSubstitute.
func rewriteRegexFromProto(rr *v3matcherpb.RegexMatchAndSubstitute) (re *regexp.Regexp, err error) {
	re, err = compileRewriteRegex(rr.GetPattern().GetRegex())
	if err != nil {
		return nil, invalid("pattern.regex", "invalid RE2 pattern %q: %w", rr.GetPattern().GetRegex(), err)
	}
	return re, nil
}
