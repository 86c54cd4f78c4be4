// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"regexp"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

func headersOf(kv ...string) *routing.Headers {
	return &routing.Headers{Ctx: metadata.NewOutgoingContext(context.Background(), metadata.Pairs(kv...))}
}

// TestResolver_Match_Headers checks every header matcher kind (gRFC A28),
// inversion, "-bin" headers and content-type.
func TestResolver_Match_Headers(t *testing.T) {
	re := regexp.MustCompile(`^(?:v[0-9]+)$`)
	tests := []struct {
		name string
		hm   resources.HeaderMatcher
		md   []string
		want bool
	}{
		{"exact", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "a"}, []string{"x", "a"}, true},
		{"exact other", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "a"}, []string{"x", "b"}, false},
		{"exact ignore case", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "AbC", IgnoreCase: true}, []string{"x", "abc"}, true},
		{"exact values joined", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "a,b"}, []string{"x", "a", "x", "b"}, true},
		{"exact absent", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "a"}, nil, false},
		{"exact absent inverted", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "a", Invert: true}, nil, false},
		{"exact inverted", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchExact, Value: "a", Invert: true}, []string{"x", "b"}, true},
		{"prefix", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPrefix, Value: "ab"}, []string{"x", "abc"}, true},
		{"prefix ignore case", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPrefix, Value: "AB", IgnoreCase: true}, []string{"x", "abc"}, true},
		{"prefix no", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPrefix, Value: "b"}, []string{"x", "abc"}, false},
		{"suffix", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchSuffix, Value: "bc"}, []string{"x", "abc"}, true},
		{"suffix ignore case", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchSuffix, Value: "BC", IgnoreCase: true}, []string{"x", "abc"}, true},
		{"contains", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchContains, Value: "b"}, []string{"x", "abc"}, true},
		{"contains ignore case", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchContains, Value: "B", IgnoreCase: true}, []string{"x", "abc"}, true},
		{"contains no", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchContains, Value: "d"}, []string{"x", "abc"}, false},
		{"regex", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchSafeRegex, Regex: re}, []string{"x", "v12"}, true},
		{"regex whole value", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchSafeRegex, Regex: re}, []string{"x", "v12x"}, false},
		{"range in", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchRange, RangeStart: -5, RangeEnd: 10}, []string{"x", "9"}, true},
		{"range end excluded", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchRange, RangeStart: -5, RangeEnd: 10}, []string{"x", "10"}, false},
		{"range not a number", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchRange, RangeStart: -5, RangeEnd: 10}, []string{"x", "1a"}, false},
		{"present", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPresent, Present: true}, []string{"x", ""}, true},
		{"present absent", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPresent, Present: true}, nil, false},
		{"present false absent", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPresent, Present: false}, nil, true},
		{"present inverted absent", resources.HeaderMatcher{Name: "x", Kind: resources.HeaderMatchPresent, Present: true, Invert: true}, nil, true},
		{"binary header ignored", resources.HeaderMatcher{Name: "x-bin", Kind: resources.HeaderMatchPresent, Present: true}, []string{"x-bin", "a"}, false},
		{"content-type", resources.HeaderMatcher{Name: "content-type", Kind: resources.HeaderMatchExact, Value: "application/grpc"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := routing.MatchHeader(&tt.hm, headersOf(tt.md...)); got != tt.want {
				t.Errorf("routing.MatchHeader(%+v) with %v = %v; want %v", tt.hm, tt.md, got, tt.want)
			}
		})
	}
}

// TestResolver_Match_Path checks path matching: prefix, path, safe_regex,
// case sensitivity, and the runtime fraction.
func TestResolver_Match_Path(t *testing.T) {
	const path = "/pkg.Svc/Method"
	zero, all := uint32(0), uint32(1_000_000)
	tests := []struct {
		name string
		m    resources.RouteMatch
		want bool
	}{
		{"prefix", resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/pkg.Svc/", CaseSensitive: true}, true},
		{"prefix empty", resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true}, true},
		{"prefix case", resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/PKG.svc/", CaseSensitive: true}, false},
		{"prefix ignore case", resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/PKG.svc/"}, true},
		{"path", resources.RouteMatch{PathKind: resources.PathKindPath, Path: path, CaseSensitive: true}, true},
		{"path other", resources.RouteMatch{PathKind: resources.PathKindPath, Path: path + "2", CaseSensitive: true}, false},
		{"path ignore case", resources.RouteMatch{PathKind: resources.PathKindPath, Path: "/PKG.SVC/METHOD"}, true},
		{"regex", resources.RouteMatch{PathKind: resources.PathKindSafeRegex, Regex: regexp.MustCompile(`^(?:/pkg\.Svc/M.*)$`)}, true},
		{"regex no", resources.RouteMatch{PathKind: resources.PathKindSafeRegex, Regex: regexp.MustCompile(`^(?:/pkg\.Svc/X.*)$`)}, false},
		{"fraction 0", resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, FractionPerMillion: &zero}, false},
		{"fraction all", resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, FractionPerMillion: &all}, true},
		{"headers all match", resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{
			{Name: "a", Kind: resources.HeaderMatchExact, Value: "1"}, {Name: "b", Kind: resources.HeaderMatchPresent, Present: true}}}, true},
		{"one header fails", resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{
			{Name: "a", Kind: resources.HeaderMatchExact, Value: "1"}, {Name: "c", Kind: resources.HeaderMatchPresent, Present: true}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := routing.Compile(&tt.m, nil)
			if got := m.Matches(path, headersOf("a", "1", "b", "2")); got != tt.want {
				t.Errorf("matches(%q) = %v; want %v", path, got, tt.want)
			}
		})
	}
}

// TestResolver_Match_Fraction checks that a runtime fraction of 25 %
// matches about a quarter of RPCs.
func TestResolver_Match_Fraction(t *testing.T) {
	q := uint32(250_000)
	m := routing.Compile(&resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, FractionPerMillion: &q}, nil)
	const n = 20000
	hits := 0
	for range n {
		if m.Matches("/a/b", headersOf()) {
			hits++
		}
	}
	if share := float64(hits) / n; share < 0.23 || share > 0.27 {
		t.Errorf("fraction 25%%: %.3f of RPCs matched", share)
	}
}

// TestResolver_RequestHash checks the hash of an RPC (gRFC A42): header
// policies hash the joined values, a missing header is skipped, the
// channel ID policy, terminal policies, and no hash at all.
func TestResolver_RequestHash(t *testing.T) {
	p := &picker{channelID: 42}
	h := headersOf("user", "alice")
	hdr := resources.HashPolicy{Kind: resources.HashPolicyHeader, HeaderName: "User"}
	missing := resources.HashPolicy{Kind: resources.HashPolicyHeader, HeaderName: "missing"}
	chID := resources.HashPolicy{Kind: resources.HashPolicyChannelID}

	h1, ok1 := p.requestHash(&route{hash: []resources.HashPolicy{hdr}}, h)
	h2, ok2 := p.requestHash(&route{hash: []resources.HashPolicy{missing, hdr}}, headersOf("user", "alice"))
	if !ok1 || !ok2 || h1 != h2 {
		t.Errorf("header hash = %d,%v and with a missing header first %d,%v; want equal", h1, ok1, h2, ok2)
	}
	if h3, _ := p.requestHash(&route{hash: []resources.HashPolicy{hdr}}, headersOf("user", "bob")); h3 == h1 {
		t.Errorf("alice and bob hash alike: %d", h3)
	}
	if got, ok := p.requestHash(&route{hash: []resources.HashPolicy{chID}}, h); !ok || got != 42 {
		t.Errorf("channel ID hash = %d,%v; want 42", got, ok)
	}
	term := hdr
	term.Terminal = true
	if got, _ := p.requestHash(&route{hash: []resources.HashPolicy{term, chID}}, h); got != h1 {
		t.Errorf("terminal header policy then channel ID = %d; want the header hash %d", got, h1)
	}
	if got, _ := p.requestHash(&route{hash: []resources.HashPolicy{hdr, chID}}, h); got == h1 {
		t.Errorf("header then channel ID = the header hash alone")
	}
	if _, ok := p.requestHash(&route{hash: []resources.HashPolicy{missing}}, h); ok {
		t.Errorf("only a missing header: got a hash; want none (random)")
	}
}

// TestResolver_Match_SharedMatchers checks that matchers shared by routes
// (evaluated once per RPC, rarest first) give the same route as matching
// each route in order.
func TestResolver_Match_SharedMatchers(t *testing.T) {
	exact := func(name, v string) resources.HeaderMatcher {
		return resources.HeaderMatcher{Name: name, Kind: resources.HeaderMatchExact, Value: v}
	}
	matches := []resources.RouteMatch{
		{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{exact("x-a", "1"), exact("x-b", "2")}},
		{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{exact("x-a", "1"), exact("x-b", "3")}},
		{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{exact("x-b", "3")}},
		{PathKind: resources.PathKindPrefix, CaseSensitive: true},
	}
	x := routing.NewIndex()
	routes := make([]route, len(matches))
	for i := range matches {
		routes[i].match = routing.Compile(&matches[i], x)
	}
	orderRoutes(routes)
	first := func(h *routing.Headers) int {
		for i := range routes {
			if routes[i].match.Matches("/a/b", h) {
				return i
			}
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
