// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build resources with the deprecated fields gRPC still accepts.

package resources

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

func routeConfig(name string, vhs ...*v3routepb.VirtualHost) *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{Name: name, VirtualHosts: vhs}
}

func vhost(name string, routes ...*v3routepb.Route) *v3routepb.VirtualHost {
	return &v3routepb.VirtualHost{Name: name, Domains: []string{"*"}, Routes: routes}
}

// clusterRoute returns a route with prefix "/" to cluster, changed by the
// mods.
func clusterRoute(cluster string, mods ...func(*v3routepb.Route)) *v3routepb.Route {
	r := &v3routepb.Route{
		Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
			ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: cluster},
		}},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

// withHeader adds header matcher h (named "X-Test") to a route.
func withHeader(h *v3routepb.HeaderMatcher) func(*v3routepb.Route) {
	return func(r *v3routepb.Route) {
		if h.Name == "" {
			h.Name = "X-Test"
		}
		r.Match.Headers = append(r.Match.Headers, h)
	}
}

func withWeighted(cs ...*v3routepb.WeightedCluster_ClusterWeight) func(*v3routepb.Route) {
	return func(r *v3routepb.Route) {
		r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_WeightedClusters{WeightedClusters: &v3routepb.WeightedCluster{Clusters: cs}}
	}
}

func cw(name string, w uint32) *v3routepb.WeightedCluster_ClusterWeight {
	return &v3routepb.WeightedCluster_ClusterWeight{Name: name, Weight: wrapperspb.UInt32(w)}
}

func withFraction(n uint32, d v3typepb.FractionalPercent_DenominatorType) func(*v3routepb.Route) {
	return func(r *v3routepb.Route) {
		r.Match.RuntimeFraction = &v3corepb.RuntimeFractionalPercent{DefaultValue: &v3typepb.FractionalPercent{Numerator: n, Denominator: d}}
	}
}

// withPlugins adds an RLS cluster specifier plugin with a valid config
// for each name.
func withPlugins(t testing.TB, rc *v3routepb.RouteConfiguration, names ...string) *v3routepb.RouteConfiguration {
	for _, n := range names {
		rc.ClusterSpecifierPlugins = append(rc.ClusterSpecifierPlugins, &v3routepb.ClusterSpecifierPlugin{
			Extension: &v3corepb.TypedExtensionConfig{Name: n, TypedConfig: rlsPlugin(t)},
		})
	}
	return rc
}

// toPlugin makes a route use the cluster specifier plugin name.
func toPlugin(name string) func(*v3routepb.Route) {
	return func(r *v3routepb.Route) {
		r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: name}
	}
}

func routeConfigName(m proto.Message) string { return m.(*v3routepb.RouteConfiguration).GetName() }

// prefixMatch is the decoded match of clusterRoute.
var prefixMatch = RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true}

// rc1 is a decoded RouteConfig "r" with one virtual host "v" holding
// routes.
func rc1(routes ...Route) *RouteConfig {
	return &RouteConfig{Name: "r", VirtualHosts: []VirtualHost{{Name: "v", Domains: []string{"*"}, Routes: routes}}}
}

func toCluster(c string) RouteAction { return RouteAction{Kind: RouteActionCluster, Cluster: c} }

// TestRouteConfig_Decode covers the RDS validation rules of.
func TestRouteConfig_Decode(t *testing.T) {
	runDecodeCases(t, RouteConfigType, routeConfigName, routeConfigCases(t))
}

// routeConfigCases returns the table of TestRouteConfig_Decode; the fuzz
// target is seeded from it.
func routeConfigCases(t testing.TB) []decodeCase[*RouteConfig] {
	cases := routeMatchCases(t)
	cases = append(cases, routeActionCases(t)...)
	cases = append(cases, routePolicyCases(t)...)
	cases = append(cases, routePluginCases(t)...)
	cases = append(cases, routeHTTPCases(t)...)
	return cases
}

// fullRE compiles p as the decoders do, for expected values.
func fullRE(t testing.TB, p string) *regexp.Regexp {
	re, err := compileSafeRegex(p)
	if err != nil {
		t.Fatalf("compileSafeRegex(%q): %v", p, err)
	}
	return re
}

// withMatch returns a route with prefix "/" to cluster c, with mod applied
// to its match.
func withMatch(mod func(*v3routepb.RouteMatch)) *v3routepb.Route {
	return clusterRoute("c", func(r *v3routepb.Route) { mod(r.Match) })
}

// routeMatchCases are the cases of route matching.
func routeMatchCases(t testing.TB) []decodeCase[*RouteConfig] {
	header := func(h *v3routepb.HeaderMatcher) *v3routepb.RouteConfiguration {
		return routeConfig("r", vhost("v", clusterRoute("c", withHeader(h))))
	}
	stringMatch := func(sm *v3matcherpb.StringMatcher) *v3routepb.HeaderMatcher {
		return &v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: sm}}
	}
	matchWithHeaders := func(hs ...HeaderMatcher) RouteMatch {
		m := prefixMatch
		m.Headers = hs
		return m
	}
	return []decodeCase[*RouteConfig]{
		{
			rule: "R-17.3",
			name: "one route to a cluster",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) { r.Name = "default" }))),
			want: rc1(Route{Name: "default", Match: prefixMatch, Action: toCluster("c")}),
		},
		{
			rule: "R-17.3",
			name: "no virtual hosts",
			give: routeConfig("r"),
			want: &RouteConfig{Name: "r"},
		},
		{
			rule: "R-17.3",
			name: "virtual host without routes",
			give: routeConfig("r", &v3routepb.VirtualHost{Name: "v", Domains: []string{"a.example.com", "*.b.example.com"}}),
			want: &RouteConfig{Name: "r", VirtualHosts: []VirtualHost{{Name: "v", Domains: []string{"a.example.com", "*.b.example.com"}}}},
		},
		{
			// grpc-go good-route-config-but-with-casesensitive-false.
			rule: "R-17.3",
			name: "path match, case insensitive",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.PathSpecifier = &v3routepb.RouteMatch_Path{Path: "/svc/Method"}
				m.CaseSensitive = wrapperspb.Bool(false)
			}))),
			want: rc1(Route{Match: RouteMatch{PathKind: PathKindPath, Path: "/svc/Method"}, Action: toCluster("c")}),
		},
		{
			// grpc-go good-route-config-with-empty-string-route.
			rule: "R-17.3",
			name: "empty prefix matches everything",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.PathSpecifier = &v3routepb.RouteMatch_Prefix{}
				m.CaseSensitive = wrapperspb.Bool(true)
			}))),
			want: rc1(Route{Match: RouteMatch{PathKind: PathKindPrefix, CaseSensitive: true}, Action: toCluster("c")}),
		},
		{
			// safe_regex compiled with full-match semantics.
			rule: "R-17.3",
			name: "safe regex match",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.PathSpecifier = &v3routepb.RouteMatch_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "/svc/.*"}}
			}))),
			want: rc1(Route{Match: RouteMatch{PathKind: PathKindSafeRegex, SafeRegex: "/svc/.*", Regex: fullRE(t, "/svc/.*"), CaseSensitive: true}, Action: toCluster("c")}),
		},
		{
			// every header matcher kind, deprecated forms included.
			rule: "R-17.3",
			name: "header matchers",
			give: routeConfig("r", vhost("v", clusterRoute("c",
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_ExactMatch{ExactMatch: "a"}}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &v3matcherpb.RegexMatcher{Regex: "b+"}}}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_RangeMatch{RangeMatch: &v3typepb.Int64Range{Start: -1, End: 10}}}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}, InvertMatch: true}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PrefixMatch{PrefixMatch: "p"}}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_SuffixMatch{SuffixMatch: "s"}}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_ContainsMatch{ContainsMatch: "c"}}),
				withHeader(&v3routepb.HeaderMatcher{Name: "x-other", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
					MatchPattern: &v3matcherpb.StringMatcher_Prefix{Prefix: "P"}, IgnoreCase: true,
				}}}),
				withHeader(stringMatch(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "x"}}})),
				withHeader(stringMatch(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Suffix{Suffix: "S"}, IgnoreCase: true})),
				withHeader(stringMatch(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Contains{Contains: "C"}})),
			))),
			want: rc1(Route{Match: matchWithHeaders(
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchExact, Value: "a"},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchSafeRegex, Value: "b+", Regex: fullRE(t, "b+")},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchRange, RangeStart: -1, RangeEnd: 10},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchPresent, Present: true, Invert: true},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchPrefix, Value: "p"},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchSuffix, Value: "s"},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchContains, Value: "c"},
				HeaderMatcher{Name: "x-other", Kind: HeaderMatchPrefix, Value: "P", IgnoreCase: true},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchSafeRegex, Value: "x", Regex: fullRE(t, "x")},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchSuffix, Value: "S", IgnoreCase: true},
				HeaderMatcher{Name: "x-test", Kind: HeaderMatchContains, Value: "C"},
			), Action: toCluster("c")}),
		},
		{
			// grpc-go "empty exact_match header specifier is accepted".
			rule: "R-17.3",
			name: "empty exact header match",
			give: header(stringMatch(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{}})),
			want: rc1(Route{Match: matchWithHeaders(HeaderMatcher{Name: "x-test", Kind: HeaderMatchExact}), Action: toCluster("c")}),
		},
		{
			// grpc-go "header specifier with a name that is not lowercase".
			rule: "R-17.3",
			name: "header name lowercased",
			give: header(&v3routepb.HeaderMatcher{Name: "X-Upper", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}),
			want: rc1(Route{Match: matchWithHeaders(HeaderMatcher{Name: "x-upper", Kind: HeaderMatchPresent, Present: true}), Action: toCluster("c")}),
		},
		{
			// grpc-go does not check header names: an empty one matches no
			// header, which a present_match false then accepts.
			rule: "R-17.3",
			name: "empty header name accepted",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.Headers = []*v3routepb.HeaderMatcher{{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{}}}
			}))),
			want: rc1(Route{Match: matchWithHeaders(HeaderMatcher{Kind: HeaderMatchPresent}), Action: toCluster("c")}),
		},
		{
			// runtime_fraction default value scaled to per million.
			rule: "R-17.3",
			name: "runtime fractions",
			give: routeConfig("r", vhost("v",
				clusterRoute("a", withFraction(50, v3typepb.FractionalPercent_HUNDRED)),
				clusterRoute("b", withFraction(50, v3typepb.FractionalPercent_TEN_THOUSAND)),
				clusterRoute("c", withFraction(50, v3typepb.FractionalPercent_MILLION)),
				clusterRoute("d", withFraction(math.MaxUint32, v3typepb.FractionalPercent_HUNDRED)),
			)),
			want: rc1(
				Route{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, FractionPerMillion: ptr[uint32](500_000)}, Action: toCluster("a")},
				Route{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, FractionPerMillion: ptr[uint32](5_000)}, Action: toCluster("b")},
				Route{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, FractionPerMillion: ptr[uint32](50)}, Action: toCluster("c")},
				Route{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, FractionPerMillion: ptr[uint32](1_000_000)}, Action: toCluster("d")},
			),
		},
		{
			// grpc-go "query is ignored": a route with
			// query_parameters is left out, even if the rest is invalid.
			// left out of the HTTP routes too, with why.
			rule: "R-17.3",
			name: "route with query parameters ignored",
			give: routeConfig("r", vhost("v",
				withMatch(func(m *v3routepb.RouteMatch) {
					m.QueryParameters = []*v3routepb.QueryParameterMatcher{{Name: "q"}}
					m.PathSpecifier = nil
				}),
				clusterRoute("kept"),
			)),
			want: func() *RouteConfig {
				rc := rc1(Route{Match: prefixMatch, Action: toCluster("kept")})
				rc.VirtualHosts[0].HTTPRoutes = []Route{{Match: prefixMatch, Action: toCluster("kept")}}
				rc.VirtualHosts[0].HTTPRouteErrors = []error{invalid("routes[0].match", "no path specifier (prefix, path or safe_regex)")}
				return rc
			}(),
		},

		// Invalid matches.
		{
			// grpc-go default-route-match-field-is-nil.
			rule:    "R-17.3",
			name:    "route without match",
			give:    routeConfig("r", vhost("v", clusterRoute("a"), clusterRoute("b", func(r *v3routepb.Route) { r.Match = nil }))),
			wantErr: "virtual_hosts[0].routes[1].match: missing",
		},
		{
			// grpc-go "no path", default-route-match-field-is-non-nil.
			rule:    "R-17.3",
			name:    "no path specifier",
			give:    routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) { m.PathSpecifier = nil }))),
			wantErr: "virtual_hosts[0].routes[0].match: no path specifier",
		},
		{
			// grpc-go "unrecognized path specifier".
			rule: "R-17.3",
			name: "unsupported path specifier",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.PathSpecifier = &v3routepb.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/a"}
			}))),
			wantErr: "virtual_hosts[0].routes[0].match: unsupported path specifier path_separated_prefix",
		},
		{
			// grpc-go "bad regex in path specifier".
			rule: "R-17.3",
			name: "bad path regex",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.PathSpecifier = &v3routepb.RouteMatch_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "??"}}
			}))),
			wantErr: `routes[0].match.safe_regex.regex: invalid RE2 pattern "??"`,
		},
		{
			// a pattern only valid once anchored is rejected, as
			// grpc-go compiles the bare pattern first.
			rule: "R-17.3",
			name: "path regex valid only when wrapped",
			give: routeConfig("r", vhost("v", withMatch(func(m *v3routepb.RouteMatch) {
				m.PathSpecifier = &v3routepb.RouteMatch_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "a)|(b"}}
			}))),
			wantErr: `routes[0].match.safe_regex.regex: invalid RE2 pattern "a)|(b"`,
		},
		{
			rule:    "R-17.3",
			name:    "header without specifier",
			give:    header(&v3routepb.HeaderMatcher{}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: no header match specifier",
		},
		{
			// grpc-go "bad regex in header specifier".
			rule:    "R-17.3",
			name:    "bad header regex",
			give:    header(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &v3matcherpb.RegexMatcher{Regex: "(("}}}),
			wantErr: `match.headers[0].safe_regex_match.regex: invalid RE2 pattern "(("`,
		},
		{
			rule:    "R-17.3",
			name:    "bad string match regex",
			give:    header(stringMatch(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "[z-a]"}}})),
			wantErr: "match.headers[0].string_match.safe_regex.regex: invalid RE2 pattern",
		},
		{
			// empty string_match → error.
			rule:    "R-17.3",
			name:    "header with empty string matcher",
			give:    header(stringMatch(&v3matcherpb.StringMatcher{})),
			wantErr: "match.headers[0].string_match: no match pattern",
		},
		{
			rule: "R-17.3",
			name: "header with custom string matcher",
			give: header(stringMatch(&v3matcherpb.StringMatcher{
				MatchPattern: &v3matcherpb.StringMatcher_Custom{Custom: &v3xdscorepb.TypedExtensionConfig{Name: "x"}},
			})),
			wantErr: "match.headers[0].string_match: unsupported match pattern custom",
		},
		{
			// grpc-go "empty prefix_match header specifier".
			rule:    "R-17.3",
			name:    "header with empty prefix",
			give:    header(stringMatch(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{}})),
			wantErr: "match.headers[0].string_match.prefix: empty",
		},
		{
			// grpc-go "empty suffix_match header specifier".
			rule:    "R-17.3",
			name:    "header with empty deprecated suffix",
			give:    header(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_SuffixMatch{}}),
			wantErr: "match.headers[0].suffix_match: empty",
		},
		{
			// grpc-go "empty contains_match header specifier".
			rule:    "R-17.3",
			name:    "header with empty deprecated contains",
			give:    header(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_ContainsMatch{}}),
			wantErr: "match.headers[0].contains_match: empty",
		},
		{
			rule:    "R-17.3",
			name:    "header with empty deprecated prefix",
			give:    header(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PrefixMatch{}}),
			wantErr: "match.headers[0].prefix_match: empty",
		},
		{
			// Deliberately stricter than grpc-go (see routeMatchFromProto).
			rule:    "R-17.3",
			name:    "runtime fraction with unknown denominator",
			give:    routeConfig("r", vhost("v", clusterRoute("a", withFraction(1, 7)))),
			wantErr: "virtual_hosts[0].routes[0].match.runtime_fraction.default_value.denominator: unsupported value 7",
		},
	}
}

// routeActionCases are the cases of route actions.
func routeActionCases(t testing.TB) []decodeCase[*RouteConfig] {
	withMSD := func(msd *v3routepb.RouteAction_MaxStreamDuration) func(*v3routepb.Route) {
		return func(r *v3routepb.Route) { r.GetRoute().MaxStreamDuration = msd }
	}
	return []decodeCase[*RouteConfig]{
		{
			// zero weights skipped, total_weight ignored (grpc-go
			// "default totalWeight is 100 in weighted clusters action").
			rule: "R-17.3",
			name: "weighted clusters",
			give: routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", 1), cw("z", 0), cw("b", 3), &v3routepb.WeightedCluster_ClusterWeight{Name: "unset"}), func(r *v3routepb.Route) {
				r.GetRoute().GetWeightedClusters().TotalWeight = wrapperspb.UInt32(100)
			}))),
			want: rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}}}),
		},
		{
			rule: "R-17.3",
			name: "weighted clusters sum to MaxUint32",
			give: routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", math.MaxUint32-1), cw("b", 1))))),
			want: rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "a", Weight: math.MaxUint32 - 1}, {Name: "b", Weight: 1}}}}),
		},
		{
			// a zero-weight cluster is skipped before its name is
			// looked at.
			rule: "R-17.3",
			name: "zero-weight cluster without a name",
			give: routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("", 0), cw("a", 2))))),
			want: rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "a", Weight: 2}}}}),
		},
		{
			// unsupported cluster specifiers → route ignored
			// (grpc-go unsupported-cluster-specifier-route-should-ignore).
			rule: "R-17.3",
			name: "ignored routes",
			give: routeConfig("r", vhost("v",
				clusterRoute("h", func(r *v3routepb.Route) {
					r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}
				}),
				clusterRoute("n", func(r *v3routepb.Route) { r.GetRoute().ClusterSpecifier = nil }),
				clusterRoute("kept"),
			)),
			want: rc1(Route{Match: prefixMatch, Action: toCluster("kept")}),
		},
		{
			// non_forwarding_action allowed; other actions kept as
			// unsupported.
			rule: "R-17.3",
			name: "non-forwarding and unsupported actions",
			give: routeConfig("r", vhost("v",
				clusterRoute("", func(r *v3routepb.Route) {
					r.Action = &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}}
				}),
				clusterRoute("", func(r *v3routepb.Route) {
					r.Action = &v3routepb.Route_Redirect{Redirect: &v3routepb.RedirectAction{}}
				}),
				clusterRoute("", func(r *v3routepb.Route) {
					r.Action = &v3routepb.Route_DirectResponse{DirectResponse: &v3routepb.DirectResponseAction{Status: 503}}
				}),
				clusterRoute("", func(r *v3routepb.Route) { r.Action = nil }),
			)),
			want: rc1(
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionNonForwarding}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionUnsupported}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionUnsupported}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionUnsupported}},
			),
		},
		{
			// grpc_timeout_header_max preferred over
			// max_stream_duration (grpc-go good-route-config-with-both-timeouts).
			rule: "R-17.3",
			name: "max stream durations",
			give: routeConfig("r", vhost("v",
				clusterRoute("a", withMSD(&v3routepb.RouteAction_MaxStreamDuration{
					MaxStreamDuration:    durationpb.New(time.Second),
					GrpcTimeoutHeaderMax: durationpb.New(2 * time.Second),
				})),
				clusterRoute("b", withMSD(&v3routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(time.Second)})),
				clusterRoute("c", withMSD(&v3routepb.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(0)})),
				clusterRoute("d", withMSD(&v3routepb.RouteAction_MaxStreamDuration{})),
			)),
			want: rc1(
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "a", MaxStreamDuration: ptr(2 * time.Second)}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "b", MaxStreamDuration: ptr(time.Second)}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "c", MaxStreamDuration: ptr(time.Duration(0))}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "d"}},
			),
		},

		// Invalid actions.
		{
			// Deliberately stricter than grpc-go (see routeActionFromProto).
			rule:    "R-17.3",
			name:    "empty cluster name",
			give:    routeConfig("r", vhost("v", clusterRoute(""))),
			wantErr: "virtual_hosts[0].routes[0].route.cluster: empty",
		},
		{
			// R-17.3: sum 0 → error (grpc-go "all 0-weight clusters in
			// weighted clusters action").
			rule:    "R-17.3",
			name:    "weighted clusters all zero",
			give:    routeConfig("r", vhost("v"), vhost("w", clusterRoute("", withWeighted(cw("a", 0))))),
			wantErr: "virtual_hosts[1].routes[0].route.weighted_clusters: no cluster with a non-zero weight",
		},
		{
			// grpc-go "no cluster in weighted clusters action".
			rule:    "R-17.3",
			name:    "weighted clusters empty",
			give:    routeConfig("r", vhost("v", clusterRoute("", withWeighted()))),
			wantErr: "route.weighted_clusters: no cluster with a non-zero weight",
		},
		{
			// R-17.3: running sum > MaxUint32 → error (grpc-go "The sum of
			// all weighted clusters is more than uint32").
			rule:    "R-17.3",
			name:    "weighted clusters overflow",
			give:    routeConfig("r", vhost("v", clusterRoute("a"), clusterRoute("a"), clusterRoute("a"), clusterRoute("", withWeighted(cw("a", math.MaxUint32), cw("b", 1))))),
			wantErr: "virtual_hosts[0].routes[3].route.weighted_clusters: sum of weights exceeds the uint32 range",
		},
		{
			// Deliberately stricter than grpc-go, as for route.cluster.
			rule:    "R-17.3",
			name:    "weighted cluster without name",
			give:    routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", 1), cw("", 1))))),
			wantErr: "route.weighted_clusters.clusters[1].name: empty",
		},
		{
			rule:    "R-17.3",
			name:    "negative max stream duration",
			give:    routeConfig("r", vhost("v", clusterRoute("a", withMSD(&v3routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(-time.Second)})))),
			wantErr: "route.max_stream_duration.max_stream_duration: negative duration",
		},
		{
			rule:    "R-17.3",
			name:    "invalid max stream duration",
			give:    routeConfig("r", vhost("v", clusterRoute("a", withMSD(&v3routepb.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: &durationpb.Duration{Nanos: 2e9}})))),
			wantErr: "route.max_stream_duration.grpc_timeout_header_max: invalid duration",
		},
	}
}

// TestRouteConfig_TopLevelErrors checks that an empty name and an
// undecodable resource are top-level errors.
func TestRouteConfig_TopLevelErrors(t *testing.T) {
	cases := []struct {
		name    string
		give    *anypb.Any
		wantErr string
	}{
		{name: "empty name", give: mustAny(t, routeConfig("", vhost("v"))), wantErr: "name: empty resource name"},
		{name: "undecodable", give: &anypb.Any{TypeUrl: RouteConfigTypeURL, Value: []byte("\x0a\x02\xff\xfe")}, wantErr: "decoding RouteConfiguration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := RouteConfigType.DecodeTyped(tc.give)
			if name != "" || v != nil || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DecodeTyped() = %q, %v, %v; want \"\", nil, error containing %q", name, v, err, tc.wantErr)
			}
		})
	}
}

// TestRouteKinds_String checks the enum names used in messages.
func TestRouteKinds_String(t *testing.T) {
	cases := []struct {
		name string
		give interface{ String() string }
		want string
	}{
		{name: "prefix", give: PathKindPrefix, want: "prefix"},
		{name: "path", give: PathKindPath, want: "path"},
		{name: "safe regex", give: PathKindSafeRegex, want: "safe_regex"},
		{name: "invalid path kind", give: PathKind(0), want: "PathKind(0)"},
		{name: "exact", give: HeaderMatchExact, want: "exact"},
		{name: "header safe regex", give: HeaderMatchSafeRegex, want: "safe_regex"},
		{name: "range", give: HeaderMatchRange, want: "range"},
		{name: "present", give: HeaderMatchPresent, want: "present"},
		{name: "header prefix", give: HeaderMatchPrefix, want: "prefix"},
		{name: "suffix", give: HeaderMatchSuffix, want: "suffix"},
		{name: "contains", give: HeaderMatchContains, want: "contains"},
		{name: "invalid header kind", give: HeaderMatchKind(0), want: "HeaderMatchKind(0)"},
		{name: "cluster", give: RouteActionCluster, want: "cluster"},
		{name: "weighted", give: RouteActionWeightedClusters, want: "weighted_clusters"},
		{name: "plugin", give: RouteActionClusterSpecifierPlugin, want: "cluster_specifier_plugin"},
		{name: "unsupported", give: RouteActionUnsupported, want: "unsupported"},
		{name: "non-forwarding", give: RouteActionNonForwarding, want: "non_forwarding"},
		{name: "hash header", give: HashPolicyHeader, want: "header"},
		{name: "hash channel", give: HashPolicyChannelID, want: "channel_id"},
		{name: "invalid hash kind", give: HashPolicyKind(0), want: "HashPolicyKind(0)"},
		{name: "string exact", give: StringMatchExact, want: "exact"},
		{name: "string prefix", give: StringMatchPrefix, want: "prefix"},
		{name: "string suffix", give: StringMatchSuffix, want: "suffix"},
		{name: "string contains", give: StringMatchContains, want: "contains"},
		{name: "string regex", give: StringMatchSafeRegex, want: "safe_regex"},
		{name: "invalid string kind", give: StringMatchKind(0), want: "StringMatchKind(0)"},
		{name: "invalid action kind", give: RouteActionKind(0), want: "RouteActionKind(0)"},
	}
	for _, tc := range cases {
		if got := tc.give.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
