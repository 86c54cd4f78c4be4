// SPDX-License-Identifier: Apache-2.0

package xdsbuild_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/resources"
)

// TestCookieSessionFilter_Valid checks that a Listener with
// CookieSessionFilter and a route with SessionDisabled pass gRPC's
// validation, and what the filter's session state is.
func TestCookieSessionFilter_Valid(t *testing.T) {
	l := xdsbuild.WithHTTPFilter(xdsbuild.Listener("svc", "route-svc"), xdsbuild.CookieSessionFilter("session", "/pkg.Svc", time.Minute))
	if err := resources.Validate(xdsbuild.MarshalAny(l)); err != nil {
		t.Fatalf("Listener with CookieSessionFilter: %v", err)
	}
	cs, err := resources.StatefulSession(xdsbuild.CookieSessionFilter("session", "/pkg.Svc", time.Minute).GetTypedConfig())
	if err != nil || cs == nil || *cs != (resources.CookieSession{Name: "session", Path: "/pkg.Svc", TTL: time.Minute}) {
		t.Fatalf("StatefulSession = %+v, %v", cs, err)
	}
	rc := xdsbuild.RouteConfig("route-svc", "svc", "cluster-svc")
	rc.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.stateful_session": xdsbuild.SessionDisabled()}
	if err := resources.Validate(xdsbuild.MarshalAny(rc)); err != nil {
		t.Fatalf("route with SessionDisabled: %v", err)
	}
	if cs, err := resources.StatefulSession(xdsbuild.SessionDisabled()); err != nil || cs != nil {
		t.Fatalf("StatefulSession(SessionDisabled()) = %+v, %v; want no session", cs, err)
	}
}
