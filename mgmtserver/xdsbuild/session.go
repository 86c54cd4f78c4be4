// SPDX-License-Identifier: Apache-2.0

package xdsbuild

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3statefulsessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3cookiepb "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	v3httpcookiepb "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
)

// Builders for stateful session affinity (gRFC A55, A60): the stateful
// session HTTP filter with a cookie session state, its per-route
// override, and a Listener with an extra HTTP filter.

// CookieSessionFilter returns the HTTP filter "envoy.filters.http.stateful_session"
// whose session state is the cookie cookieName, for the RPC paths under
// path ("" for every path), with the time to live ttl (0 for none).
func CookieSessionFilter(cookieName, path string, ttl time.Duration) *v3httppb.HttpFilter {
	return &v3httppb.HttpFilter{
		Name:       "envoy.filters.http.stateful_session",
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: MarshalAny(cookieSession(cookieName, path, ttl))},
	}
}

func cookieSession(cookieName, path string, ttl time.Duration) *v3statefulsessionpb.StatefulSession {
	c := &v3httpcookiepb.Cookie{Name: cookieName, Path: path}
	if ttl != 0 {
		c.Ttl = durationpb.New(ttl)
	}
	return &v3statefulsessionpb.StatefulSession{SessionState: &v3corepb.TypedExtensionConfig{
		Name:        "envoy.http.stateful_session.cookie",
		TypedConfig: MarshalAny(&v3cookiepb.CookieBasedSessionState{Cookie: c}),
	}}
}

// SessionDisabled returns the per-route override (typed_per_filter_config
// value, under the filter's name) that turns the stateful session filter
// off for a virtual host or route.
func SessionDisabled() *anypb.Any {
	return MarshalAny(&v3statefulsessionpb.StatefulSessionPerRoute{Override: &v3statefulsessionpb.StatefulSessionPerRoute_Disabled{Disabled: true}})
}

// WithHTTPFilter returns l, a Listener of this package's builders, with
// the HTTP filter f first in its chain (before the router). It panics if l has no
// HttpConnectionManager (programmer error).
func WithHTTPFilter(l *v3listenerpb.Listener, f *v3httppb.HttpFilter) *v3listenerpb.Listener {
	hcm := &v3httppb.HttpConnectionManager{}
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		panic(fmt.Sprintf("xdsbuild: WithHTTPFilter: Listener %q has no HttpConnectionManager: %v", l.GetName(), err))
	}
	hcm.HttpFilters = append([]*v3httppb.HttpFilter{f}, hcm.HttpFilters...)
	l.ApiListener.ApiListener = MarshalAny(hcm)
	return l
}
