// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyless/xds/resources"
)

// Unit tests of the header mutations (headers.go), against Envoy's
// router: HeaderParser::evaluateHeaders for one level, and the order of
// the levels of RouteEntryImplBase and WeightedClusterEntry.

func add(name, value string, a resources.HeaderAppendAction) resources.HeaderValueOption {
	return resources.HeaderValueOption{Name: name, Value: value, Action: a}
}

func reqLevel(remove []string, adds ...resources.HeaderValueOption) *resources.HeaderMutations {
	return &resources.HeaderMutations{RequestHeadersToRemove: remove, RequestHeadersToAdd: adds}
}

// apply applies levels' request mutations to an http.Header made of kv
// (name, value pairs) and returns it as a map of lowercase names.
func apply(levels []*resources.HeaderMutations, kv ...string) map[string][]string {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	ApplyRequestMutations(levels, h)
	out := map[string][]string{}
	for k, v := range h {
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

func hdrs(kv ...string) map[string][]string {
	out := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := http.CanonicalHeaderKey(kv[i])
		out[k] = append(out[k], kv[i+1])
	}
	return out
}

// TestApplyRequestMutations_OneLevel checks one level: removals before
// additions, every append_action with the header present and absent,
// keep_empty_value, and the order Envoy makes the additions in (decided
// on the headers the removals left, then overwrites, then appends).
func TestApplyRequestMutations_OneLevel(t *testing.T) {
	const (
		appendA    = resources.AppendIfExistsOrAdd
		ifAbsent   = resources.AddIfAbsent
		overwrite  = resources.OverwriteIfExistsOrAdd
		ifExisting = resources.OverwriteIfExists
	)
	empty := add("x-e", "", appendA)
	keptEmpty := empty
	keptEmpty.KeepEmptyValue = true
	for _, tc := range []struct {
		name  string
		level *resources.HeaderMutations
		in    []string
		want  map[string][]string
	}{
		{"append to present", reqLevel(nil, add("x-a", "2", appendA)), []string{"x-a", "1"}, hdrs("x-a", "1", "x-a", "2")},
		{"append to absent", reqLevel(nil, add("x-a", "2", appendA)), nil, hdrs("x-a", "2")},
		{"add if absent, present", reqLevel(nil, add("x-a", "2", ifAbsent)), []string{"x-a", "1"}, hdrs("x-a", "1")},
		{"add if absent, absent", reqLevel(nil, add("x-a", "2", ifAbsent)), nil, hdrs("x-a", "2")},
		{"overwrite or add, present twice", reqLevel(nil, add("x-a", "3", overwrite)), []string{"x-a", "1", "x-a", "2"}, hdrs("x-a", "3")},
		{"overwrite or add, absent", reqLevel(nil, add("x-a", "3", overwrite)), nil, hdrs("x-a", "3")},
		{"overwrite if exists, present", reqLevel(nil, add("x-a", "3", ifExisting)), []string{"x-a", "1"}, hdrs("x-a", "3")},
		{"overwrite if exists, absent", reqLevel(nil, add("x-a", "3", ifExisting)), nil, hdrs()},
		{"empty value dropped", reqLevel(nil, empty), nil, hdrs()},
		{"empty value kept", reqLevel(nil, keptEmpty), nil, hdrs("x-e", "")},
		{"remove then add", reqLevel([]string{"x-a", "x-b"}, add("x-a", "new", appendA)), []string{"x-a", "old", "x-b", "b", "x-c", "c"}, hdrs("x-a", "new", "x-c", "c")},
		// Removals come first: the header a removal took is absent for
		// the level's conditions.
		{"remove then add if absent", reqLevel([]string{"x-a"}, add("x-a", "new", ifAbsent)), []string{"x-a", "old"}, hdrs("x-a", "new")},
		{"remove then overwrite if exists", reqLevel([]string{"x-a"}, add("x-a", "new", ifExisting)), []string{"x-a", "old"}, hdrs()},
		// The conditions read the headers before any addition of the
		// level: both ADD_IF_ABSENT are made, and OVERWRITE_IF_EXISTS
		// does not see the header the level's overwrite adds.
		{"two add if absent", reqLevel(nil, add("x-a", "1", ifAbsent), add("x-a", "2", ifAbsent)), nil, hdrs("x-a", "1", "x-a", "2")},
		{"overwrite then overwrite if exists", reqLevel(nil, add("x-a", "1", overwrite), add("x-a", "2", ifExisting)), nil, hdrs("x-a", "1")},
		// Overwrites are made before appends, whatever their order.
		{"append then overwrite", reqLevel(nil, add("x-a", "a", appendA), add("x-a", "b", overwrite)), []string{"x-a", "0"}, hdrs("x-a", "b", "x-a", "a")},
		{"two overwrites: the last wins", reqLevel(nil, add("x-a", "1", overwrite), add("x-a", "2", overwrite)), nil, hdrs("x-a", "2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apply([]*resources.HeaderMutations{tc.level}, tc.in...)); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyRequestMutations_ManyAdditions checks a level of more than 64
// additions (the conditions are then kept in a slice).
func TestApplyRequestMutations_ManyAdditions(t *testing.T) {
	l := reqLevel(nil)
	want := hdrs()
	for i := range 70 {
		name := "x-" + strconv.Itoa(i)
		action := resources.AddIfAbsent
		if i%2 == 0 {
			action = resources.OverwriteIfExists // absent: not made
		} else {
			want[http.CanonicalHeaderKey(name)] = []string{"v"}
		}
		l.RequestHeadersToAdd = append(l.RequestHeadersToAdd, add(name, "v", action))
	}
	if diff := cmp.Diff(want, apply([]*resources.HeaderMutations{l})); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

// TestBuild_HeaderMutationLevels checks the levels Build gives a route and
// its targets, and their precedence: by default the least specific
// overwrite wins (Envoy applies weighted cluster, route, virtual host,
// RouteConfiguration); with most_specific_header_mutations_wins the
// route's, but the weighted cluster's still come first, as in Envoy, so
// the route overwrites them. Response mutations are gathered apart.
func TestBuild_HeaderMutationLevels(t *testing.T) {
	over := func(v string) *resources.HeaderMutations {
		return &resources.HeaderMutations{
			RequestHeadersToAdd:  []resources.HeaderValueOption{add("x-level", v, resources.OverwriteIfExistsOrAdd), add("x-all", v, resources.AppendIfExistsOrAdd)},
			ResponseHeadersToAdd: []resources.HeaderValueOption{add("x-resp", v, resources.AppendIfExistsOrAdd)},
		}
	}
	for _, tc := range []struct {
		mostSpecificWins bool
		wantLevel        string
		wantAll          []string
	}{
		{false, "rc", []string{"wc", "route", "vh", "rc"}},
		{true, "route", []string{"wc", "rc", "vh", "route"}},
	} {
		s := snap(ok(leaf("a", roundRobin)), ok(leaf("b", roundRobin)))
		s.RouteConfig.HeaderMutations = over("rc")
		s.RouteConfig.MostSpecificHeaderMutationsWins = tc.mostSpecificWins
		s.VirtualHost.HeaderMutations = over("vh")
		rt := &s.VirtualHost.Routes[0]
		rt.HeaderMutations = over("route")
		rt.Action.WeightedClusters[0].HeaderMutations = over("wc")
		cfg, err := Build(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := &cfg.Routes[0]
		req, resp := r.TargetOf("a").MutationsFor(r)
		got := apply(req)
		if g := got["X-Level"]; len(g) != 1 || g[0] != tc.wantLevel {
			t.Errorf("most_specific_header_mutations_wins %v: x-level = %q, want %q", tc.mostSpecificWins, g, tc.wantLevel)
		}
		if diff := cmp.Diff(tc.wantAll, got["X-All"]); diff != "" {
			t.Errorf("most_specific_header_mutations_wins %v: x-all, the order of the levels (-want +got):\n%s", tc.mostSpecificWins, diff)
		}
		h := http.Header{}
		ApplyResponseMutations(resp, h)
		if diff := cmp.Diff(tc.wantAll, h.Values("x-resp")); diff != "" {
			t.Errorf("most_specific_header_mutations_wins %v: response x-resp (-want +got):\n%s", tc.mostSpecificWins, diff)
		}
		// Cluster b has no level of its own: the route's chain; so has a
		// nil target.
		for name, tg := range map[string]*Target{"b": r.TargetOf("b"), "nil": nil} {
			req, _ := tg.MutationsFor(r)
			if diff := cmp.Diff(tc.wantAll[1:], apply(req)["X-All"]); diff != "" {
				t.Errorf("most_specific_header_mutations_wins %v: target %s: x-all (-want +got):\n%s", tc.mostSpecificWins, name, diff)
			}
		}
	}
}

// TestBuild_HeaderMutationsAdapted checks Options.HeaderMutations: each
// level is adapted once, and a level adapted to nil is left out; a route
// without mutations has none (and a request of it allocates nothing).
func TestBuild_HeaderMutationsAdapted(t *testing.T) {
	s := snap(ok(leaf("a", roundRobin)))
	s.RouteConfig.HeaderMutations = reqLevel(nil, add("x-rc", "1", resources.AppendIfExistsOrAdd))
	s.VirtualHost.HeaderMutations = reqLevel(nil, add("x-drop", "1", resources.AppendIfExistsOrAdd))
	calls := 0
	adapt := func(m *resources.HeaderMutations) *resources.HeaderMutations {
		calls++
		if m == s.VirtualHost.HeaderMutations {
			return nil
		}
		return m
	}
	cfg, err := Build(s, Options{HeaderMutations: adapt})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the adapter was called %d times; want 2 (the RouteConfiguration's and the virtual host's levels)", calls)
	}
	r := &cfg.Routes[0]
	req, resp := r.TargetOf("a").MutationsFor(r)
	if diff := cmp.Diff(hdrs("x-rc", "1"), apply(req)); diff != "" || resp != nil {
		t.Errorf("headers (-want +got):\n%s\nresponse levels %v, want none", diff, resp)
	}

	cfg, err = Build(snap(ok(leaf("a", roundRobin))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r = &cfg.Routes[0]
	req, resp = r.TargetOf("a").MutationsFor(r)
	if req != nil || resp != nil {
		t.Fatalf("no mutations configured: levels %v, %v; want none", req, resp)
	}
	h := http.Header{"X-A": {"1"}}
	if n := testing.AllocsPerRun(100, func() { ApplyRequestMutations(req, h) }); n != 0 {
		t.Errorf("applying no mutations: %v allocations; want 0", n)
	}
}
