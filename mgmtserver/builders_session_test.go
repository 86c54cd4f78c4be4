// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestCookieSessionFilter_Valid checks that a Listener with
// CookieSessionFilter and a route with SessionDisabled pass gRPC's
// validation, and what the filter's session state is.
func TestCookieSessionFilter_Valid(t *testing.T) {
	l := testutil.WithHTTPFilter(testutil.Listener("svc", "route-svc"), testutil.CookieSessionFilter("session", "/pkg.Svc", time.Minute))
	if err := resources.Validate(testutil.MarshalAny(l)); err != nil {
		t.Fatalf("Listener with CookieSessionFilter: %v", err)
	}
	cs, err := resources.StatefulSession(testutil.CookieSessionFilter("session", "/pkg.Svc", time.Minute).GetTypedConfig())
	if err != nil || cs == nil || *cs != (resources.CookieSession{Name: "session", Path: "/pkg.Svc", TTL: time.Minute}) {
		t.Fatalf("StatefulSession = %+v, %v", cs, err)
	}
	rc := testutil.RouteConfig("route-svc", "svc", "cluster-svc")
	rc.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.stateful_session": testutil.SessionDisabled()}
	if err := resources.Validate(testutil.MarshalAny(rc)); err != nil {
		t.Fatalf("route with SessionDisabled: %v", err)
	}
	if cs, err := resources.StatefulSession(testutil.SessionDisabled()); err != nil || cs != nil {
		t.Fatalf("StatefulSession(SessionDisabled()) = %+v, %v; want no session", cs, err)
	}
}
