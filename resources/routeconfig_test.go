// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"math"
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

func withPlugins(rc *v3routepb.RouteConfiguration, names ...string) *v3routepb.RouteConfiguration {
	for _, n := range names {
		rc.ClusterSpecifierPlugins = append(rc.ClusterSpecifierPlugins, &v3routepb.ClusterSpecifierPlugin{
			Extension: &v3corepb.TypedExtensionConfig{Name: n, TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/test.Plugin"}},
		})
	}
	return rc
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

// routeConfigCases returns the table of TestRouteConfig_Decode; the fuzz target is seeded from it.
func routeConfigCases(t testing.TB) []decodeCase[*RouteConfig] {
	cases := []decodeCase[*RouteConfig]{
		{
			name: "one route to a cluster",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) { r.Name = "default" }))),
			want: rc1(Route{Name: "default", Match: prefixMatch, Action: toCluster("c")}),
		},
		{
			name: "no virtual hosts",
			give: routeConfig("r"),
			want: &RouteConfig{Name: "r"},
		},
		{
			name: "virtual host without routes",
			give: routeConfig("r", &v3routepb.VirtualHost{Name: "v", Domains: []string{"a.example.com", "*.b.example.com"}}),
			want: &RouteConfig{Name: "r", VirtualHosts: []VirtualHost{{Name: "v", Domains: []string{"a.example.com", "*.b.example.com"}}}},
		},
		{
			name: "path match, case insensitive",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
				r.Match.PathSpecifier = &v3routepb.RouteMatch_Path{Path: "/svc/Method"}
				r.Match.CaseSensitive = wrapperspb.Bool(false)
			}))),
			want: rc1(Route{Match: RouteMatch{PathKind: PathKindPath, Path: "/svc/Method"}, Action: toCluster("c")}),
		},
		{
			name: "safe regex match",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
				r.Match.PathSpecifier = &v3routepb.RouteMatch_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "/svc/.*"}}
			}))),
			want: rc1(Route{Match: RouteMatch{PathKind: PathKindSafeRegex, SafeRegex: "/svc/.*", CaseSensitive: true}, Action: toCluster("c")}),
		},
		{
			// every header matcher kind, deprecated forms included.
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
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
					MatchPattern: &v3matcherpb.StringMatcher_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "x"}},
				}}}),
				withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
					MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: ""},
				}}}),
			))),
			want: rc1(Route{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, Headers: []HeaderMatcher{
				{Name: "x-test", Kind: HeaderMatchExact, Value: "a"},
				{Name: "x-test", Kind: HeaderMatchSafeRegex, Value: "b+"},
				{Name: "x-test", Kind: HeaderMatchRange, RangeStart: -1, RangeEnd: 10},
				{Name: "x-test", Kind: HeaderMatchPresent, Present: true, Invert: true},
				{Name: "x-test", Kind: HeaderMatchPrefix, Value: "p"},
				{Name: "x-test", Kind: HeaderMatchSuffix, Value: "s"},
				{Name: "x-test", Kind: HeaderMatchContains, Value: "c"},
				{Name: "x-other", Kind: HeaderMatchPrefix, Value: "P", IgnoreCase: true},
				{Name: "x-test", Kind: HeaderMatchSafeRegex, Value: "x"},
				{Name: "x-test", Kind: HeaderMatchExact, Value: ""},
			}}, Action: toCluster("c")}),
		},
		{
			// runtime_fraction default value scaled to per million.
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
			// zero weights skipped, total_weight ignored.
			name: "weighted clusters",
			give: routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", 1), cw("z", 0), cw("b", 3)), func(r *v3routepb.Route) {
				r.GetRoute().GetWeightedClusters().TotalWeight = wrapperspb.UInt32(100)
			}))),
			want: rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}}}),
		},
		{
			name: "weighted clusters sum to MaxUint32",
			give: routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", math.MaxUint32-1), cw("b", 1))))),
			want: rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "a", Weight: math.MaxUint32 - 1}, {Name: "b", Weight: 1}}}}),
		},
		{
			name: "cluster specifier plugin",
			give: withPlugins(routeConfig("r", vhost("v", clusterRoute("", func(r *v3routepb.Route) {
				r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "rls"}
			}))), "rls"),
			want: func() *RouteConfig {
				rc := rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "rls"}})
				rc.ClusterSpecifierPlugins = []ClusterSpecifierPlugin{{Name: "rls", Config: &anypb.Any{TypeUrl: "type.googleapis.com/test.Plugin"}}}
				return rc
			}(),
		},
		{
			// query_parameters → route ignored; unsupported
			// cluster specifiers → route ignored.
			name: "ignored routes",
			give: routeConfig("r", vhost("v",
				clusterRoute("q", func(r *v3routepb.Route) {
					r.Match.QueryParameters = []*v3routepb.QueryParameterMatcher{{Name: "q"}}
				}),
				clusterRoute("h", func(r *v3routepb.Route) {
					r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}
				}),
				clusterRoute("n", func(r *v3routepb.Route) { r.GetRoute().ClusterSpecifier = nil }),
				clusterRoute("kept"),
			)),
			want: rc1(Route{Match: prefixMatch, Action: toCluster("kept")}),
		},
		{
			// non-forwarding and other actions are kept as unsupported.
			name: "unsupported actions",
			give: routeConfig("r", vhost("v",
				clusterRoute("", func(r *v3routepb.Route) {
					r.Action = &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}}
				}),
				clusterRoute("", func(r *v3routepb.Route) {
					r.Action = &v3routepb.Route_Redirect{Redirect: &v3routepb.RedirectAction{}}
				}),
				clusterRoute("", func(r *v3routepb.Route) { r.Action = nil }),
			)),
			want: rc1(
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionUnsupported}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionUnsupported}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionUnsupported}},
			),
		},
		{
			// grpc_timeout_header_max preferred over max_stream_duration.
			name: "max stream durations",
			give: routeConfig("r", vhost("v",
				clusterRoute("a", func(r *v3routepb.Route) {
					r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{
						MaxStreamDuration:    durationpb.New(time.Second),
						GrpcTimeoutHeaderMax: durationpb.New(2 * time.Second),
					}
				}),
				clusterRoute("b", func(r *v3routepb.Route) {
					r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(time.Second)}
				}),
				clusterRoute("c", func(r *v3routepb.Route) {
					r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(0)}
				}),
				clusterRoute("d", func(r *v3routepb.Route) {
					r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{}
				}),
			)),
			want: rc1(
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "a", MaxStreamDuration: ptr(2 * time.Second)}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "b", MaxStreamDuration: ptr(time.Second)}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "c", MaxStreamDuration: ptr(time.Duration(0))}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "d"}},
			),
		},

		// Invalid resources: per-resource errors.
		{
			name:    "route without match",
			give:    routeConfig("r", vhost("v", clusterRoute("a"), clusterRoute("b", func(r *v3routepb.Route) { r.Match = nil }))),
			wantErr: "virtual_hosts[0].routes[1].match: missing",
		},
		{
			name:    "no path specifier",
			give:    routeConfig("r", vhost("v", clusterRoute("a", func(r *v3routepb.Route) { r.Match.PathSpecifier = nil }))),
			wantErr: "virtual_hosts[0].routes[0].match: no path specifier",
		},
		{
			name: "unsupported path specifier",
			give: routeConfig("r", vhost("v", clusterRoute("a", func(r *v3routepb.Route) {
				r.Match.PathSpecifier = &v3routepb.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/a"}
			}))),
			wantErr: "virtual_hosts[0].routes[0].match: unsupported path specifier",
		},
		{
			name:    "header without specifier",
			give:    routeConfig("r", vhost("v", clusterRoute("a", withHeader(&v3routepb.HeaderMatcher{})))),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: no header match specifier",
		},
		{
			name: "header without name",
			give: routeConfig("r", vhost("v", clusterRoute("a", func(r *v3routepb.Route) {
				r.Match.Headers = []*v3routepb.HeaderMatcher{{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}}
			}))),
			wantErr: "match.headers[0].name: empty",
		},
		{
			// empty string_match → error.
			name: "header with empty string matcher",
			give: routeConfig("r", vhost("v", clusterRoute("a", withHeader(&v3routepb.HeaderMatcher{
				HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{}},
			})))),
			wantErr: "match.headers[0].string_match: empty string matcher",
		},
		{
			name: "header with custom string matcher",
			give: routeConfig("r", vhost("v", clusterRoute("a", withHeader(&v3routepb.HeaderMatcher{
				HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
					MatchPattern: &v3matcherpb.StringMatcher_Custom{Custom: &v3xdscorepb.TypedExtensionConfig{Name: "x"}},
				}},
			})))),
			wantErr: "match.headers[0].string_match: unsupported string matcher",
		},
		{
			name: "header with empty prefix",
			give: routeConfig("r", vhost("v", clusterRoute("a", withHeader(&v3routepb.HeaderMatcher{
				HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
					MatchPattern: &v3matcherpb.StringMatcher_Prefix{},
				}},
			})))),
			wantErr: "match.headers[0]: empty prefix match",
		},
		{
			name:    "header with empty deprecated suffix",
			give:    routeConfig("r", vhost("v", clusterRoute("a", withHeader(&v3routepb.HeaderMatcher{HeaderMatchSpecifier: &v3routepb.HeaderMatcher_SuffixMatch{}})))),
			wantErr: "match.headers[0]: empty suffix match",
		},
		{
			name:    "runtime fraction with unknown denominator",
			give:    routeConfig("r", vhost("v", clusterRoute("a", withFraction(1, 7)))),
			wantErr: "virtual_hosts[0].routes[0].match.runtime_fraction.default_value.denominator: unsupported value 7",
		},
		{
			name:    "empty cluster name",
			give:    routeConfig("r", vhost("v", clusterRoute(""))),
			wantErr: "virtual_hosts[0].routes[0].route.cluster: empty",
		},
		{
			// sum 0 → error.
			name:    "weighted clusters all zero",
			give:    routeConfig("r", vhost("v"), vhost("w", clusterRoute("", withWeighted(cw("a", 0))))),
			wantErr: "virtual_hosts[1].routes[0].route.weighted_clusters: no cluster with a non-zero weight",
		},
		{
			name:    "weighted clusters empty",
			give:    routeConfig("r", vhost("v", clusterRoute("", withWeighted()))),
			wantErr: "route.weighted_clusters: no cluster with a non-zero weight",
		},
		{
			// running sum > MaxUint32 → error.
			name:    "weighted clusters overflow",
			give:    routeConfig("r", vhost("v", clusterRoute("a"), clusterRoute("a"), clusterRoute("a"), clusterRoute("", withWeighted(cw("a", math.MaxUint32), cw("b", 1))))),
			wantErr: "virtual_hosts[0].routes[3].route.weighted_clusters: sum of weights exceeds the uint32 range",
		},
		{
			name:    "weighted cluster without name",
			give:    routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", 1), cw("", 1))))),
			wantErr: "route.weighted_clusters.clusters[1].name: empty",
		},
		{
			name: "undeclared cluster specifier plugin",
			give: withPlugins(routeConfig("r", vhost("v", clusterRoute("", func(r *v3routepb.Route) {
				r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "rls"}
			}))), "other"),
			wantErr: `route.cluster_specifier_plugin: plugin "rls" is not in cluster_specifier_plugins`,
		},
		{
			name:    "duplicate plugin names",
			give:    withPlugins(routeConfig("r"), "a", "a"),
			wantErr: `cluster_specifier_plugins[1].extension.name: duplicate plugin name "a"`,
		},
		{
			name:    "plugin without name",
			give:    withPlugins(routeConfig("r"), ""),
			wantErr: "cluster_specifier_plugins[0].extension.name: empty",
		},
		{
			name: "plugin without config",
			give: func() proto.Message {
				rc := withPlugins(routeConfig("r"), "a")
				rc.ClusterSpecifierPlugins[0].Extension.TypedConfig = nil
				return rc
			}(),
			wantErr: "cluster_specifier_plugins[0].extension.typed_config: missing",
		},
		{
			name: "negative max stream duration",
			give: routeConfig("r", vhost("v", clusterRoute("a", func(r *v3routepb.Route) {
				r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(-time.Second)}
			}))),
			wantErr: "route.max_stream_duration.max_stream_duration: negative duration",
		},
		{
			name: "invalid max stream duration",
			give: routeConfig("r", vhost("v", clusterRoute("a", func(r *v3routepb.Route) {
				r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: &durationpb.Duration{Nanos: 2e9}}
			}))),
			wantErr: "route.max_stream_duration.grpc_timeout_header_max: invalid duration",
		},
	}
	return cases
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
		{name: "invalid action kind", give: RouteActionKind(0), want: "RouteActionKind(0)"},
	}
	for _, tc := range cases {
		if got := tc.give.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
