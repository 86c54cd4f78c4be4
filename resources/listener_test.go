// SPDX-License-Identifier: Apache-2.0

package resources

import (
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
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

const faultTypeURL = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"

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
	fault := httpFilter(t, "fault", &v3faultpb.HTTPFault{})
	xdsTS := &v3httppb.HttpFilter{Name: "ts", ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &v3xdstypepb.TypedStruct{TypeUrl: faultTypeURL})}}
	udpaTS := &v3httppb.HttpFilter{Name: "uts", ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &v1udpatypepb.TypedStruct{TypeUrl: faultTypeURL})}}

	cases := []decodeCase[*Listener]{
		{
			name: "rds with ads",
			give: listener(t, "l", hcm(t, "r")),
			want: &Listener{Name: "l", RouteConfigName: "r", HTTPFilters: []HTTPFilter{router}},
		},
		{
			name: "rds with self and a max stream duration",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.GetRds().ConfigSource = selfSource()
				h.CommonHttpProtocolOptions = &v3corepb.HttpProtocolOptions{MaxStreamDuration: durationpb.New(3 * time.Second)}
			})),
			want: &Listener{Name: "l", RouteConfigName: "r", HTTPFilters: []HTTPFilter{router}, MaxStreamDuration: 3 * time.Second},
		},
		{
			name: "xdstp name canonicalised",
			give: listener(t, "xdstp://a/envoy.config.listener.v3.Listener/l?b=1&a=2", hcm(t, "r")),
			want: &Listener{Name: "xdstp://a/envoy.config.listener.v3.Listener/l?a=2&b=1", RouteConfigName: "r", HTTPFilters: []HTTPFilter{router}},
		},
		{
			// inline route_config validated as RDS.
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
			// TypedStruct (xds and udpa) resolved to the inner type;
			// an optional filter without config is dropped.
			name: "filter chain",
			give: listener(t, "l", hcm(t, "r", withFilters(
				fault,
				xdsTS,
				udpaTS,
				&v3httppb.HttpFilter{Name: "opt", IsOptional: true},
				func() *v3httppb.HttpFilter {
					f := httpFilter(t, "opt2", &v3faultpb.HTTPFault{})
					f.IsOptional = true
					return f
				}(),
				routerFilter(t),
			))),
			want: &Listener{Name: "l", RouteConfigName: "r", HTTPFilters: []HTTPFilter{
				{Name: "fault", TypeURL: faultTypeURL, Config: fault.GetTypedConfig()},
				{Name: "ts", TypeURL: faultTypeURL, Config: xdsTS.GetTypedConfig()},
				{Name: "uts", TypeURL: faultTypeURL, Config: udpaTS.GetTypedConfig()},
				{Name: "opt2", TypeURL: faultTypeURL, Config: mustAny(t, &v3faultpb.HTTPFault{}), Optional: true},
				router,
			}},
		},
		{
			name: "router last after a dropped optional filter",
			give: listener(t, "l", hcm(t, "r", withFilters(routerFilter(t), &v3httppb.HttpFilter{Name: "opt", IsOptional: true}))),
			want: &Listener{Name: "l", RouteConfigName: "r", HTTPFilters: []HTTPFilter{router}},
		},

		// Invalid resources: per-resource errors.
		{
			name:    "server-side listener",
			give:    &v3listenerpb.Listener{Name: "l", Address: socketAddr("0.0.0.0", 80)},
			wantErr: "api_listener: missing",
		},
		{
			name:    "api listener of the wrong type",
			give:    listener(t, "l", &v3routerpb.Router{}),
			wantErr: "api_listener.api_listener: type URL",
		},
		{
			name: "api listener missing",
			give: &v3listenerpb.Listener{Name: "l", ApiListener: &v3listenerpb.ApiListener{}},
			// An absent Any has type URL "".
			wantErr: `api_listener.api_listener: type URL ""`,
		},
		{
			name: "undecodable hcm",
			give: &v3listenerpb.Listener{Name: "l", ApiListener: &v3listenerpb.ApiListener{ApiListener: &anypb.Any{
				TypeUrl: hcmTypeURL, Value: []byte{0xff, 0xff},
			}}},
			wantErr: "api_listener.api_listener: decoding HttpConnectionManager",
		},
		{
			name:    "xff_num_trusted_hops set",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.XffNumTrustedHops = 1 })),
			wantErr: "api_listener.api_listener.xff_num_trusted_hops: must be 0",
		},
		{
			name: "original ip detection extensions set",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.OriginalIpDetectionExtensions = []*v3corepb.TypedExtensionConfig{{Name: "x"}}
			})),
			wantErr: "api_listener.api_listener.original_ip_detection_extensions: must be empty",
		},
		{
			name:    "rds config source path",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.GetRds().ConfigSource = pathSource() })),
			wantErr: "api_listener.api_listener.rds.config_source: config source must be ads or self",
		},
		{
			name:    "rds config source missing",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.GetRds().ConfigSource = nil })),
			wantErr: "api_listener.api_listener.rds.config_source: missing",
		},
		{
			name:    "rds empty route config name",
			give:    listener(t, "l", hcm(t, "")),
			wantErr: "api_listener.api_listener.rds.route_config_name: empty",
		},
		{
			name: "scoped routes",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.RouteSpecifier = &v3httppb.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &v3httppb.ScopedRoutes{}}
			})),
			wantErr: "api_listener.api_listener.scoped_routes: not supported",
		},
		{
			name:    "no route specifier",
			give:    listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) { h.RouteSpecifier = nil })),
			wantErr: "api_listener.api_listener: no route specifier",
		},
		{
			name: "invalid inline route config",
			give: listener(t, "l", hcm(t, "", func(h *v3httppb.HttpConnectionManager) {
				h.RouteSpecifier = &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig("inline",
					vhost("v", &v3routepb.Route{Action: &v3routepb.Route_Route{}}))}
			})),
			wantErr: "api_listener.api_listener.route_config.virtual_hosts[0].routes[0].match: missing",
		},
		{
			name:    "no filters",
			give:    listener(t, "l", hcm(t, "r", withFilters())),
			wantErr: "api_listener.api_listener.http_filters: empty",
		},
		{
			name:    "only optional filters without config",
			give:    listener(t, "l", hcm(t, "r", withFilters(&v3httppb.HttpFilter{Name: "opt", IsOptional: true}))),
			wantErr: "api_listener.api_listener.http_filters: empty",
		},
		{
			name:    "filter without name",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "", &v3faultpb.HTTPFault{}), routerFilter(t)))),
			wantErr: "api_listener.api_listener.http_filters[0].name: empty",
		},
		{
			name:    "duplicate filter names",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "router", &v3faultpb.HTTPFault{}), routerFilter(t)))),
			wantErr: `api_listener.api_listener.http_filters[1].name: duplicate filter name "router"`,
		},
		{
			// gRFC A39: a terminal filter before the last → error.
			name:    "router not last",
			give:    listener(t, "l", hcm(t, "r", withFilters(routerFilter(t), fault))),
			wantErr: `api_listener.api_listener.http_filters[0]: router filter "router" is not the last filter`,
		},
		{
			name:    "two routers",
			give:    listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "r1", &v3routerpb.Router{}), routerFilter(t)))),
			wantErr: `http_filters[0]: router filter "r1" is not the last filter`,
		},
		{
			// gRFC A39: last filter not terminal → error.
			name:    "last filter not the router",
			give:    listener(t, "l", hcm(t, "r", withFilters(fault))),
			wantErr: `api_listener.api_listener.http_filters[0]: last filter "fault" has type`,
		},
		{
			name:    "filter without config",
			give:    listener(t, "l", hcm(t, "r", withFilters(&v3httppb.HttpFilter{Name: "f"}, routerFilter(t)))),
			wantErr: "api_listener.api_listener.http_filters[0].typed_config: missing",
		},
		{
			name: "typed struct without type url",
			give: listener(t, "l", hcm(t, "r", withFilters(
				&v3httppb.HttpFilter{Name: "ts", ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &v3xdstypepb.TypedStruct{})}},
				routerFilter(t),
			))),
			wantErr: "api_listener.api_listener.http_filters[0].typed_config: TypedStruct without a type_url",
		},
		{
			name: "negative max stream duration",
			give: listener(t, "l", hcm(t, "r", func(h *v3httppb.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &v3corepb.HttpProtocolOptions{MaxStreamDuration: durationpb.New(-time.Second)}
			})),
			wantErr: "api_listener.api_listener.common_http_protocol_options.max_stream_duration: negative duration",
		},
	}
	return cases
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
