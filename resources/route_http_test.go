// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build resources with the deprecated fields Envoy still reads.

package resources

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3upstreamhttppb "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// routeHTTPCases are the cases of what an HTTP data plane reads of a
// RouteConfiguration: query parameters, HTTP retry conditions,
// timeouts, rewrites, header mutations and HTTP hash policies.
func routeHTTPCases(t testing.TB) []decodeCase[*RouteConfig] {
	route := func(mod func(*v3routepb.RouteAction)) *v3routepb.Route {
		return clusterRoute("c", func(r *v3routepb.Route) { mod(r.GetRoute()) })
	}
	action := func(mod func(*RouteAction)) *RouteConfig {
		a := toCluster("c")
		mod(&a)
		return rc1(Route{Match: prefixMatch, Action: a})
	}
	query := func(qs ...*v3routepb.QueryParameterMatcher) *v3routepb.Route {
		return clusterRoute("q", func(r *v3routepb.Route) { r.Match.QueryParameters = qs })
	}
	exact := func(v string) *v3matcherpb.StringMatcher {
		return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: v}}
	}
	hv := func(k, v string, action v3corepb.HeaderValueOption_HeaderAppendAction) *v3corepb.HeaderValueOption {
		return &v3corepb.HeaderValueOption{Header: &v3corepb.HeaderValue{Key: k, Value: v}, AppendAction: action}
	}
	rewrite := func(pattern, sub string) *v3matcherpb.RegexMatchAndSubstitute {
		return &v3matcherpb.RegexMatchAndSubstitute{Pattern: &v3matcherpb.RegexMatcher{Regex: pattern}, Substitution: sub}
	}
	mustRewrite := func(pattern, sub string) *RegexRewrite {
		rr, err := regexRewriteFromProto(rewrite(pattern, sub))
		if err != nil {
			t.Fatalf("regexRewriteFromProto(%q, %q): %v", pattern, sub, err)
		}
		return rr
	}
	qRoute := Route{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, QueryParameters: []QueryParameterMatcher{
		{Name: "debug"},
		{Name: "v", Value: StringMatcher{Kind: StringMatchExact, Value: "2"}},
	}}, Action: toCluster("q")}

	return []decodeCase[*RouteConfig]{
		{
			// a route with query_parameters is in HTTPRoutes, in
			// its place; Routes, what gRPC uses, does not have it.
			rule: "R-17.7",
			name: "http route with query parameters",
			give: routeConfig("r", vhost("v",
				clusterRoute("a"),
				query(&v3routepb.QueryParameterMatcher{Name: "debug", QueryParameterMatchSpecifier: &v3routepb.QueryParameterMatcher_PresentMatch{PresentMatch: true}},
					&v3routepb.QueryParameterMatcher{Name: "v", QueryParameterMatchSpecifier: &v3routepb.QueryParameterMatcher_StringMatch{StringMatch: exact("2")}}),
				clusterRoute("b"),
			)),
			want: func() *RouteConfig {
				rc := rc1(Route{Match: prefixMatch, Action: toCluster("a")}, Route{Match: prefixMatch, Action: toCluster("b")})
				rc.VirtualHosts[0].HTTPRoutes = []Route{{Match: prefixMatch, Action: toCluster("a")}, qRoute, {Match: prefixMatch, Action: toCluster("b")}}
				return rc
			}(),
		},
		{
			// an invalid HTTP-only route never fails the
			// resource (the gRPC path does not check it, R-17.3).
			rule: "R-17.7",
			name: "invalid http route left out with its error",
			give: routeConfig("r", vhost("v",
				query(&v3routepb.QueryParameterMatcher{Name: ""}),
				query(&v3routepb.QueryParameterMatcher{Name: "x", QueryParameterMatchSpecifier: &v3routepb.QueryParameterMatcher_StringMatch{
					StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "("}}},
				}}),
				clusterRoute("a"),
			)),
			want: func() *RouteConfig {
				rc := rc1(Route{Match: prefixMatch, Action: toCluster("a")})
				rc.VirtualHosts[0].HTTPRoutes = []Route{{Match: prefixMatch, Action: toCluster("a")}}
				rc.VirtualHosts[0].HTTPRouteErrors = []error{
					invalid("routes[0].match.query_parameters[0].name", "empty"),
					invalid("routes[1].match.query_parameters[0].string_match.safe_regex.regex", "invalid RE2 pattern \"(\": error parsing regexp: missing closing ): `(`"),
				}
				return rc
			}(),
		},
		{
			// an HTTP-only route naming a cluster specifier plugin
			// is kept (its requests fail); the plugin is not looked up.
			rule: "R-17.7",
			name: "http route with a cluster specifier plugin",
			give: routeConfig("r", vhost("v", clusterRoute("q", toPlugin("absent"), func(r *v3routepb.Route) {
				r.Match.QueryParameters = []*v3routepb.QueryParameterMatcher{{Name: "p"}}
			}))),
			want: func() *RouteConfig {
				rc := rc1()
				rc.VirtualHosts[0].Routes = nil
				rc.VirtualHosts[0].HTTPRoutes = []Route{{Match: RouteMatch{PathKind: PathKindPrefix, Prefix: "/", CaseSensitive: true, QueryParameters: []QueryParameterMatcher{{Name: "p"}}},
					Action: RouteAction{Kind: RouteActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "absent"}}}
				return rc
			}(),
		},
		{
			// Envoy's x-envoy-retry-on: HTTP conditions beside
			// the gRPC codes, unknown ones ignored; retriable codes and
			// headers, per-try timeout.
			rule: "R-17.7",
			name: "http retry policy",
			give: routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{
				RetryOn:              "5xx, gateway-error,reset,reset-before-request,connect-failure,refused-stream,retriable-4xx,retriable-status-codes,retriable-headers,envoy-ratelimited,unavailable,http3-post-connect-failure,bogus",
				NumRetries:           wrapperspb.UInt32(3),
				PerTryTimeout:        durationpb.New(250 * time.Millisecond),
				RetriableStatusCodes: []uint32{418, 429},
				RetriableHeaders:     []*v3routepb.HeaderMatcher{{Name: "X-Retry", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}},
				RetriableRequestHeaders: []*v3routepb.HeaderMatcher{{Name: ":method", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{
					StringMatch: exact("GET"),
				}}},
			})))),
			want: action(func(a *RouteAction) {
				a.RetryPolicy = &RetryPolicy{
					RetryOn: []codes.Code{codes.Unavailable}, NumRetries: 3, BaseInterval: 25 * time.Millisecond, MaxInterval: 250 * time.Millisecond,
					HTTPRetryOn:             RetryOn5xx | RetryOnGatewayError | RetryOnReset | RetryOnResetBeforeRequest | RetryOnConnectFailure | RetryOnRefusedStream | RetryOnRetriable4xx | RetryOnRetriableStatusCodes | RetryOnRetriableHeaders | RetryOnEnvoyRateLimited,
					RetriableStatusCodes:    []uint32{418, 429},
					RetriableHeaders:        []HeaderMatcher{{Name: "x-retry", Kind: HeaderMatchPresent, Present: true}},
					RetriableRequestHeaders: []HeaderMatcher{{Name: ":method", Kind: HeaderMatchExact, Value: "GET"}},
					PerTryTimeout:           250 * time.Millisecond,
				}
			}),
		},
		{
			rule:    "R-17.7",
			name:    "negative per try timeout",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{PerTryTimeout: durationpb.New(-time.Second)})))),
			wantErr: "routes[0].route.retry_policy.per_try_timeout: negative duration",
		},
		{
			rule:    "R-17.7",
			name:    "invalid retriable header",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetriableHeaders: []*v3routepb.HeaderMatcher{{Name: "x"}}})))),
			wantErr: "routes[0].route.retry_policy.retriable_headers[0]: no header match specifier",
		},
		{
			// Envoy's RouteAction: timeout (0 disables), rewrites.
			rule: "R-17.7",
			name: "timeout and rewrites",
			give: routeConfig("r", vhost("v",
				route(func(a *v3routepb.RouteAction) {
					a.Timeout = durationpb.New(2 * time.Second)
					a.PrefixRewrite = "/v2/"
					a.HostRewriteSpecifier = &v3routepb.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "backend.internal"}
				}),
				route(func(a *v3routepb.RouteAction) {
					a.Timeout = durationpb.New(0)
					a.RegexRewrite = rewrite(`^/service/([^/]+)(/.*)$`, `\2/instance/\1\\$`)
				}),
			)),
			want: rc1(
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "c", Timeout: ptr(2 * time.Second), PrefixRewrite: "/v2/", HostRewriteLiteral: "backend.internal"}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "c", Timeout: ptr(time.Duration(0)), RegexRewrite: mustRewrite(`^/service/([^/]+)(/.*)$`, `\2/instance/\1\\$`)}},
			),
		},
		{
			rule:    "R-17.7",
			name:    "both rewrites",
			give:    routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) { a.PrefixRewrite = "/"; a.RegexRewrite = rewrite("a", "b") }))),
			wantErr: "routes[0].route.regex_rewrite: set with prefix_rewrite",
		},
		{
			rule:    "R-17.7",
			name:    "regex rewrite of a missing group",
			give:    routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) { a.RegexRewrite = rewrite("(a)", `\2`) }))),
			wantErr: `routes[0].route.regex_rewrite.substitution: "\\2" refers to group \2, the pattern has 1`,
		},
		{
			rule:    "R-17.7",
			name:    "regex rewrite with a bad escape",
			give:    routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) { a.RegexRewrite = rewrite("a", `\n`) }))),
			wantErr: "routes[0].route.regex_rewrite.substitution",
		},
		{
			rule:    "R-17.7",
			name:    "regex rewrite that does not compile",
			give:    routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) { a.RegexRewrite = rewrite("(", "") }))),
			wantErr: "routes[0].route.regex_rewrite.pattern.regex: invalid RE2 pattern",
		},
		{
			rule:    "R-17.7",
			name:    "negative route timeout",
			give:    routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) { a.Timeout = durationpb.New(-time.Second) }))),
			wantErr: "routes[0].route.timeout: negative duration",
		},
		{
			// Envoy's custom headers: every level, actions,
			// deprecated append, raw_value, %% escapes, names lowercased.
			rule: "R-17.7",
			name: "header mutations at every level",
			give: func() *v3routepb.RouteConfiguration {
				rc := routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
					r.RequestHeadersToAdd = []*v3corepb.HeaderValueOption{
						hv("X-Route", "r", v3corepb.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
						{Header: &v3corepb.HeaderValue{Key: "x-old", Value: "o"}, Append: wrapperspb.Bool(false)},
						{Header: &v3corepb.HeaderValue{Key: "x-raw", RawValue: []byte("raw")}, KeepEmptyValue: true},
						hv("x-pct", "100%% sure", v3corepb.HeaderValueOption_ADD_IF_ABSENT),
					}
					r.RequestHeadersToRemove = []string{"X-Drop"}
					r.ResponseHeadersToAdd = []*v3corepb.HeaderValueOption{hv("x-resp", "1", v3corepb.HeaderValueOption_OVERWRITE_IF_EXISTS)}
					r.ResponseHeadersToRemove = []string{"server"}
				}, withWeighted(func() *v3routepb.WeightedCluster_ClusterWeight {
					c := cw("c", 1)
					c.RequestHeadersToAdd = []*v3corepb.HeaderValueOption{hv("x-cluster", "c", 0)}
					return c
				}()))))
				rc.VirtualHosts[0].RequestHeadersToAdd = []*v3corepb.HeaderValueOption{hv("x-vh", "v", 0)}
				rc.ResponseHeadersToRemove = []string{"x-internal"}
				rc.MostSpecificHeaderMutationsWins = true
				return rc
			}(),
			want: func() *RouteConfig {
				rc := rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "c", Weight: 1,
					HeaderMutations: &HeaderMutations{RequestHeadersToAdd: []HeaderValueOption{{Name: "x-cluster", Value: "c"}}}}}},
					HeaderMutations: &HeaderMutations{
						RequestHeadersToAdd: []HeaderValueOption{
							{Name: "x-route", Value: "r", Action: OverwriteIfExistsOrAdd},
							{Name: "x-old", Value: "o", Action: OverwriteIfExistsOrAdd},
							{Name: "x-raw", Value: "raw", KeepEmptyValue: true},
							{Name: "x-pct", Value: "100% sure", Action: AddIfAbsent},
						},
						RequestHeadersToRemove:  []string{"x-drop"},
						ResponseHeadersToAdd:    []HeaderValueOption{{Name: "x-resp", Value: "1", Action: OverwriteIfExists}},
						ResponseHeadersToRemove: []string{"server"},
					}})
				rc.VirtualHosts[0].HeaderMutations = &HeaderMutations{RequestHeadersToAdd: []HeaderValueOption{{Name: "x-vh", Value: "v"}}}
				rc.HeaderMutations = &HeaderMutations{ResponseHeadersToRemove: []string{"x-internal"}}
				rc.MostSpecificHeaderMutationsWins = true
				return rc
			}(),
		},
		{
			// Envoy: ":-prefixed or host headers may not be modified".
			rule: "R-17.7",
			name: "header mutation of a pseudo-header",
			give: func() *v3routepb.RouteConfiguration {
				rc := routeConfig("r", vhost("v", clusterRoute("c")))
				rc.VirtualHosts[0].RequestHeadersToAdd = []*v3corepb.HeaderValueOption{hv(":path", "/x", 0)}
				return rc
			}(),
			wantErr: `virtual_hosts[0].request_headers_to_add[0].header.key: ":path": pseudo-headers and host cannot be modified`,
		},
		{
			rule: "R-17.7",
			name: "removal of host",
			give: func() *v3routepb.RouteConfiguration {
				rc := routeConfig("r", vhost("v", clusterRoute("c")))
				rc.RequestHeadersToRemove = []string{"Host"}
				return rc
			}(),
			wantErr: `request_headers_to_remove[0]: "host": pseudo-headers and host cannot be modified`,
		},
		{
			rule: "R-17.7",
			name: "header value with a line break",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
				r.ResponseHeadersToAdd = []*v3corepb.HeaderValueOption{hv("x", "a\r\nb", 0)}
			}))),
			wantErr: "routes[0].response_headers_to_add[0].header: the value of \"x\" has a NUL, CR or LF",
		},
		{
			rule: "R-17.7",
			name: "append and append_action together",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
				r.RequestHeadersToAdd = []*v3corepb.HeaderValueOption{{Header: &v3corepb.HeaderValue{Key: "x"}, Append: wrapperspb.Bool(true), AppendAction: v3corepb.HeaderValueOption_ADD_IF_ABSENT}}
			}))),
			wantErr: "routes[0].request_headers_to_add[0]: both append and append_action are set",
		},
		{
			rule: "R-17.7",
			name: "header option without header",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
				r.RequestHeadersToAdd = []*v3corepb.HeaderValueOption{{}}
			}))),
			wantErr: "routes[0].request_headers_to_add[0].header: missing",
		},
		{
			// the HTTP hash policies, beside gRPC's.
			rule: "R-17.7",
			name: "http hash policies",
			give: routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) {
				a.HashPolicy = []*v3routepb.RouteAction_HashPolicy{
					{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Cookie_{Cookie: &v3routepb.RouteAction_HashPolicy_Cookie{Name: "session", Ttl: durationpb.New(time.Hour)}}},
					{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &v3routepb.RouteAction_HashPolicy_ConnectionProperties{}}},
					{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_QueryParameter_{QueryParameter: &v3routepb.RouteAction_HashPolicy_QueryParameter{Name: "user"}}, Terminal: true},
					{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_FilterState_{FilterState: &v3routepb.RouteAction_HashPolicy_FilterState{Key: "io.grpc.channel_id"}}},
				}
			}))),
			want: action(func(a *RouteAction) {
				a.HashPolicies = []HashPolicy{{Kind: HashPolicyChannelID}}
				a.HTTPHashPolicies = []HashPolicy{{Kind: HashPolicyCookie, Name: "session"}, {Kind: HashPolicyQueryParameter, Name: "user", Terminal: true}}
			}),
		},
		{
			rule: "R-17.7",
			name: "cookie hash policy without a name",
			give: routeConfig("r", vhost("v", route(func(a *v3routepb.RouteAction) {
				a.HashPolicy = []*v3routepb.RouteAction_HashPolicy{{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Cookie_{Cookie: &v3routepb.RouteAction_HashPolicy_Cookie{}}}}
			}))),
			wantErr: "routes[0].route.hash_policy[0].cookie.name: empty",
		},
	}
}

// clusterHTTPCases are the cases of what an HTTP data plane reads of a
// Cluster: upstream protocol, max_retries, the panic threshold
// and Envoy's consecutive ejections.
func clusterHTTPCases(t testing.TB) []decodeCase[*Cluster] {
	rr := LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true, HealthyPanicThreshold: 50}
	want := func(mod func(*Cluster)) *Cluster {
		c := &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024, MaxRetries: 3}
		mod(c)
		return c
	}
	protocol := func(m *v3upstreamhttppb.HttpProtocolOptions) func(*v3clusterpb.Cluster) {
		return func(c *v3clusterpb.Cluster) {
			c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, m)}
		}
	}
	explicit := func(ec *v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig) *v3upstreamhttppb.HttpProtocolOptions {
		return &v3upstreamhttppb.HttpProtocolOptions{UpstreamProtocolOptions: &v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: ec}}
	}
	return []decodeCase[*Cluster]{
		{
			rule: "R-17.7",
			name: "explicit http2",
			give: edsCluster("c", "s", protocol(explicit(&v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig{ProtocolConfig: &v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &v3corepb.Http2ProtocolOptions{}}}))),
			want: want(func(c *Cluster) { c.UpstreamProtocol = UpstreamHTTP2 }),
		},
		{
			rule: "R-17.7",
			name: "explicit http1",
			give: edsCluster("c", "s", protocol(explicit(&v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig{ProtocolConfig: &v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &v3corepb.Http1ProtocolOptions{}}}))),
			want: want(func(*Cluster) {}),
		},
		{
			rule: "R-17.7",
			name: "explicit http3",
			give: edsCluster("c", "s", protocol(explicit(&v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig{ProtocolConfig: &v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_Http3ProtocolOptions{Http3ProtocolOptions: &v3corepb.Http3ProtocolOptions{}}}))),
			want: want(func(c *Cluster) { c.UpstreamProtocol = UpstreamHTTP3 }),
		},
		{
			rule: "R-17.7",
			name: "auto config",
			give: edsCluster("c", "s", protocol(&v3upstreamhttppb.HttpProtocolOptions{UpstreamProtocolOptions: &v3upstreamhttppb.HttpProtocolOptions_AutoConfig{
				AutoConfig: &v3upstreamhttppb.HttpProtocolOptions_AutoHttpConfig{},
			}})),
			want: want(func(c *Cluster) { c.UpstreamProtocol = UpstreamHTTPAuto }),
		},
		{
			rule: "R-17.7",
			name: "use downstream protocol",
			give: edsCluster("c", "s", protocol(&v3upstreamhttppb.HttpProtocolOptions{UpstreamProtocolOptions: &v3upstreamhttppb.HttpProtocolOptions_UseDownstreamProtocolConfig{
				UseDownstreamProtocolConfig: &v3upstreamhttppb.HttpProtocolOptions_UseDownstreamHttpConfig{},
			}})),
			want: want(func(c *Cluster) { c.UpstreamProtocol = UpstreamHTTPAuto }),
		},
		{
			rule: "R-17.7",
			name: "deprecated http2 protocol options",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.Http2ProtocolOptions = &v3corepb.Http2ProtocolOptions{} }),
			want: want(func(c *Cluster) { c.UpstreamProtocol = UpstreamHTTP2 }),
		},
		{
			rule: "R-17.7",
			name: "protocol options of another type",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, &v3corepb.Http2ProtocolOptions{})}
			}),
			wantErr: "typed_extension_protocol_options[envoy.extensions.upstreams.http.v3.HttpProtocolOptions]: type URL",
		},
		{
			rule: "R-17.7",
			name: "max retries and panic threshold",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{
					{Priority: v3corepb.RoutingPriority_DEFAULT, MaxRetries: wrapperspb.UInt32(7)},
				}}
				c.CommonLbConfig = &v3clusterpb.Cluster_CommonLbConfig{HealthyPanicThreshold: &v3typepb.Percent{Value: 33.3}}
			}),
			want: want(func(c *Cluster) { c.MaxRetries = 7; c.LBPolicy.HealthyPanicThreshold = 34 }),
		},
		{
			rule: "R-17.7",
			name: "panic threshold disabled",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{
					{Priority: v3corepb.RoutingPriority_DEFAULT, MaxRetries: wrapperspb.UInt32(0)},
				}}
				c.CommonLbConfig = &v3clusterpb.Cluster_CommonLbConfig{HealthyPanicThreshold: &v3typepb.Percent{Value: 0}}
			}),
			want: want(func(c *Cluster) { c.MaxRetries = 0; c.LBPolicy.HealthyPanicThreshold = 0 }),
		},
		{
			// Envoy's outlier detection: consecutive ejections, enforcing
			// percentages clamped at 100, a zero threshold disabling.
			rule: "R-17.7",
			name: "consecutive ejections",
			give: edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{
				EnforcingSuccessRate: wrapperspb.UInt32(0),
				Consecutive_5Xx:      wrapperspb.UInt32(3), EnforcingConsecutive_5Xx: wrapperspb.UInt32(150),
				ConsecutiveGatewayFailure: wrapperspb.UInt32(2), EnforcingConsecutiveGatewayFailure: wrapperspb.UInt32(50),
			})),
			want: want(func(c *Cluster) {
				c.OutlierDetection = &OutlierDetection{Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10,
					Consecutive5xx:            &ConsecutiveEjection{Threshold: 3, EnforcementPercentage: 100},
					ConsecutiveGatewayFailure: &ConsecutiveEjection{Threshold: 2, EnforcementPercentage: 50},
				}
			}),
		},
		{
			rule: "R-17.7",
			name: "consecutive ejections off",
			give: edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{
				EnforcingSuccessRate: wrapperspb.UInt32(0), Consecutive_5Xx: wrapperspb.UInt32(0), ConsecutiveGatewayFailure: wrapperspb.UInt32(4),
			})),
			want: want(func(c *Cluster) {
				c.OutlierDetection = &OutlierDetection{Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10}
			}),
		},
	}
}

func TestHTTPRetryOn_String(t *testing.T) {
	if got, want := (RetryOn5xx | RetryOnConnectFailure | RetryOnEnvoyRateLimited).String(), "5xx,connect-failure,envoy-ratelimited"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := HTTPRetryOn(0).String(); got != "" {
		t.Errorf("String() of none = %q, want \"\"", got)
	}
}

// TestRegexRewrite_Replace checks Envoy's documented examples of
// regex_rewrite (RouteAction.regex_rewrite).
func TestRegexRewrite_Replace(t *testing.T) {
	for _, tc := range []struct{ pattern, sub, give, want string }{
		{`^/service/([^/]+)(/.*)$`, `\2/instance/\1`, "/service/foo/v1/api", "/v1/api/instance/foo"},
		{`one`, `two`, "/xxx/one/yyy/one/zzz", "/xxx/two/yyy/two/zzz"},
		{`^(.*?)one(.*)$`, `\1two\2`, "/xxx/one/yyy/one/zzz", "/xxx/two/yyy/one/zzz"},
		{`(?i)/xxx/`, `/yyy/`, "/aaa/XxX/bbb", "/aaa/yyy/bbb"},
		{`a`, `$1\0\\`, "/a", `/$1a\`},
	} {
		rr, err := regexRewriteFromProto(&v3matcherpb.RegexMatchAndSubstitute{Pattern: &v3matcherpb.RegexMatcher{Regex: tc.pattern}, Substitution: tc.sub})
		if err != nil {
			t.Fatalf("regexRewriteFromProto(%q, %q): %v", tc.pattern, tc.sub, err)
		}
		if got := rr.Replace(tc.give); got != tc.want {
			t.Errorf("%q → %q: Replace(%q) = %q, want %q", tc.pattern, tc.sub, tc.give, got, tc.want)
		}
	}
}

func TestRouteTimeout(t *testing.T) {
	if got := (&RouteAction{}).RouteTimeout(); got != 15*time.Second {
		t.Errorf("RouteTimeout() unset = %v, want Envoy's 15s", got)
	}
	if got := (&RouteAction{Timeout: ptr(time.Duration(0))}).RouteTimeout(); got != 0 {
		t.Errorf("RouteTimeout() of 0 = %v, want 0 (none)", got)
	}
}
