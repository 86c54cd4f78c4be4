// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// verdictCase is one row of TestCheck: the common rules of, for
// every built-in type.
type verdictCase struct {
	rule    string
	name    string
	give    *anypb.Any
	want    Verdict // Value is only checked for being nil or not
	wantErr string  // substring of Verdict.Err; "" means valid
}

// checkCases returns the table of TestCheck; decoding cases of the
// individual types are in their own tables.
func checkCases(t testing.TB) []verdictCase {
	wrap := func(a *anypb.Any, name string) *anypb.Any {
		return mustAny(t, &v3discoverypb.Resource{Name: name, Version: "v", Ttl: durationpb.New(1), Resource: a})
	}
	cluster := mustAny(t, edsCluster("c", "s"))
	badCluster := mustAny(t, edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_MAGLEV }))
	type typed struct {
		typeURL, typeName string
		valid, noName     *anypb.Any
		nameOfValid       string
	}
	var cases []verdictCase
	for _, ty := range []typed{
		{ListenerTypeURL, "Listener", mustAny(t, listener(t, "l", hcm(t, "r"))), mustAny(t, listener(t, "", hcm(t, "r"))), "l"},
		{RouteConfigTypeURL, "RouteConfiguration", mustAny(t, routeConfig("r")), mustAny(t, routeConfig("")), "r"},
		{ClusterTypeURL, "Cluster", cluster, mustAny(t, edsCluster("", "s")), "c"},
		{EndpointsTypeURL, "ClusterLoadAssignment", mustAny(t, cla("e")), mustAny(t, cla("")), "e"},
	} {
		cases = append(cases,
			verdictCase{
				rule: "R-17.0",
				name: ty.typeName + " valid",
				give: ty.valid,
				want: Verdict{TypeURL: ty.typeURL, TypeName: ty.typeName, Name: ty.nameOfValid},
			},
			verdictCase{
				// the wrapper's name and ttl are ignored.
				rule: "R-17.0",
				name: ty.typeName + " in a Resource wrapper",
				give: wrap(ty.valid, "wrapper-name"),
				want: Verdict{TypeURL: ty.typeURL, TypeName: ty.typeName, Name: ty.nameOfValid},
			},
			verdictCase{
				// an empty resource name is a top-level error.
				rule:    "R-17.0",
				name:    ty.typeName + " without a name",
				give:    ty.noName,
				want:    Verdict{TypeURL: ty.typeURL, TypeName: ty.typeName},
				wantErr: "empty resource name",
			},
			verdictCase{
				// an undecodable resource is a top-level error.
				rule:    "R-17.0",
				name:    ty.typeName + " undecodable",
				give:    &anypb.Any{TypeUrl: ty.typeURL, Value: []byte{0x0a, 0x7f}},
				want:    Verdict{TypeURL: ty.typeURL, TypeName: ty.typeName},
				wantErr: "decoding " + ty.typeName,
			},
		)
	}
	return append(cases,
		verdictCase{
			rule:    "R-17.0",
			name:    "per-resource error",
			give:    badCluster,
			want:    Verdict{TypeURL: ClusterTypeURL, TypeName: "Cluster", Name: "c"},
			wantErr: "lb_policy: unsupported policy MAGLEV",
		},
		verdictCase{
			rule:    "R-17.0",
			name:    "per-resource error in a wrapper",
			give:    wrap(badCluster, "c"),
			want:    Verdict{TypeURL: ClusterTypeURL, TypeName: "Cluster", Name: "c"},
			wantErr: "lb_policy: unsupported policy MAGLEV",
		},
		verdictCase{
			// a heartbeat wrapper (no resource inside) NACKs, as in
			// grpc-go and gRPC C++.
			rule:    "R-17.0",
			name:    "heartbeat wrapper",
			give:    mustAny(t, &v3discoverypb.Resource{Name: "c", Version: "v"}),
			wantErr: `resource wrapper "c" has no resource`,
		},
		verdictCase{
			rule:    "R-17.0",
			name:    "undecodable wrapper",
			give:    &anypb.Any{TypeUrl: ResourceWrapperTypeURL, Value: []byte{0x0a}},
			wantErr: "decoding resource wrapper",
		},
		verdictCase{
			rule:    "R-17.0",
			name:    "unknown type",
			give:    mustAny(t, &v3discoverypb.DiscoveryRequest{}),
			want:    Verdict{TypeURL: "type.googleapis.com/envoy.service.discovery.v3.DiscoveryRequest"},
			wantErr: "unknown resource type",
		},
		verdictCase{
			// the type URL must match the type exactly.
			rule:    "R-17.0",
			name:    "type URL with another prefix",
			give:    &anypb.Any{TypeUrl: "example.com/envoy.config.cluster.v3.Cluster", Value: cluster.GetValue()},
			want:    Verdict{TypeURL: "example.com/envoy.config.cluster.v3.Cluster"},
			wantErr: "unknown resource type",
		},
	)
}

// TestCheck covers for every built-in type through the public
// offline API: Resource wrappers, type URLs, and which errors are
// top-level (no name) or per resource (a name).
func TestCheck(t *testing.T) {
	for _, tc := range checkCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.give)
			if got.TypeURL != tc.want.TypeURL || got.TypeName != tc.want.TypeName || got.Name != tc.want.Name {
				t.Errorf("Check() = {%q, %q, %q}, want {%q, %q, %q}", got.TypeURL, got.TypeName, got.Name, tc.want.TypeURL, tc.want.TypeName, tc.want.Name)
			}
			switch {
			case tc.wantErr == "" && got.Err != nil:
				t.Fatalf("Check().Err = %v, want nil", got.Err)
			case tc.wantErr == "" && got.Value == nil:
				t.Fatalf("Check().Value = nil for a valid resource")
			case tc.wantErr != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.wantErr)):
				t.Fatalf("Check().Err = %v, want an error containing %q", got.Err, tc.wantErr)
			case tc.wantErr != "" && got.Value != nil:
				t.Fatalf("Check().Value = %v for an invalid resource, want nil", got.Value)
			}
			if tc.want.TypeName == "" && tc.want.TypeURL != "" && !errors.Is(got.Err, ErrUnknownType) {
				t.Errorf("Check().Err = %v, want it to wrap ErrUnknownType", got.Err)
			}
		})
	}
}

// TestValidate checks the error of Validate: it names the resource and
// wraps the *ValidationError of the field.
func TestValidate(t *testing.T) {
	bad := mustAny(t, edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_MAGLEV }))
	if err := Validate(mustAny(t, edsCluster("c", "s"))); err != nil {
		t.Fatalf("Validate(valid) = %v, want nil", err)
	}
	err := Validate(bad)
	if want := `Cluster "c": lb_policy: unsupported policy MAGLEV`; err == nil || err.Error() != want {
		t.Fatalf("Validate(bad) = %v, want %q", err, want)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "lb_policy" {
		t.Fatalf("errors.As(%v) = %+v, want Field lb_policy", err, ve)
	}
	if err := Validate(mustAny(t, edsCluster("", "s"))); err == nil || !strings.HasPrefix(err.Error(), "Cluster: ") {
		t.Fatalf("Validate(no name) = %v, want an error starting with \"Cluster: \"", err)
	}
}

// TestCompileSafeRegex checks the full-match semantics of the safe-regex
// helper (R-17.3, gRFC A28) and that it rejects what grpc-go rejects.
func TestCompileSafeRegex(t *testing.T) {
	cases := []struct {
		name    string
		give    string
		match   []string
		noMatch []string
		wantErr bool
	}{
		{name: "whole path", give: "/svc/.*", match: []string{"/svc/", "/svc/M"}, noMatch: []string{"x/svc/M", "/sv"}},
		{name: "no implicit prefix match", give: "/svc", match: []string{"/svc"}, noMatch: []string{"/svc/M"}},
		{name: "alternation anchored as a whole", give: "a|b", match: []string{"a", "b"}, noMatch: []string{"ab", "xa"}},
		{name: "empty pattern matches only empty", give: "", match: []string{""}, noMatch: []string{"a"}},
		{name: "valid only when wrapped", give: "a)|(b", wantErr: true},
		{name: "unbalanced", give: "((", wantErr: true},
		{name: "backreference is not RE2", give: `(a)\1`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			re, err := compileSafeRegex(tc.give)
			if (err != nil) != tc.wantErr {
				t.Fatalf("compileSafeRegex(%q) error = %v, want error %v", tc.give, err, tc.wantErr)
			}
			for _, s := range tc.match {
				if !re.MatchString(s) {
					t.Errorf("%q does not match %q, want a match", tc.give, s)
				}
			}
			for _, s := range tc.noMatch {
				if re.MatchString(s) {
					t.Errorf("%q matches %q, want no match", tc.give, s)
				}
			}
		})
	}
}

// TestRuleCoverage checks that every rule of R-17 in scope, and, has
// valid and invalid table cases, and logs the number of cases per rule
// (go test -v -run TestRuleCoverage).
func TestRuleCoverage(t *testing.T) {
	type count struct{ valid, invalid int }
	counts := map[string]*count{}
	add := func(rule string, valid bool) {
		c := counts[rule]
		if c == nil {
			c = &count{}
			counts[rule] = c
		}
		if valid {
			c.valid++
		} else {
			c.invalid++
		}
	}
	addAll := func(rules []string, errs []string) {
		for i := range rules {
			add(rules[i], errs[i] == "")
		}
	}
	collect := func(rules, errs *[]string) func(rule, wantErr string) {
		return func(rule, wantErr string) { *rules, *errs = append(*rules, rule), append(*errs, wantErr) }
	}
	var rules, errs []string
	c := collect(&rules, &errs)
	for _, tc := range listenerCases(t) {
		c(tc.rule, tc.wantErr)
	}
	for _, tc := range routeConfigCases(t) {
		c(tc.rule, tc.wantErr)
	}
	for _, tc := range clusterCases(t) {
		c(tc.rule, tc.wantErr)
	}
	for _, tc := range endpointsCases(t) {
		c(tc.rule, tc.wantErr)
	}
	for _, tc := range checkCases(t) {
		c(tc.rule, tc.wantErr)
	}
	addAll(rules, errs)
	// the cases of TestDecodeTyped_PanicRecovery (the recovery
	// is in Type.DecodeTyped, which every built-in type goes through).
	add("R-17.6", false)
	add("R-17.6", false)

	var names []string
	total := 0
	for r, n := range counts {
		names = append(names, r)
		total += n.valid + n.invalid
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %6s %8s\n", "rule", "valid", "invalid")
	for _, r := range names {
		fmt.Fprintf(&b, "%-8s %6d %8d\n", r, counts[r].valid, counts[r].invalid)
	}
	fmt.Fprintf(&b, "total    %d cases", total)
	t.Log("\n" + b.String())

	for _, r := range []string{"R-17.0", "R-17.1", "R-17.3", "R-17.4", "R-17.5"} {
		if n := counts[r]; n == nil || n.valid == 0 || n.invalid == 0 {
			t.Errorf("rule %s has %+v cases, want valid and invalid ones", r, n)
		}
	}
	for _, r := range []string{"R-17.2", "R-5.6", "R-17.6"} {
		if n := counts[r]; n == nil || n.invalid == 0 {
			t.Errorf("rule %s has no invalid case", r)
		}
	}
	if total < 150 {
		t.Errorf("%d table cases, want at least 150", total)
	}
}

// TestValidationError_WrapsCause checks that a field invalid because
// parsing it failed keeps the parser's error as its cause, so that
// errors.As finds both the *ValidationError and the cause.
func TestValidationError_WrapsCause(t *testing.T) {
	rc := &v3routepb.RouteConfiguration{
		Name: "routes",
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    "vh",
			Domains: []string{"*"},
			Routes: []*v3routepb.Route{{
				Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_SafeRegex{
					SafeRegex: &v3matcherpb.RegexMatcher{Regex: "(("},
				}},
				Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
					ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"},
				}},
			}},
		}},
	}
	_, _, err := RouteConfigType.DecodeTyped(mustAny(t, rc))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "virtual_hosts[0].routes[0].match.safe_regex.regex" {
		t.Fatalf("DecodeTyped() error = %v, want a *ValidationError of the regex field", err)
	}
	var se *syntax.Error
	if !errors.As(err, &se) || se.Code != syntax.ErrMissingParen {
		t.Fatalf("DecodeTyped() error = %v, want it to wrap the *syntax.Error of the pattern", err)
	}
	if !strings.Contains(ve.Reason, se.Error()) {
		t.Errorf("Reason = %q, want it to include the cause %q", ve.Reason, se.Error())
	}
}
