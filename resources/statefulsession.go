// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3statefulsessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	v3cookiepb "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
)

// The stateful session filter (gRFC A55, A60): its config, its per-route
// override, and the one session state it may hold.
const (
	statefulSessionTypeURL         = "type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession"
	statefulSessionPerRouteTypeURL = "type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute"
	cookieSessionStateTypeURL      = "type.googleapis.com/envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState"
)

// statefulSessionImpl is the stateful session filter, which gRPC C++ runs
// on clients (grpc-go does not know it, and rejects a Listener that
// requires it).
var statefulSessionImpl = &httpFilterImpl{
	client: true,
	parse: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		cs, err := statefulSession(cfg, typedStruct)
		return filterConfig{session: cs}, err
	},
	parseOverride: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		cs, err := statefulSession(cfg, typedStruct)
		return filterConfig{session: cs}, err
	},
}

// CookieSession is the session state of a stateful session filter (gRFC
// A55): the cookie that names the endpoint (and, gRFC A60, the cluster)
// of a session.
type CookieSession struct {
	// Name is the cookie's name, never empty.
	Name string
	// Path is the cookie's path: only RPCs whose path it matches (RFC
	// 6265 section 5.1.4) have sessions. "" for every path.
	Path string
	// TTL is the cookie's time to live (its Max-Age), ≥ 0; 0 for none. It
	// is not enforced by gRPC.
	TTL time.Duration
}

// StatefulSession returns the session state of a stateful session filter
// config (StatefulSession) or per-route override (StatefulSessionPerRoute),
// as validated in a Listener or a RouteConfiguration:
// nil when it keeps no session (no session_state, or an override with
// disabled set). It returns an error for any other config, or an invalid
// one. The filters and overrides of decoded resources hold it already
// (HTTPFilter.Session, FilterOverride.Session).
func StatefulSession(cfg *anypb.Any) (*CookieSession, error) {
	return statefulSession(cfg, false)
}

func statefulSession(cfg *anypb.Any, typedStruct bool) (*CookieSession, error) {
	var m *v3statefulsessionpb.StatefulSession
	switch cfg.GetTypeUrl() {
	case statefulSessionTypeURL:
		m = &v3statefulsessionpb.StatefulSession{}
		if err := unmarshalFilterConfig(cfg, typedStruct, m); err != nil {
			return nil, err
		}
	case statefulSessionPerRouteTypeURL:
		o := &v3statefulsessionpb.StatefulSessionPerRoute{}
		if err := unmarshalFilterConfig(cfg, typedStruct, o); err != nil {
			return nil, err
		}
		if o.GetDisabled() {
			return nil, nil
		}
		cs, err := cookieSession(o.GetStatefulSession())
		if err != nil {
			return nil, withFieldPrefix("stateful_session", err)
		}
		return cs, nil
	default:
		if typedStruct {
			return nil, invalid("", "a stateful session config must be given as the message, not in a TypedStruct")
		}
		return nil, invalid("", "type URL %q, want a StatefulSession or StatefulSessionPerRoute", cfg.GetTypeUrl())
	}
	return cookieSession(m)
}

// cookieSession validates a StatefulSession's session_state (gRFC A55):
// none keeps no session; else a CookieBasedSessionState whose cookie has
// a name and a ttl ≥ 0. Error fields are relative to the StatefulSession.
func cookieSession(m *v3statefulsessionpb.StatefulSession) (*CookieSession, error) {
	ss := m.GetSessionState()
	if ss == nil {
		return nil, nil
	}
	tc := ss.GetTypedConfig()
	if tc.GetTypeUrl() != cookieSessionStateTypeURL {
		return nil, invalid("session_state.typed_config", "unsupported session state type %q, want %s", tc.GetTypeUrl(), cookieSessionStateTypeURL)
	}
	c := &v3cookiepb.CookieBasedSessionState{}
	if err := proto.Unmarshal(tc.GetValue(), c); err != nil {
		return nil, invalid("session_state.typed_config", "decoding CookieBasedSessionState: %w", err)
	}
	const f = "session_state.typed_config.cookie."
	out := &CookieSession{Name: c.GetCookie().GetName(), Path: c.GetCookie().GetPath()}
	if out.Name == "" {
		return nil, invalid(f+"name", "empty")
	}
	if ttl := c.GetCookie().GetTtl(); ttl != nil {
		d, err := duration(f+"ttl", ttl) // rejects negative durations
		if err != nil {
			return nil, err
		}
		out.TTL = d
	}
	return out, nil
}

// HealthStatusSet is a set of health statuses. The zero value is the
// default of override_host_status: UNKNOWN and HEALTHY (gRFC A55).
type HealthStatusSet uint8

// healthSetExplicit marks a set given explicitly, so that an explicit
// empty set differs from the zero value.
const healthSetExplicit HealthStatusSet = 1 << 7

// Contains reports whether h is in s.
func (s HealthStatusSet) Contains(h HealthStatus) bool {
	if s == 0 {
		return h == HealthStatusUnknown || h == HealthStatusHealthy
	}
	return h >= 0 && h < 7 && s&(1<<h) != 0
}

// overrideHostStatus reads common_lb_config.override_host_status (gRFC
// A55): UNKNOWN, HEALTHY and DRAINING count, other statuses are ignored;
// unset is UNKNOWN and HEALTHY.
func overrideHostStatus(c *v3clusterpb.Cluster) HealthStatusSet {
	set := c.GetCommonLbConfig().GetOverrideHostStatus()
	if set == nil {
		return 0
	}
	out := healthSetExplicit
	for _, h := range set.GetStatuses() {
		switch hs := HealthStatus(h); hs {
		case HealthStatusUnknown, HealthStatusHealthy, HealthStatusDraining:
			out |= 1 << hs
		}
	}
	return out
}
