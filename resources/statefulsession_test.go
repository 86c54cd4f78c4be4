// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3statefulsessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	v3cookiepb "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	v3httpcookiepb "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
)

// cookieFilter returns a StatefulSession config with a cookie session
// state of name, path and ttl (nil: unset).
func cookieFilter(t testing.TB, name, path string, ttl *durationpb.Duration) *v3statefulsessionpb.StatefulSession {
	return &v3statefulsessionpb.StatefulSession{SessionState: &v3corepb.TypedExtensionConfig{
		Name:        "envoy.http.stateful_session.cookie",
		TypedConfig: mustAny(t, &v3cookiepb.CookieBasedSessionState{Cookie: &v3httpcookiepb.Cookie{Name: name, Path: path, Ttl: ttl}}),
	}}
}

// TestStatefulSession checks the validation of the stateful session
// filter (gRFC A55) in a Listener and in typed_per_filter_config, and
// what StatefulSession returns of it.
func TestStatefulSession(t *testing.T) {
	tests := []struct {
		name    string
		cfg     proto.Message
		want    *CookieSession
		wantErr string
	}{
		{"cookie", cookieFilter(t, "session", "/pkg.Svc", durationpb.New(2*time.Minute)), &CookieSession{Name: "session", Path: "/pkg.Svc", TTL: 2 * time.Minute}, ""},
		{"no session state", &v3statefulsessionpb.StatefulSession{}, nil, ""},
		{"override, disabled", &v3statefulsessionpb.StatefulSessionPerRoute{Override: &v3statefulsessionpb.StatefulSessionPerRoute_Disabled{Disabled: true}}, nil, ""},
		{"override, cookie", &v3statefulsessionpb.StatefulSessionPerRoute{Override: &v3statefulsessionpb.StatefulSessionPerRoute_StatefulSession{StatefulSession: cookieFilter(t, "s", "", nil)}}, &CookieSession{Name: "s"}, ""},
		{"empty cookie name", cookieFilter(t, "", "", nil), nil, "session_state.typed_config.cookie.name: empty"},
		{"negative ttl", cookieFilter(t, "s", "", durationpb.New(-time.Second)), nil, "session_state.typed_config.cookie.ttl: negative duration"},
		{"override, empty cookie name", &v3statefulsessionpb.StatefulSessionPerRoute{Override: &v3statefulsessionpb.StatefulSessionPerRoute_StatefulSession{StatefulSession: cookieFilter(t, "", "", nil)}}, nil, "stateful_session.session_state.typed_config.cookie.name: empty"},
		{"other session state", &v3statefulsessionpb.StatefulSession{SessionState: &v3corepb.TypedExtensionConfig{Name: "h", TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState"}}},
			nil, "session_state.typed_config: unsupported session state type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StatefulSession(mustAny(t, tt.cfg))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("StatefulSession() = %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
			} else if err != nil || (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Fatalf("StatefulSession() = %+v, %v; want %+v", got, err, tt.want)
			}
			// In a Listener (the override types only as overrides).
			if _, isOverride := tt.cfg.(*v3statefulsessionpb.StatefulSessionPerRoute); !isOverride {
				l := listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "session", tt.cfg), routerFilter(t))))
				_, lis, err := ListenerType.DecodeTyped(mustAny(t, l))
				if tt.wantErr == "" && err != nil {
					t.Errorf("Listener with the filter: %v; want valid (gRPC C++ runs the filter)", err)
				}
				if err == nil && !cmp.Equal(lis.HTTPFilters[0].Session, tt.want) {
					t.Errorf("Listener with the filter: HTTPFilter.Session = %+v; want %+v", lis.HTTPFilters[0].Session, tt.want)
				}
				if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Errorf("Listener with the filter: %v; want an error containing %q", err, tt.wantErr)
				}
			}
			// As a route's override.
			rt := &v3routepb.Route{
				Match:                &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
				Action:               &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}}},
				TypedPerFilterConfig: map[string]*anypb.Any{"session": mustAny(t, tt.cfg)},
			}
			rc := &v3routepb.RouteConfiguration{Name: "r", VirtualHosts: []*v3routepb.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []*v3routepb.Route{rt}}}}
			_, got2, err := RouteConfigType.DecodeTyped(mustAny(t, rc))
			if tt.wantErr == "" && err != nil {
				t.Errorf("override: %v; want valid", err)
			}
			if err == nil {
				if o := got2.VirtualHosts[0].Routes[0].FilterOverrides["session"]; !cmp.Equal(o.Session, tt.want) {
					t.Errorf("override: FilterOverride.Session = %+v; want %+v", o.Session, tt.want)
				}
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("override: %v; want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestCluster_OverrideHostStatus checks common_lb_config.override_host_status
// (gRFC A55): UNKNOWN and HEALTHY when unset; UNKNOWN, HEALTHY and
// DRAINING kept, other statuses ignored; an empty set is empty.
func TestCluster_OverrideHostStatus(t *testing.T) {
	statuses := func(hs ...v3corepb.HealthStatus) func(*v3clusterpb.Cluster) {
		return func(c *v3clusterpb.Cluster) {
			c.CommonLbConfig = &v3clusterpb.Cluster_CommonLbConfig{OverrideHostStatus: &v3corepb.HealthStatusSet{Statuses: hs}}
		}
	}
	all := []HealthStatus{HealthStatusUnknown, HealthStatusHealthy, HealthStatusUnhealthy, HealthStatusDraining, HealthStatusTimeout, HealthStatusDegraded}
	tests := []struct {
		name string
		mod  func(*v3clusterpb.Cluster)
		want []HealthStatus
	}{
		{"unset", func(*v3clusterpb.Cluster) {}, []HealthStatus{HealthStatusUnknown, HealthStatusHealthy}},
		{"draining and others", statuses(v3corepb.HealthStatus_DRAINING, v3corepb.HealthStatus_UNHEALTHY, v3corepb.HealthStatus_HEALTHY, v3corepb.HealthStatus_DEGRADED), []HealthStatus{HealthStatusHealthy, HealthStatusDraining}},
		{"empty", statuses(), nil},
	}
	for _, tt := range tests {
		_, c, err := ClusterType.DecodeTyped(mustAny(t, edsCluster("c", "s", tt.mod)))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, h := range all {
			want := false
			for _, w := range tt.want {
				want = want || w == h
			}
			if got := c.OverrideHostStatus.Contains(h); got != want {
				t.Errorf("%s: Contains(%v) = %v; want %v", tt.name, h, got, want)
			}
		}
	}
}
