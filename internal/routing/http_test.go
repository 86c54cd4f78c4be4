// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"net/http"
	"testing"

	"github.com/proxyless/xds/resources"
)

// TestHTTPHeaders checks what route matching sees of an HTTP request:
// pseudo-headers, "host" as ":authority", repeated values joined, and the
// request's own content-type and -bin headers (the gRPC rules do not
// apply).
func TestHTTPHeaders(t *testing.T) {
	fields := http.Header{}
	fields.Add("X-Multi", "a")
	fields.Add("X-Multi", "b")
	fields.Set("Content-Type", "application/json")
	fields.Set("Id-Bin", "raw")
	h := &Headers{Source: &HTTPHeaders{Authority: "api.example:8080", Method: "GET", Path: "/p?q=1", Scheme: "https", Fields: fields}}
	for name, want := range map[string]string{
		":authority":   "api.example:8080",
		"host":         "api.example:8080",
		":method":      "GET",
		":path":        "/p?q=1",
		":scheme":      "https",
		"x-multi":      "a,b",
		"content-type": "application/json",
		"id-bin":       "raw",
	} {
		if got, ok := h.Get(name); !ok || got != want {
			t.Errorf("Get(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if v, ok := h.Get("x-absent"); ok {
		t.Errorf("Get(x-absent) = %q, present; want absent", v)
	}
	m := Compile(&resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/", CaseSensitive: true, Headers: []resources.HeaderMatcher{
		{Name: "content-type", Kind: resources.HeaderMatchExact, Value: "application/json"},
	}}, nil)
	if !m.Matches("/p", h) {
		t.Error("a content-type matcher on an HTTP request: no match, want the request's own content-type matched")
	}
}

// TestMatch_QueryParameters checks the query parameter matchers of HTTP
// routes, as Envoy applies them: to the first value of the
// parameter, presence alone without a string matcher, every matcher must
// match, and a request without a query matches none.
func TestMatch_QueryParameters(t *testing.T) {
	exact := func(name, v string) resources.QueryParameterMatcher {
		return resources.QueryParameterMatcher{Name: name, Value: resources.StringMatcher{Kind: resources.StringMatchExact, Value: v}}
	}
	present := resources.QueryParameterMatcher{Name: "debug"}
	for _, tc := range []struct {
		query    string
		matchers []resources.QueryParameterMatcher
		want     bool
	}{
		{"v=2", []resources.QueryParameterMatcher{exact("v", "2")}, true},
		{"v=3", []resources.QueryParameterMatcher{exact("v", "2")}, false},
		{"v=2&v=3", []resources.QueryParameterMatcher{exact("v", "3")}, false}, // the first value only
		{"v=a%20b", []resources.QueryParameterMatcher{exact("v", "a b")}, true},
		{"", []resources.QueryParameterMatcher{exact("v", "2")}, false},
		{"debug", []resources.QueryParameterMatcher{present}, true},
		{"debug=", []resources.QueryParameterMatcher{present}, true},
		{"x=1", []resources.QueryParameterMatcher{present}, false},
		{"debug&v=2", []resources.QueryParameterMatcher{present, exact("v", "2")}, true},
		{"debug&v=1", []resources.QueryParameterMatcher{present, exact("v", "2")}, false},
		{"V=2", []resources.QueryParameterMatcher{exact("v", "2")}, false}, // names are case-sensitive
	} {
		m := Compile(&resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/", CaseSensitive: true, QueryParameters: tc.matchers}, nil)
		h := &Headers{Source: &HTTPHeaders{Fields: http.Header{}}, RawQuery: tc.query}
		if got := m.Matches("/p", h); got != tc.want {
			t.Errorf("query %q, matchers %+v: Matches = %v, want %v", tc.query, tc.matchers, got, tc.want)
		}
	}
}
