// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v1udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

func httpFilter(t testing.TB, name string, cfg proto.Message) *v3httppb.HttpFilter {
	return &v3httppb.HttpFilter{Name: name, ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, cfg)}}
}

func routerFilter(t testing.TB) *v3httppb.HttpFilter {
	return httpFilter(t, "router", &v3routerpb.Router{})
}

// hcm returns an HttpConnectionManager using RDS name rds with only the
// router filter, changed by the mods.
func hcm(t testing.TB, rds string, mods ...func(*v3httppb.HttpConnectionManager)) *v3httppb.HttpConnectionManager {
	h := &v3httppb.HttpConnectionManager{
		RouteSpecifier: &v3httppb.HttpConnectionManager_Rds{Rds: &v3httppb.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: rds,
		}},
		HttpFilters: []*v3httppb.HttpFilter{routerFilter(t)},
	}
	for _, m := range mods {
		m(h)
	}
	return h
}

func listener(t testing.TB, name string, h proto.Message) *v3listenerpb.Listener {
	return &v3listenerpb.Listener{Name: name, ApiListener: &v3listenerpb.ApiListener{ApiListener: mustAny(t, h)}}
}

func withFilters(fs ...*v3httppb.HttpFilter) func(*v3httppb.HttpConnectionManager) {
	return func(h *v3httppb.HttpConnectionManager) { h.HttpFilters = fs }
}

func listenerName(m proto.Message) string { return m.(*v3listenerpb.Listener).GetName() }

// TestListener_Decode covers the client-side LDS rules of.
func TestListener_Decode(t *testing.T) {
	runDecodeCases(t, ListenerType, listenerName, listenerCases(t))
}

// listenerCases returns the table of TestListener_Decode; the fuzz target is seeded from it.
func listenerCases(t testing.TB) []decodeCase[*Listener] {
	router := HTTPFilter{Name: "router", TypeURL: routerTypeURL, Config: mustAny(t, &v3routerpb.Router{})}
	faultCfg := mustAny(t, &v3faultpb.HTTPFault{})
	fault := httpFilter(t, "fault", &v3faultpb.HTTPFault{})
	optional := func(f *v3httppb.HttpFilter) *v3httppb.HttpFilter {
		f = proto.Clone(f).(*v3httppb.HttpFilter)
		f.IsOptional = true
		return f
	}
	typedStruct := func(name, typeURL string) *v3httppb.HttpFilter {
		return &v3httppb.HttpFilter{Name: name, ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &v3xdstypepb.TypedStruct{TypeUrl: typeURL})}}
	}
	udpaTypedStruct := func(name, typeURL string) *v3httppb.HttpFilter {
		return &v3httppb.HttpFilter{Name: name, ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &v1udpatypepb.TypedStruct{TypeUrl: typeURL})}}
	}
	raw := func(name, typeURL string, b []byte) *v3httppb.HttpFilter {
		return &v3httppb.HttpFilter{Name: name, ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: typeURL, Value: b}}}
	}
	unknown := raw("unknown", "type.googleapis.com/example.Unknown", nil)
	rbacWithCondition := httpFilter(t, "rbac", &v3rbacpb.RBAC{Rules: &v3rbacconfigpb.RBAC{
		Policies: map[string]*v3rbacconfigpb.Policy{"p": policyWithCondition(t)},
	}})
	withListenerName := func(l *Listener) *Listener { l.Name = "l"; return l }
	lis := func(fs ...HTTPFilter) *Listener {
		return withListenerName(&Listener{RouteConfigName: "r", HTTPFilters: fs})
	}
	many := make([]*v3httppb.HttpFilter, 0, 12)
	for i := range 10 {
		many = append(many, httpFilter(t, "f"+strconv.Itoa(i), &v3faultpb.HTTPFault{}))
	}
	many = append(many, httpFilter(t, "f3", &v3faultpb.HTTPFault{}), routerFilter(t))

	cases := []decodeCase[*Listener]{
		{
			rule: "R-17.1",
			name: "rds with ads",
			give: listener(t, "l", hcm(t, "r")),
			want: lis(router),
		},
		{
			rule: "R-17.1",
			name: "rds with self and a max stream duration",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.GetRds().ConfigSource = selfSource()
				h.CommonHttpProtocolOptions = &v3corepb.HttpProtocolOptions{MaxStreamDuration: durationpb.New(3 * time.Second)}
			})),
			want: &Listener{Name: "l", RouteConfigName: "r", HTTPFilters: []HTTPFilter{router}, MaxStreamDuration: 3 * time.Second},
		},
		{
			rule: "R-17.1",
			name: "zero max stream duration means no limit",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &v3corepb.HttpProtocolOptions{MaxStreamDuration: durationpb.New(0)}
			})),
			want: lis(router),
		},
		{
			rule: "R-5.2",
			name: "xdstp name canonicalised",
			give: listener(t, "xdstp://a/envoy.config.listener.v3.Listener/l?b=1&a=2", hcm(t, "r")),
			want: &Listener{Name: "xdstp://a/envoy.config.listener.v3.Listener/l?a=2&b=1", RouteConfigName: "r", HTTPFilters: []HTTPFilter{router}},
		},
		{
			// inline route_config validated as RDS.
			rule: "R-17.1",
			name: "inline route config",
			give: listener(t, "l", hcm(t, "", func(h *v3httppb.HttpConnectionManager) {
				h.RouteSpecifier = &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig("inline", vhost("v", clusterRoute("c")))}
			})),
			want: &Listener{
				Name:              "l",
				InlineRouteConfig: &RouteConfig{Name: "inline", VirtualHosts: []VirtualHost{{Name: "v", Domains: []string{"*"}, Routes: []Route{{Match: prefixMatch, Action: toCluster("c")}}}}},
				HTTPFilters:       []HTTPFilter{router},
			},
		},
		{
			// grpc-go v3_with_custom_filter: a filter clients run, kept.
			rule: "R-17.1",
			name: "fault filter before the router",
			give: listener(t, "l", hcm(t, "r", withFilters(fault, routerFilter(t)))),
			want: lis(HTTPFilter{Name: "fault", TypeURL: faultTypeURL, Config: faultCfg, Fault: &HTTPFault{}}, router),
		},
		{
			// grpc-go v3_with_two_filters_same_type_different_name.
			rule: "R-17.1",
			name: "two filters of one type with different names",
			give: listener(t, "l", hcm(t, "r", withFilters(fault, httpFilter(t, "fault2", &v3faultpb.HTTPFault{}), routerFilter(t)))),
			want: lis(HTTPFilter{Name: "fault", TypeURL: faultTypeURL, Config: faultCfg, Fault: &HTTPFault{}}, HTTPFilter{Name: "fault2", TypeURL: faultTypeURL, Config: faultCfg, Fault: &HTTPFault{}}, router),
		},
		{
			// grpc-go v3_with_optional_custom_filter: a known optional
			// filter is kept.
			rule: "R-17.1",
			name: "optional known filter kept",
			give: listener(t, "l", hcm(t, "r", withFilters(optional(httpFilter(t, "fault", &v3faultpb.HTTPFault{})), routerFilter(t)))),
			want: lis(HTTPFilter{Name: "fault", TypeURL: faultTypeURL, Config: faultCfg, Optional: true, Fault: &HTTPFault{}}, router),
		},
		{
			// unknown type → dropped when is_optional.
			rule: "R-17.1",
			name: "optional unknown filter dropped",
			give: listener(t, "l", hcm(t, "r", withFilters(optional(unknown), routerFilter(t)))),
			want: lis(router),
		},
		{
			// TypedStruct resolved to the inner type, which is
			// unknown here, so the optional filter is dropped.
			rule: "R-17.1",
			name: "optional unknown filter in a TypedStruct dropped",
			give: listener(t, "l", hcm(t, "r", withFilters(
				optional(typedStruct("ts", "type.googleapis.com/example.Custom")),
				optional(udpaTypedStruct("uts", "type.googleapis.com/example.Custom")),
				routerFilter(t),
			))),
			want: lis(router),
		},
		{
			rule: "R-17.1",
			name: "optional filter without config dropped",
			give: listener(t, "l", hcm(t, "r", withFilters(&v3httppb.HttpFilter{Name: "opt", IsOptional: true}, routerFilter(t)))),
			want: lis(router),
		},
		{
			// grpc-go v3_with_optional_server_only_filter: RBAC is server
			// only; optional, it is dropped from a client listener.
			rule: "R-17.1",
			name: "optional server-only filter dropped",
			give: listener(t, "l", hcm(t, "r", withFilters(optional(httpFilter(t, "rbac", &v3rbacpb.RBAC{})), routerFilter(t)))),
			want: lis(router),
		},
		{
			rule: "R-17.1",
			name: "router last after a dropped optional filter",
			give: listener(t, "l", hcm(t, "r", withFilters(routerFilter(t), &v3httppb.HttpFilter{Name: "opt", IsOptional: true}))),
			want: lis(router),
		},

		// Invalid resources: per-resource errors.
		{
			rule:    "R-17.1",
			name:    "api listener of the wrong type",
			give:    listener(t, "l", &v3routerpb.Router{}),
			wantErr: "api_listener.api_listener: type URL",
		},
		{
			rule: "R-17.1",
			name: "api listener missing",
			give: &v3listenerpb.Listener{Name: "l", ApiListener: &v3listenerpb.ApiListener{}},
			// An absent Any has type URL "".
			wantErr: `api_listener.api_listener: type URL ""`,
		},
		{
			rule: "R-17.1",
			name: "undecodable hcm",
			give: &v3listenerpb.Listener{Name: "l", ApiListener: &v3listenerpb.ApiListener{ApiListener: &anypb.Any{
				TypeUrl: hcmTypeURL, Value: []byte{0xff, 0xff},
			}}},
			wantErr: "api_listener.api_listener: decoding HttpConnectionManager",
		},
		{
			rule:    "R-17.1",
			name:    "xff_num_trusted_hops set",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.XffNumTrustedHops = 1 })),
			wantErr: "api_listener.api_listener.xff_num_trusted_hops: must be 0",
		},
		{
			rule: "R-17.1",
			name: "original ip detection extensions set",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.OriginalIpDetectionExtensions = []*v3corepb.TypedExtensionConfig{{Name: "x"}}
			})),
			wantErr: "api_listener.api_listener.original_ip_detection_extensions: must be empty",
		},
		{
			rule:    "R-17.1",
			name:    "rds config source path",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.GetRds().ConfigSource = pathSource() })),
			wantErr: "api_listener.api_listener.rds.config_source: config source must be ads or self",
		},
		{
			rule:    "R-17.1",
			name:    "rds config source missing",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.GetRds().ConfigSource = nil })),
			wantErr: "api_listener.api_listener.rds.config_source: missing",
		},
		{
			rule:    "R-17.1",
			name:    "rds empty route config name",
			give:    listener(t, "l", hcm(t, "")),
			wantErr: "api_listener.api_listener.rds.route_config_name: empty",
		},
		{
			rule: "R-17.1",
			name: "scoped routes",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.RouteSpecifier = &v3httppb.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &v3httppb.ScopedRoutes{}}
			})),
			wantErr: "api_listener.api_listener.scoped_routes: not supported",
		},
		{
			// grpc-go empty_httpConnMgr_in_apiListener.
			rule:    "R-17.1",
			name:    "no route specifier",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.RouteSpecifier = nil })),
			wantErr: "api_listener.api_listener: no route specifier",
		},
		{
			rule: "R-17.1",
			name: "invalid inline route config",
			give: listener(t, "l", hcm(t, "", func(h *v3httppb.HttpConnectionManager) {
				h.RouteSpecifier = &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig("inline",
					vhost("v", &v3routepb.Route{Action: &v3routepb.Route_Route{}}))}
			})),
			wantErr: "api_listener.api_listener.route_config.virtual_hosts[0].routes[0].match: missing",
		},
		{
			rule:    "R-17.1",
			name:    "no filters",
			give:    listener(t, "l", hcm(t, "r", withFilters())),
			wantErr: "api_listener.api_listener.http_filters: empty",
		},
		{
			rule:    "R-17.1",
			name:    "only optional filters without config",
			give:    listener(t, "l", hcm(t, "r", withFilters(&v3httppb.HttpFilter{Name: "opt", IsOptional: true}))),
			wantErr: "api_listener.api_listener.http_filters: empty",
		},
		{
			rule:    "R-17.1",
			name:    "filter without name",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "", &v3faultpb.HTTPFault{}), routerFilter(t)))),
			wantErr: "api_listener.api_listener.http_filters[0].name: empty",
		},
		{
			// grpc-go v3_with_two_filters_with_same_name.
			rule:    "R-17.1",
			name:    "duplicate filter names",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "router", &v3faultpb.HTTPFault{}), routerFilter(t)))),
			wantErr: `api_listener.api_listener.http_filters[1].name: duplicate filter name "router"`,
		},
		{
			rule:    "R-17.1",
			name:    "duplicate filter names in a long chain",
			give:    listener(t, "l", hcm(t, "r", withFilters(many...))),
			wantErr: `api_listener.api_listener.http_filters[10].name: duplicate filter name "f3"`,
		},
		{
			// gRFC A39: a terminal filter before the last → error.
			rule:    "R-17.1",
			name:    "router not last",
			give:    listener(t, "l", hcm(t, "r", withFilters(routerFilter(t), fault))),
			wantErr: `api_listener.api_listener.http_filters[0]: terminal filter "router" is not the last filter`,
		},
		{
			rule:    "R-17.1",
			name:    "two routers",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "r1", &v3routerpb.Router{}), routerFilter(t)))),
			wantErr: `http_filters[0]: terminal filter "r1" is not the last filter`,
		},
		{
			// gRFC A39, grpc-go v3_no_terminal_filter: last filter not
			// terminal → error.
			rule:    "R-17.1",
			name:    "last filter not the router",
			give:    listener(t, "l", hcm(t, "r", withFilters(fault))),
			wantErr: `api_listener.api_listener.http_filters[0]: last filter "fault"`,
		},
		{
			rule:    "R-17.1",
			name:    "filter without config",
			give:    listener(t, "l", hcm(t, "r", withFilters(&v3httppb.HttpFilter{Name: "f"}, routerFilter(t)))),
			wantErr: "api_listener.api_listener.http_filters[0].typed_config: missing",
		},
		{
			// grpc-go v3_with_unknown_filter.
			rule:    "R-17.1",
			name:    "unknown filter",
			give:    listener(t, "l", hcm(t, "r", withFilters(unknown, routerFilter(t)))),
			wantErr: `http_filters[0].typed_config: unsupported filter type "type.googleapis.com/example.Unknown"`,
		},
		{
			// the type inside the TypedStruct decides.
			rule:    "R-17.1",
			name:    "unknown filter in a TypedStruct",
			give:    listener(t, "l", hcm(t, "r", withFilters(typedStruct("ts", "type.googleapis.com/example.Custom"), routerFilter(t)))),
			wantErr: `http_filters[0].typed_config: unsupported filter type "type.googleapis.com/example.Custom"`,
		},
		{
			rule:    "R-17.1",
			name:    "typed struct without type url",
			give:    listener(t, "l", hcm(t, "r", withFilters(typedStruct("ts", ""), routerFilter(t)))),
			wantErr: `api_listener.api_listener.http_filters[0].typed_config: unsupported filter type ""`,
		},
		{
			rule:    "R-17.1",
			name:    "undecodable typed struct",
			give:    listener(t, "l", hcm(t, "r", withFilters(optional(raw("ts", xdsTypedStructTypeURL, []byte{0x0a})), routerFilter(t)))),
			wantErr: "http_filters[0].typed_config: decoding TypedStruct",
		},
		{
			// grpc-go's fault and router filters parse only the proto, not
			// a TypedStruct.
			rule:    "R-17.1",
			name:    "known filter in a TypedStruct",
			give:    listener(t, "l", hcm(t, "r", withFilters(udpaTypedStruct("fault", faultTypeURL), routerFilter(t)))),
			wantErr: "http_filters[0].typed_config: a envoy.extensions.filters.http.fault.v3.HTTPFault config must be given as the message, not in a TypedStruct",
		},
		{
			rule:    "R-17.1",
			name:    "router in a TypedStruct",
			give:    listener(t, "l", hcm(t, "r", withFilters(typedStruct("router", routerTypeURL)))),
			wantErr: "http_filters[0].typed_config: a envoy.extensions.filters.http.router.v3.Router config must be given as the message",
		},
		{
			// grpc-go v3_with_server_only_filter.
			rule:    "R-17.1",
			name:    "server-only filter",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "rbac", &v3rbacpb.RBAC{}), routerFilter(t)))),
			wantErr: `http_filters[0]: filter "rbac" of type "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC" is not supported on clients`,
		},
		{
			// grpc-go v3_with_optional_err_filter: the config is checked
			// even when the filter is optional.
			rule:    "R-17.1",
			name:    "optional filter with a bad config",
			give:    listener(t, "l", hcm(t, "r", withFilters(optional(raw("fault", faultTypeURL, []byte{0x0a})), routerFilter(t)))),
			wantErr: "http_filters[0].typed_config: decoding envoy.extensions.filters.http.fault.v3.HTTPFault",
		},
		{
			// gRFC A41: an RBAC condition is rejected, even in an optional
			// server-only filter of a client listener.
			rule:    "R-17.1",
			name:    "optional rbac filter with a condition",
			give:    listener(t, "l", hcm(t, "r", withFilters(optional(rbacWithCondition), routerFilter(t)))),
			wantErr: `http_filters[0].typed_config.rules.policies["p"].condition: not supported`,
		},
		{
			rule:    "R-17.1",
			name:    "undecodable router config",
			give:    listener(t, "l", hcm(t, "r", withFilters(raw("router", routerTypeURL, []byte{0xff})))),
			wantErr: "http_filters[0].typed_config: decoding envoy.extensions.filters.http.router.v3.Router",
		},
		{
			rule: "R-17.1",
			name: "negative max stream duration",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &v3corepb.HttpProtocolOptions{MaxStreamDuration: durationpb.New(-time.Second)}
			})),
			wantErr: "api_listener.api_listener.common_http_protocol_options.max_stream_duration: negative duration",
		},
	}
	return append(cases, serverListenerCases(t)...)
}

// TestListener_TopLevelErrors checks that an empty name and an undecodable
// resource are top-level errors.
func TestListener_TopLevelErrors(t *testing.T) {
	cases := []struct {
		name    string
		give    *anypb.Any
		wantErr string
	}{
		{name: "empty name", give: mustAny(t, listener(t, "", hcm(t, "r"))), wantErr: "name: empty resource name"},
		{name: "undecodable", give: &anypb.Any{TypeUrl: ListenerTypeURL, Value: []byte{0x0a}}, wantErr: "decoding Listener"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := ListenerType.DecodeTyped(tc.give)
			if name != "" || v != nil || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DecodeTyped() = %q, %v, %v; want \"\", nil, error containing %q", name, v, err, tc.wantErr)
			}
		})
	}
}

// policyWithCondition returns an RBAC policy with an empty condition,
// built from the wire to avoid importing the CEL expression protos.
func policyWithCondition(t testing.TB) *v3rbacconfigpb.Policy {
	p := &v3rbacconfigpb.Policy{}
	if err := proto.Unmarshal([]byte{0x1a, 0x00}, p); err != nil || p.GetCondition() == nil {
		t.Fatalf("building a policy with a condition: %v", err)
	}
	return p
}
