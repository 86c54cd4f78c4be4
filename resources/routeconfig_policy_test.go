// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"net/netip"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// rlsConfig describes a grpc.lookup.v1.RouteLookupClusterSpecifier for
// rlsPlugin; the zero value plus defaults of rlsPlugin is valid.
type rlsConfig struct {
	keyBuilders   [][]byte // GrpcKeyBuilder messages
	lookupService string
	cacheSize     int64
	maxAge        *durationpb.Duration
	staleAge      *durationpb.Duration
	noConfig      bool // leave route_lookup_config out
}

// rlsKeyBuilder encodes a GrpcKeyBuilder with the given service/method
// names, header keys (required_match when the key ends in "!") and
// constant keys.
func rlsKeyBuilder(names [][2]string, headerKeys []string, constantKeys ...string) []byte {
	var b []byte
	for _, n := range names {
		var nb []byte
		nb = protowire.AppendTag(nb, rlsNameService, protowire.BytesType)
		nb = protowire.AppendString(nb, n[0])
		nb = protowire.AppendTag(nb, rlsNameMethod, protowire.BytesType)
		nb = protowire.AppendString(nb, n[1])
		b = protowire.AppendTag(b, rlsKBNames, protowire.BytesType)
		b = protowire.AppendBytes(b, nb)
	}
	for _, k := range headerKeys {
		var hb []byte
		required := len(k) > 0 && k[len(k)-1] == '!'
		if required {
			k = k[:len(k)-1]
		}
		hb = protowire.AppendTag(hb, rlsMatcherKey, protowire.BytesType)
		hb = protowire.AppendString(hb, k)
		hb = protowire.AppendTag(hb, 2, protowire.BytesType) // names
		hb = protowire.AppendString(hb, "x-"+k)
		if required {
			hb = protowire.AppendTag(hb, rlsMatcherRequired, protowire.VarintType)
			hb = protowire.AppendVarint(hb, 1)
		}
		b = protowire.AppendTag(b, rlsKBHeaders, protowire.BytesType)
		b = protowire.AppendBytes(b, hb)
	}
	for _, k := range constantKeys {
		var eb []byte
		eb = protowire.AppendTag(eb, rlsMapKey, protowire.BytesType)
		eb = protowire.AppendString(eb, k)
		eb = protowire.AppendTag(eb, 2, protowire.BytesType)
		eb = protowire.AppendString(eb, "v")
		b = protowire.AppendTag(b, rlsKBConstantKeys, protowire.BytesType)
		b = protowire.AppendBytes(b, eb)
	}
	return b
}

// rlsPlugin returns the typed_config of an RLS cluster specifier plugin,
// valid unless the mods break it.
func rlsPlugin(t testing.TB, mods ...func(*rlsConfig)) *anypb.Any {
	t.Helper()
	c := &rlsConfig{
		keyBuilders:   [][]byte{rlsKeyBuilder([][2]string{{"pkg.Svc", "Get"}}, []string{"user"})},
		lookupService: "rls.example.com:443",
		cacheSize:     1 << 20,
	}
	for _, m := range mods {
		m(c)
	}
	var cfg []byte
	for _, kb := range c.keyBuilders {
		cfg = protowire.AppendTag(cfg, rlsConfigGrpcKeybuilders, protowire.BytesType)
		cfg = protowire.AppendBytes(cfg, kb)
	}
	if c.lookupService != "" {
		cfg = protowire.AppendTag(cfg, rlsConfigLookupService, protowire.BytesType)
		cfg = protowire.AppendString(cfg, c.lookupService)
	}
	for num, d := range map[protowire.Number]*durationpb.Duration{rlsConfigMaxAge: c.maxAge, rlsConfigStaleAge: c.staleAge} {
		if d == nil {
			continue
		}
		db, err := proto.Marshal(d)
		if err != nil {
			t.Fatalf("proto.Marshal: %v", err)
		}
		cfg = protowire.AppendTag(cfg, num, protowire.BytesType)
		cfg = protowire.AppendBytes(cfg, db)
	}
	if c.cacheSize != 0 {
		cfg = protowire.AppendTag(cfg, rlsConfigCacheSizeBytes, protowire.VarintType)
		cfg = protowire.AppendVarint(cfg, uint64(c.cacheSize))
	}
	var b []byte
	if !c.noConfig {
		b = protowire.AppendTag(b, rlsSpecifierConfig, protowire.BytesType)
		b = protowire.AppendBytes(b, cfg)
	}
	return &anypb.Any{TypeUrl: rlsPluginTypeURL, Value: b}
}

// withRetry sets the retry policy of a route.
func withRetry(rp *v3routepb.RetryPolicy) func(*v3routepb.Route) {
	return func(r *v3routepb.Route) { r.GetRoute().RetryPolicy = rp }
}

func backoff(base, maxInterval *durationpb.Duration) *v3routepb.RetryPolicy_RetryBackOff {
	return &v3routepb.RetryPolicy_RetryBackOff{BaseInterval: base, MaxInterval: maxInterval}
}

// withOverride sets typed_per_filter_config[name] of a route.
func withOverride(name string, cfg *anypb.Any) func(*v3routepb.Route) {
	return func(r *v3routepb.Route) {
		if r.TypedPerFilterConfig == nil {
			r.TypedPerFilterConfig = map[string]*anypb.Any{}
		}
		r.TypedPerFilterConfig[name] = cfg
	}
}

// wrapFilterConfig wraps cfg in an envoy.config.route.v3.FilterConfig.
func wrapFilterConfig(t testing.TB, cfg *anypb.Any, optional bool) *anypb.Any {
	return mustAny(t, &v3routepb.FilterConfig{Config: cfg, IsOptional: optional})
}

// routePolicyCases are the cases of retry policies, hash policies and
// per-filter overrides.
func routePolicyCases(t testing.TB) []decodeCase[*RouteConfig] {
	defaultBackoff := func(rp RetryPolicy) *RetryPolicy {
		if rp.BaseInterval == 0 {
			rp.BaseInterval, rp.MaxInterval = 25*time.Millisecond, 250*time.Millisecond
		}
		return &rp
	}
	withAction := func(a RouteAction) RouteConfig {
		return *rc1(Route{Match: prefixMatch, Action: a})
	}
	withHash := func(hps ...*v3routepb.RouteAction_HashPolicy) func(*v3routepb.Route) {
		return func(r *v3routepb.Route) { r.GetRoute().HashPolicy = hps }
	}
	headerHash := func(name, regex, subst string) *v3routepb.RouteAction_HashPolicy {
		h := &v3routepb.RouteAction_HashPolicy_Header{HeaderName: name}
		if regex != "" {
			h.RegexRewrite = &v3matcherpb.RegexMatchAndSubstitute{Pattern: &v3matcherpb.RegexMatcher{Regex: regex}, Substitution: subst}
		}
		return &v3routepb.RouteAction_HashPolicy{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Header_{Header: h}}
	}
	filterState := func(key string) *v3routepb.RouteAction_HashPolicy {
		return &v3routepb.RouteAction_HashPolicy{Terminal: true, PolicySpecifier: &v3routepb.RouteAction_HashPolicy_FilterState_{
			FilterState: &v3routepb.RouteAction_HashPolicy_FilterState{Key: key},
		}}
	}
	fault := mustAny(t, &v3faultpb.HTTPFault{})
	rbacOverride := func(p *v3rbacconfigpb.Policy) *anypb.Any {
		return mustAny(t, &v3rbacpb.RBACPerRoute{Rbac: &v3rbacpb.RBAC{Rules: &v3rbacconfigpb.RBAC{
			Action:   v3rbacconfigpb.RBAC_ALLOW,
			Policies: map[string]*v3rbacconfigpb.Policy{"p": p},
		}}})
	}
	anyPrincipal := []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}}
	unknownCfg := &anypb.Any{TypeUrl: "type.googleapis.com/example.Unknown"}

	return []decodeCase[*RouteConfig]{
		{
			// gRFC A81: decoded whatever the server; the resolver checks
			// that the server is trusted.
			rule: "R-17.3",
			name: "auto host rewrite",
			give: routeConfig("r", vhost("v", clusterRoute("c", func(r *v3routepb.Route) {
				r.GetRoute().HostRewriteSpecifier = &v3routepb.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)}
			}))),
			want: func() *RouteConfig {
				rc := withAction(RouteAction{Kind: RouteActionCluster, Cluster: "c", AutoHostRewrite: true})
				return &rc
			}(),
		},
		{
			// grpc-go good-route-config-with-retry-policy: route and
			// virtual host policies, defaults, unknown codes ignored.
			rule: "R-17.3",
			name: "retry policies",
			give: func() proto.Message {
				rc := routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{
					RetryOn:    "deadline-exceeded, unsupported,Unavailable,cancelled,internal,resource-exhausted,internal",
					NumRetries: wrapperspb.UInt32(2),
				}))))
				rc.VirtualHosts[0].RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "cancelled"}
				return rc
			}(),
			want: func() *RouteConfig {
				rc := rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "c", RetryPolicy: defaultBackoff(RetryPolicy{
					RetryOn:    []codes.Code{codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Internal, codes.Unavailable},
					NumRetries: 2,
				})}})
				rc.VirtualHosts[0].RetryPolicy = defaultBackoff(RetryPolicy{RetryOn: []codes.Code{codes.Canceled}, NumRetries: 1})
				return rc
			}(),
		},
		{
			// grpc-go good-route-config-with-retry-backoff: max defaults to
			// ten times base.
			rule: "R-17.3",
			name: "retry backoff",
			give: routeConfig("r", vhost("v",
				clusterRoute("a", withRetry(&v3routepb.RetryPolicy{RetryOn: "internal", RetryBackOff: backoff(durationpb.New(10*time.Millisecond), durationpb.New(10*time.Millisecond))})),
				clusterRoute("b", withRetry(&v3routepb.RetryPolicy{RetryOn: "resource-exhausted", RetryBackOff: backoff(durationpb.New(10*time.Millisecond), nil)})),
			)),
			want: rc1(
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "a", RetryPolicy: &RetryPolicy{RetryOn: []codes.Code{codes.Internal}, NumRetries: 1, BaseInterval: 10 * time.Millisecond, MaxInterval: 10 * time.Millisecond}}},
				Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "b", RetryPolicy: &RetryPolicy{RetryOn: []codes.Code{codes.ResourceExhausted}, NumRetries: 1, BaseInterval: 10 * time.Millisecond, MaxInterval: 100 * time.Millisecond}}},
			),
		},
		{
			// unsupported retry_on codes are ignored; none left
			// means no retries.
			rule: "R-17.3",
			name: "retry policy without known codes",
			give: routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetryOn: "5xx,reset"})))),
			want: ptr(withAction(RouteAction{Kind: RouteActionCluster, Cluster: "c", RetryPolicy: defaultBackoff(RetryPolicy{NumRetries: 1, HTTPRetryOn: RetryOn5xx | RetryOnReset})})),
		},
		{
			// grpc-go TestHashPoliciesProtoToSlice: header (with regex
			// rewrite), channel ID; other filter_state keys and other
			// policy types are ignored.
			rule: "R-17.3",
			name: "hash policies",
			give: routeConfig("r", vhost("v", clusterRoute("c", withHash(
				headerHash(":path", "/products", "/products2"),
				headerHash("x-user", "", ""),
				filterState("io.grpc.channel_id"),
				filterState("not.the.channel.id"),
				&v3routepb.RouteAction_HashPolicy{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_ConnectionProperties_{
					ConnectionProperties: &v3routepb.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true},
				}},
			)))),
			want: func() *RouteConfig {
				re, _ := compileRewriteRegex("/products")
				return rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionCluster, Cluster: "c", HashPolicies: []HashPolicy{
					{Kind: HashPolicyHeader, HeaderName: ":path", RegexRewrite: re, RegexRewritePattern: "/products", RegexSubstitution: "/products2"},
					{Kind: HashPolicyHeader, HeaderName: "x-user"},
					{Kind: HashPolicyChannelID, Terminal: true},
				}, HTTPHashPolicies: []HashPolicy{
					{Kind: HashPolicyHeader, HeaderName: ":path", RegexRewrite: re, RegexRewritePattern: "/products", RegexSubstitution: "/products2"},
					{Kind: HashPolicyHeader, HeaderName: "x-user"},
					{Kind: HashPolicySourceIP},
				}}})
			}(),
		},
		{
			// grpc-go good-route-config-with-http-filter-config: overrides at
			// the three levels, a FilterConfig wrapper, and an optional
			// unknown override dropped.
			rule: "R-17.3",
			name: "per-filter overrides",
			give: func() proto.Message {
				rc := routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", 1)),
					withOverride("fault", wrapFilterConfig(t, fault, false)),
					withOverride("unknown", wrapFilterConfig(t, unknownCfg, true)),
				)))
				rc.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"fault": fault, "rbac": rbacOverride(&v3rbacconfigpb.Policy{
					Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_DestinationIp{DestinationIp: &v3corepb.CidrRange{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)}}}},
					Principals:  anyPrincipal,
				})}
				rc.VirtualHosts[0].Routes[0].GetRoute().GetWeightedClusters().Clusters[0].TypedPerFilterConfig = map[string]*anypb.Any{"fault": fault}
				return rc
			}(),
			want: func() *RouteConfig {
				rc := rc1(Route{
					Match:           prefixMatch,
					Action:          RouteAction{Kind: RouteActionWeightedClusters, WeightedClusters: []WeightedCluster{{Name: "a", Weight: 1, FilterOverrides: map[string]FilterOverride{"fault": {TypeURL: faultTypeURL, Config: fault, Fault: &HTTPFault{}}}}}},
					FilterOverrides: map[string]FilterOverride{"fault": {TypeURL: faultTypeURL, Config: fault, Fault: &HTTPFault{}}},
				})
				rc.VirtualHosts[0].FilterOverrides = map[string]FilterOverride{
					"fault": {TypeURL: faultTypeURL, Config: fault, Fault: &HTTPFault{}},
					"rbac": {TypeURL: rbacPerRouteTypeURL, Config: rbacOverride(&v3rbacconfigpb.Policy{
						Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_DestinationIp{DestinationIp: &v3corepb.CidrRange{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)}}}},
						Principals:  anyPrincipal,
					}), RBAC: &RBACRules{Allow: true, Policies: []RBACPolicy{{
						Name:        "p",
						Permissions: []RBACMatcher{{Kind: RBACDestinationIP, CIDR: netip.MustParsePrefix("10.0.0.0/8")}},
						Principals:  []RBACMatcher{{Kind: RBACAny}},
					}}}},
				}
				return rc
			}(),
		},
		{
			// grpc-go "with optional unknown custom HTTP filter config" in a
			// TypedStruct: resolved, unknown, optional, dropped.
			rule: "R-17.3",
			name: "optional unknown override in a TypedStruct dropped",
			give: routeConfig("r", vhost("v", clusterRoute("c", withOverride("x", wrapFilterConfig(t, mustAny(t, &v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/example.Custom"}), true))))),
			want: rc1(Route{Match: prefixMatch, Action: toCluster("c")}),
		},

		// Invalid policies.
		{
			// grpc-go bad-retry-policy-0-retries.
			rule:    "R-17.3",
			name:    "retry with zero retries",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetryOn: "cancelled", NumRetries: wrapperspb.UInt32(0)})))),
			wantErr: "routes[0].route.retry_policy.num_retries: 0, must be at least 1",
		},
		{
			// grpc-go bad-retry-policy-0-base-interval.
			rule:    "R-17.3",
			name:    "retry with zero base interval",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetryOn: "cancelled", RetryBackOff: backoff(durationpb.New(0), nil)})))),
			wantErr: "route.retry_policy.retry_back_off.base_interval: 0s, must be greater than 0",
		},
		{
			// grpc-go bad-retry-policy-negative-max-interval: base unset reads
			// as 0 and is the first error.
			rule:    "R-17.3",
			name:    "retry backoff without base interval",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetryOn: "cancelled", RetryBackOff: backoff(nil, durationpb.New(-time.Second))})))),
			wantErr: "route.retry_policy.retry_back_off.base_interval: missing, must be greater than 0",
		},
		{
			// grpc-go bad-retry-policy-negative-max-interval-no-known-retry-on:
			// the bounds apply even when no code is retried.
			rule:    "R-17.3",
			name:    "retry with negative max interval and no known code",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetryOn: "something", RetryBackOff: backoff(durationpb.New(time.Second), durationpb.New(-time.Second))})))),
			wantErr: "route.retry_policy.retry_back_off.max_interval: negative duration",
		},
		{
			rule:    "R-17.3",
			name:    "retry with zero max interval",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withRetry(&v3routepb.RetryPolicy{RetryOn: "cancelled", RetryBackOff: backoff(durationpb.New(time.Second), durationpb.New(0))})))),
			wantErr: "route.retry_policy.retry_back_off.max_interval: 0s, must be greater than 0",
		},
		{
			rule: "R-17.3",
			name: "invalid virtual host retry policy",
			give: func() proto.Message {
				rc := routeConfig("r", vhost("v", clusterRoute("c")))
				rc.VirtualHosts[0].RetryPolicy = &v3routepb.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}
				return rc
			}(),
			wantErr: "virtual_hosts[0].retry_policy.num_retries: 0, must be at least 1",
		},
		{
			// the regex rewrite must compile.
			rule:    "R-17.3",
			name:    "hash policy with a bad regex rewrite",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withHash(headerHash("x", "(", "y"))))),
			wantErr: `routes[0].route.hash_policy[0].header.regex_rewrite.pattern.regex: invalid RE2 pattern "("`,
		},
		{
			// As grpc-go: hash policies are checked before the cluster
			// specifier decides that the route is ignored.
			rule: "R-17.3",
			name: "bad hash policy on an ignored route",
			give: routeConfig("r", vhost("v", clusterRoute("c", withHash(headerHash("x", "[", "y")), func(r *v3routepb.Route) {
				r.GetRoute().ClusterSpecifier = &v3routepb.RouteAction_ClusterHeader{ClusterHeader: "h"}
			}))),
			wantErr: "route.hash_policy[0].header.regex_rewrite.pattern.regex: invalid RE2 pattern",
		},
		{
			// grpc-go "with unknown custom HTTP filter config".
			rule:    "R-17.3",
			name:    "unknown override",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withOverride("x", unknownCfg)))),
			wantErr: `routes[0].typed_per_filter_config[x]: unsupported filter config type "type.googleapis.com/example.Unknown"`,
		},
		{
			// grpc-go "with optional erroring custom HTTP filter config".
			rule:    "R-17.3",
			name:    "optional override with a bad config",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withOverride("fault", wrapFilterConfig(t, &anypb.Any{TypeUrl: faultTypeURL, Value: []byte{0x0a}}, true))))),
			wantErr: "routes[0].typed_per_filter_config[fault].config: decoding envoy.extensions.filters.http.fault.v3.HTTPFault",
		},
		{
			rule:    "R-17.3",
			name:    "router override",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withOverride("router", mustAny(t, &v3routerpb.Router{}))))),
			wantErr: "routes[0].typed_per_filter_config[router]: the router filter takes no per-route override",
		},
		{
			rule:    "R-17.3",
			name:    "undecodable FilterConfig",
			give:    routeConfig("r", vhost("v", clusterRoute("c", withOverride("f", &anypb.Any{TypeUrl: filterConfigTypeURL, Value: []byte{0x0a, 0x05}})))),
			wantErr: "routes[0].typed_per_filter_config[f]: decoding FilterConfig",
		},
		{
			// grpc-go good-route-config-with-bad-rbac-http-filter-configuration.
			rule: "R-17.3",
			name: "rbac override with a bad CIDR",
			give: func() proto.Message {
				rc := routeConfig("r", vhost("v", clusterRoute("c")))
				rc.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"rbac": rbacOverride(&v3rbacconfigpb.Policy{
					Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_DestinationIp{DestinationIp: &v3corepb.CidrRange{AddressPrefix: "not a correct address", PrefixLen: wrapperspb.UInt32(10)}}}},
					Principals:  anyPrincipal,
				})}
				return rc
			}(),
			wantErr: `virtual_hosts[0].typed_per_filter_config[rbac].rbac.rules.policies["p"].permissions[0].destination_ip: invalid CIDR range`,
		},
		{
			// gRFC A41: no header matcher on a grpc- header, at any depth.
			rule: "R-17.3",
			name: "rbac override matching a grpc- header",
			give: routeConfig("r", vhost("v", clusterRoute("c", withOverride("rbac", rbacOverride(&v3rbacconfigpb.Policy{
				Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Any{Any: true}}},
				Principals: []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_NotId{NotId: &v3rbacconfigpb.Principal{
					Identifier: &v3rbacconfigpb.Principal_Header{Header: &v3routepb.HeaderMatcher{Name: "GRPC-Timeout", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}},
				}}}},
			}))))),
			wantErr: `typed_per_filter_config[rbac].rbac.rules.policies["p"].principals[0].not_id.header.name: matching on a grpc- header ("GRPC-Timeout") is not allowed`,
		},
		{
			rule: "R-17.3",
			name: "bad weighted cluster override",
			give: func() proto.Message {
				rc := routeConfig("r", vhost("v", clusterRoute("", withWeighted(cw("a", 1), cw("b", 1)))))
				rc.VirtualHosts[0].Routes[0].GetRoute().GetWeightedClusters().Clusters[1].TypedPerFilterConfig = map[string]*anypb.Any{"x": unknownCfg}
				return rc
			}(),
			wantErr: "route.weighted_clusters.clusters[1].typed_per_filter_config[x]: unsupported filter config type",
		},
	}
}

// routePluginCases are the cases of cluster specifier plugins (R-17.3,
// "RLS in xDS").
func routePluginCases(t testing.TB) []decodeCase[*RouteConfig] {
	plugin := func(name string, cfg *anypb.Any, optional bool) *v3routepb.ClusterSpecifierPlugin {
		return &v3routepb.ClusterSpecifierPlugin{Extension: &v3corepb.TypedExtensionConfig{Name: name, TypedConfig: cfg}, IsOptional: optional}
	}
	rc := func(plugins []*v3routepb.ClusterSpecifierPlugin, routes ...*v3routepb.Route) *v3routepb.RouteConfiguration {
		r := routeConfig("r", vhost("v", routes...))
		r.ClusterSpecifierPlugins = plugins
		return r
	}
	badRLS := func(name, wantErr string, mod func(*rlsConfig)) decodeCase[*RouteConfig] {
		return decodeCase[*RouteConfig]{
			rule:    "R-17.3",
			name:    "rls config " + name,
			give:    rc([]*v3routepb.ClusterSpecifierPlugin{plugin("rls", rlsPlugin(t, mod), false)}, clusterRoute("", toPlugin("rls"))),
			wantErr: "cluster_specifier_plugins[0].extension.typed_config." + wantErr,
		}
	}
	kb := func(names ...[2]string) []byte { return rlsKeyBuilder(names, nil) }
	return []decodeCase[*RouteConfig]{
		{
			// grpc-go emitted-cluster-specifier-plugins and
			// deleted-cluster-specifier-plugins-not-referenced.
			rule: "R-17.3",
			name: "rls plugin, unused plugin left out",
			give: rc([]*v3routepb.ClusterSpecifierPlugin{plugin("rls", rlsPlugin(t), false), plugin("unused", rlsPlugin(t), false)}, clusterRoute("", toPlugin("rls"))),
			want: func() *RouteConfig {
				r := rc1(Route{Match: prefixMatch, Action: RouteAction{Kind: RouteActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "rls"}})
				r.ClusterSpecifierPlugins = []ClusterSpecifierPlugin{{Name: "rls", TypeURL: rlsPluginTypeURL, Config: rlsPlugin(t)}}
				return r
			}(),
		},
		{
			// grpc-go cluster-specifier-plugin-not-found-and-optional-route-should-ignore.
			rule: "R-17.3",
			name: "optional unsupported plugin: its routes are ignored",
			give: rc([]*v3routepb.ClusterSpecifierPlugin{plugin("x", &anypb.Any{TypeUrl: "type.googleapis.com/example.Plugin"}, true), plugin("y", nil, true)},
				clusterRoute("", toPlugin("x")), clusterRoute("", toPlugin("y")), clusterRoute("c")),
			want: rc1(Route{Match: prefixMatch, Action: toCluster("c")}),
		},
		{
			// grpc-go cluster-specifier-declared-which-not-registered.
			rule:    "R-17.3",
			name:    "unsupported plugin",
			give:    rc([]*v3routepb.ClusterSpecifierPlugin{plugin("x", &anypb.Any{TypeUrl: "type.googleapis.com/example.Plugin"}, false)}, clusterRoute("c")),
			wantErr: `cluster_specifier_plugins[0].extension.typed_config: unsupported cluster specifier plugin type "type.googleapis.com/example.Plugin"`,
		},
		{
			// grpc-go route-action-that-references-undeclared-cluster-specifier-plugin.
			rule:    "R-17.3",
			name:    "undeclared cluster specifier plugin",
			give:    withPlugins(t, routeConfig("r", vhost("v", clusterRoute("", toPlugin("rls")))), "other"),
			wantErr: `route.cluster_specifier_plugin: plugin "rls" is not in cluster_specifier_plugins`,
		},
		{
			// grpc-go keys plugins by name and keeps the last; a repeated
			// name makes routes ambiguous, so it is rejected here.
			rule:    "R-17.3",
			name:    "duplicate plugin names",
			give:    withPlugins(t, routeConfig("r"), "a", "a"),
			wantErr: `cluster_specifier_plugins[1].extension.name: duplicate plugin name "a"`,
		},
		{
			rule:    "R-17.3",
			name:    "plugin without name",
			give:    withPlugins(t, routeConfig("r"), ""),
			wantErr: "cluster_specifier_plugins[0].extension.name: empty",
		},
		{
			rule:    "R-17.3",
			name:    "plugin without config",
			give:    rc([]*v3routepb.ClusterSpecifierPlugin{plugin("a", nil, false)}),
			wantErr: "cluster_specifier_plugins[0].extension.typed_config: missing",
		},
		// grpc-go error-in-cluster-specifier-plugin-conversion-method: the
		// RLS LB policy's checks of route_lookup_config.
		badRLS("without route_lookup_config", "route_lookup_config: missing", func(c *rlsConfig) { c.noConfig = true }),
		badRLS("without key builders", "route_lookup_config.grpc_keybuilders: empty", func(c *rlsConfig) { c.keyBuilders = nil }),
		badRLS("without lookup service", "route_lookup_config.lookup_service: empty", func(c *rlsConfig) { c.lookupService = "" }),
		badRLS("with zero cache size", "route_lookup_config.cache_size_bytes: 0, must be greater than 0", func(c *rlsConfig) { c.cacheSize = 0 }),
		badRLS("with negative cache size", "route_lookup_config.cache_size_bytes: -1, must be greater than 0", func(c *rlsConfig) { c.cacheSize = -1 }),
		badRLS("with stale age but no max age", "route_lookup_config.stale_age: set without max_age", func(c *rlsConfig) { c.staleAge = durationpb.New(time.Minute) }),
		badRLS("with an invalid max age", "route_lookup_config.max_age: invalid duration", func(c *rlsConfig) { c.maxAge = &durationpb.Duration{Seconds: 1, Nanos: -1} }),
		badRLS("with a nameless key builder", "route_lookup_config.grpc_keybuilders[0].names: empty", func(c *rlsConfig) { c.keyBuilders = [][]byte{kb()} }),
		badRLS("with a name without service", "route_lookup_config.grpc_keybuilders[0].names[0].service: empty", func(c *rlsConfig) { c.keyBuilders = [][]byte{kb([2]string{"", "M"})} }),
		badRLS("with a method with a slash", `route_lookup_config.grpc_keybuilders[0].names[0].method: "a/b" contains '/'`, func(c *rlsConfig) { c.keyBuilders = [][]byte{kb([2]string{"S", "a/b"})} }),
		badRLS("with a repeated name", "route_lookup_config.grpc_keybuilders[1].names[0]: name /S/M appears twice", func(c *rlsConfig) {
			c.keyBuilders = [][]byte{kb([2]string{"S", "M"}), kb([2]string{"S", "M"})}
		}),
		badRLS("with required_match", "route_lookup_config.grpc_keybuilders[0].headers[0].required_match: must not be set", func(c *rlsConfig) {
			c.keyBuilders = [][]byte{rlsKeyBuilder([][2]string{{"S", ""}}, []string{"k!"})}
		}),
		badRLS("with a key in headers and constant_keys", `route_lookup_config.grpc_keybuilders[0].headers[0].key: key "k" used twice`, func(c *rlsConfig) {
			c.keyBuilders = [][]byte{rlsKeyBuilder([][2]string{{"S", ""}}, []string{"k"}, "k")}
		}),
	}
}
