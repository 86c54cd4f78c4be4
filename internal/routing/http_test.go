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
