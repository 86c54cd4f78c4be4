// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"testing"

	"github.com/proxyless/xds/resources"
)

// TestMatchFoldsASCIIOnly checks that case_sensitive false (paths) and
// ignore_case (header matchers) ignore ASCII case only, as gRPC C++ does:
// the Kelvin sign (U+212A), which Unicode folds to 'k', does not match
// 'k', in a pattern or in the RPC.
func TestMatchFoldsASCIIOnly(t *testing.T) {
	const kelvin = "\u212a"
	path := func(kind resources.PathKind, v string) Match {
		m := &resources.RouteMatch{PathKind: kind, Prefix: v, Path: v}
		return Compile(m, nil)
	}
	paths := []struct {
		name string
		m    Match
		path string
		want bool
	}{
		{"prefix, ASCII case", path(resources.PathKindPrefix, "/PKG.svc/"), "/pkg.Svc/M", true},
		{"prefix, Kelvin in the RPC", path(resources.PathKindPrefix, "/k"), "/" + kelvin + "x", false},
		{"prefix, Kelvin in the pattern", path(resources.PathKindPrefix, "/"+kelvin), "/kx", false},
		{"prefix, Kelvin in both", path(resources.PathKindPrefix, "/"+kelvin), "/" + kelvin + "x", true},
		{"path, ASCII case", path(resources.PathKindPath, "/Pkg.Svc/Method"), "/pkg.svc/METHOD", true},
		{"path, Kelvin", path(resources.PathKindPath, "/pkg.Svc/Ok"), "/pkg.Svc/O" + kelvin, false},
	}
	for _, tt := range paths {
		if got := tt.m.MatchPath(tt.path); got != tt.want {
			t.Errorf("%s: MatchPath(%q) = %v; want %v", tt.name, tt.path, got, tt.want)
		}
	}
	headers := []struct {
		name string
		kind resources.HeaderMatchKind
		v    string // the matcher's value
		got  string // the header's
		want bool
	}{
		{"exact, ASCII case", resources.HeaderMatchExact, "AbC", "abc", true},
		{"exact, Kelvin", resources.HeaderMatchExact, "k", kelvin, false},
		{"prefix, Kelvin", resources.HeaderMatchPrefix, "k", kelvin + "x", false},
		{"suffix, Kelvin", resources.HeaderMatchSuffix, "K", "x" + kelvin, false},
		{"contains, ASCII case", resources.HeaderMatchContains, "B", "abc", true},
		{"contains, Kelvin", resources.HeaderMatchContains, "ak", "xa" + kelvin, false},
	}
	for _, tt := range headers {
		hm := &resources.HeaderMatcher{Name: "x", Kind: tt.kind, Value: tt.v, IgnoreCase: true}
		if got := MatchHeaderValue(hm, tt.got, true); got != tt.want {
			t.Errorf("%s: MatchHeaderValue(%q) = %v; want %v", tt.name, tt.got, got, tt.want)
		}
	}
}
