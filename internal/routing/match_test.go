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

// mapSource is a HeaderSource of fixed headers.
type mapSource map[string]string

func (m mapSource) Header(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// TestHeaders_Source checks that the headers of a request that is not an
// RPC come from its Source alone: "-bin" headers are headers like any
// other, content-type is what the request says, each header is read once
// per request.
func TestHeaders_Source(t *testing.T) {
	reads := map[string]int{}
	src := countingSource{m: mapSource{"x-key-bin": "v", "content-type": "application/json", "x-a": "1"}, reads: reads}
	x := NewIndex()
	match := func(hm resources.HeaderMatcher) Match {
		return Compile(&resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true, Headers: []resources.HeaderMatcher{hm}}, x)
	}
	h := &Headers{Source: src}
	for _, tt := range []struct {
		hm   resources.HeaderMatcher
		want bool
	}{
		{resources.HeaderMatcher{Name: "x-key-bin", Kind: resources.HeaderMatchExact, Value: "v"}, true},
		{resources.HeaderMatcher{Name: "content-type", Kind: resources.HeaderMatchExact, Value: "application/json"}, true},
		{resources.HeaderMatcher{Name: "x-a", Kind: resources.HeaderMatchExact, Value: "1"}, true},
		{resources.HeaderMatcher{Name: "x-a", Kind: resources.HeaderMatchPrefix, Value: "1"}, true},
		{resources.HeaderMatcher{Name: "x-missing", Kind: resources.HeaderMatchPresent, Present: true}, false},
	} {
		m := match(tt.hm)
		if got := m.Matches("/p", h); got != tt.want {
			t.Errorf("%+v: Matches = %v; want %v", tt.hm, got, tt.want)
		}
	}
	if reads["x-a"] != 1 {
		t.Errorf("x-a read %d times; want once", reads["x-a"])
	}
}

type countingSource struct {
	m     mapSource
	reads map[string]int
}

func (c countingSource) Header(name string) (string, bool) {
	c.reads[name]++
	return c.m.Header(name)
}
