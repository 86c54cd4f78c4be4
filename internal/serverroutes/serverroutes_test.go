// SPDX-License-Identifier: Apache-2.0

package serverroutes

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// TestTable_Route checks the routing of a request by authority, path and
// headers (here an HTTP request's), the action of the route found, and
// what Problems reports.
func TestTable_Route(t *testing.T) {
	nf := resources.RouteAction{Kind: resources.RouteActionNonForwarding}
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{
		{Name: "api", Domains: []string{"api.example"}, Routes: []resources.Route{
			{Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/v1/", CaseSensitive: true, Headers: []resources.HeaderMatcher{
				{Name: ":method", Kind: resources.HeaderMatchExact, Value: "GET"},
			}}, Action: nf},
			{Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/", CaseSensitive: true}, Action: resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: "c"}},
		}},
	}}
	tb := Build(nil, rc, nil)
	if tb.Err() != nil || tb.RouteConfigName() != "rc" {
		t.Fatalf("Build: err %v, name %q", tb.Err(), tb.RouteConfigName())
	}
	route := func(authority, method, path string) (*resources.VirtualHost, *Route, error) {
		return tb.Route(authority, path, &routing.Headers{Source: &routing.HTTPHeaders{Authority: authority, Method: method, Path: path, Fields: http.Header{}}})
	}
	if vh, r, err := route("api.example", "GET", "/v1/x"); err != nil || vh.Name != "api" || r == nil || r.Index != 0 || !r.NonForwarding() || r.Enforcing() {
		t.Errorf("GET /v1/x: %v, %+v, %v; want route 0, non-forwarding, no RBAC", vh, r, err)
	}
	if _, r, err := route("api.example", "POST", "/v1/x"); err != nil || r == nil || r.Index != 1 || r.NonForwarding() {
		t.Errorf("POST /v1/x: %+v, %v; want route 1, forwarding", r, err)
	}
	if vh, _, err := route("other.example", "GET", "/"); err == nil || vh != nil {
		t.Errorf("another authority: %v, %v; want no virtual host", vh, err)
	}
	if p := tb.Problems(); !strings.Contains(p, "1 routes whose action is not non_forwarding_action") {
		t.Errorf("Problems() = %q, want the forwarding route counted", p)
	}
	boom := errors.New("boom")
	if e := Error(boom); !errors.Is(e.Err(), boom) || e.Problems() != "boom" || e.RouteConfigName() != "" {
		t.Errorf("Error(boom): Err %v, Problems %q, name %q", e.Err(), e.Problems(), e.RouteConfigName())
	}
}
