// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

func headersOf(kv ...string) *routing.Headers {
	return &routing.Headers{Ctx: metadata.NewOutgoingContext(context.Background(), metadata.Pairs(kv...))}
}

// TestResolver_RequestHash checks the hash of an RPC (gRFC A42): header
// policies hash the joined values, a missing header is skipped, the
// channel ID policy, terminal policies, and no hash at all.
func TestRoute_RequestHash(t *testing.T) {
	h := headersOf("user", "alice")
	hdr := resources.HashPolicy{Kind: resources.HashPolicyHeader, HeaderName: "User"}
	missing := resources.HashPolicy{Kind: resources.HashPolicyHeader, HeaderName: "missing"}
	chID := resources.HashPolicy{Kind: resources.HashPolicyChannelID}

	h1, ok1 := (&Route{HashPolicies: []resources.HashPolicy{hdr}}).RequestHash(h, 42)
	h2, ok2 := (&Route{HashPolicies: []resources.HashPolicy{missing, hdr}}).RequestHash(headersOf("user", "alice"), 42)
	if !ok1 || !ok2 || h1 != h2 {
		t.Errorf("header hash = %d,%v and with a missing header first %d,%v; want equal", h1, ok1, h2, ok2)
	}
	if h3, _ := (&Route{HashPolicies: []resources.HashPolicy{hdr}}).RequestHash(headersOf("user", "bob"), 42); h3 == h1 {
		t.Errorf("alice and bob hash alike: %d", h3)
	}
	if got, ok := (&Route{HashPolicies: []resources.HashPolicy{chID}}).RequestHash(h, 42); !ok || got != 42 {
		t.Errorf("channel ID hash = %d,%v; want 42", got, ok)
	}
	term := hdr
	term.Terminal = true
	if got, _ := (&Route{HashPolicies: []resources.HashPolicy{term, chID}}).RequestHash(h, 42); got != h1 {
		t.Errorf("terminal header policy then channel ID = %d; want the header hash %d", got, h1)
	}
	if got, _ := (&Route{HashPolicies: []resources.HashPolicy{hdr, chID}}).RequestHash(h, 42); got == h1 {
		t.Errorf("header then channel ID = the header hash alone")
	}
	if _, ok := (&Route{HashPolicies: []resources.HashPolicy{missing}}).RequestHash(h, 42); ok {
		t.Errorf("only a missing header: got a hash; want none (random)")
	}
}

// TestResolver_Match_SharedMatchers checks that matchers shared by routes
// (evaluated once per RPC, rarest first) give the same route as matching
// each route in order.
func TestConfig_SharedMatchers(t *testing.T) {
	exact := func(name, v string) resources.HeaderMatcher {
		return resources.HeaderMatcher{Name: name, Kind: resources.HeaderMatchExact, Value: v}
	}
	matches := []resources.RouteMatch{
		{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{exact("x-a", "1"), exact("x-b", "2")}},
		{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{exact("x-a", "1"), exact("x-b", "3")}},
		{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{exact("x-b", "3")}},
		{PathKind: resources.PathKindPrefix, CaseSensitive: true},
	}
	vh := &resources.VirtualHost{Name: "vh", Domains: []string{"*"}}
	for _, m := range matches {
		vh.Routes = append(vh.Routes, resources.Route{Match: m, Action: resources.RouteAction{Kind: resources.RouteActionNonForwarding}})
	}
	cfg, err := Build(Snapshot{VirtualHost: vh}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := func(h *routing.Headers) int {
		if rt := cfg.Route("/a/b", h); rt != nil {
			return rt.Index
		}
		return -1
	}
	for _, tt := range []struct {
		md   []string
		want int
	}{
		{[]string{"x-a", "1", "x-b", "2"}, 0},
		{[]string{"x-a", "1", "x-b", "3"}, 1},
		{[]string{"x-b", "3"}, 2},
		{[]string{"x-a", "1"}, 3},
	} {
		if got := first(headersOf(tt.md...)); got != tt.want {
			t.Errorf("headers %v matched route %d; want %d", tt.md, got, tt.want)
		}
	}
}
