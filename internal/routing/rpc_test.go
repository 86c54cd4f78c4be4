// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"context"
	"regexp"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/resources"
)

func headersOf(kv ...string) *Headers {
	return &Headers{Ctx: metadata.NewOutgoingContext(context.Background(), metadata.Pairs(kv...))}
}

// TestMatch_RPC_Headers checks every header matcher kind (gRFC A28),
// inversion, "-bin" headers and content-type.
func TestMatch_RPC_Headers(t *testing.T) {
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
			if got := MatchHeader(&tt.hm, headersOf(tt.md...)); got != tt.want {
				t.Errorf("MatchHeader(%+v) with %v = %v; want %v", tt.hm, tt.md, got, tt.want)
			}
		})
	}
}

// TestMatch_RPC_Path checks path matching: prefix, path, safe_regex,
// case sensitivity, and the runtime fraction.
func TestMatch_RPC_Path(t *testing.T) {
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
			m := Compile(&tt.m, nil)
			if got := m.Matches(path, headersOf("a", "1", "b", "2")); got != tt.want {
				t.Errorf("matches(%q) = %v; want %v", path, got, tt.want)
			}
		})
	}
}

// TestMatch_RPC_Fraction checks that a runtime fraction of 25 %
// matches about a quarter of RPCs.
func TestMatch_RPC_Fraction(t *testing.T) {
	q := uint32(250_000)
	m := Compile(&resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, FractionPerMillion: &q}, nil)
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
