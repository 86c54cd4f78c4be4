// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil/certs"
)

// TestMatchSubjectAltNames checks the server authorization of gRFC A29
// against a real certificate with DNS (one a wildcard), email, IP and URI
// SANs: every matcher kind, ignore_case, and the DNS wildcard rules of
// exact matchers.
func TestMatchSubjectAltNames(t *testing.T) {
	ca := newCA(t, "spiffe://td")
	cert := issue(t, ca, certs.Options{
		SPIFFEID:       "spiffe://td/ns/x",
		DNSNames:       []string{"*.example.com", "Exact.Host"},
		EmailAddresses: []string{"admin@example.com"},
		IPAddresses:    []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("::1")},
	}).Cert
	bare := issue(t, ca, certs.Options{CommonName: "no SANs"}).Cert

	m := func(kind resources.StringMatchKind, v string) resources.StringMatcher {
		sm := resources.StringMatcher{Kind: kind, Value: v}
		if kind == resources.StringMatchSafeRegex {
			sm.Regex = regexp.MustCompile("^(?:" + v + ")$")
		}
		return sm
	}
	ic := func(sm resources.StringMatcher) resources.StringMatcher { sm.IgnoreCase = true; return sm }
	E, P, S, C, R := resources.StringMatchExact, resources.StringMatchPrefix, resources.StringMatchSuffix, resources.StringMatchContains, resources.StringMatchSafeRegex

	tests := []struct {
		name string
		ms   []resources.StringMatcher
		want bool
	}{
		{"no matchers", nil, true},
		{"exact under a wildcard DNS SAN", []resources.StringMatcher{m(E, "api.example.com")}, true},
		{"exact, wildcard spans one label only", []resources.StringMatcher{m(E, "a.b.example.com")}, false},
		{"exact, wildcard needs a label", []resources.StringMatcher{m(E, "example.com")}, false},
		{"exact DNS ignores case", []resources.StringMatcher{m(E, "EXACT.host")}, true},
		{"exact DNS, trailing dot", []resources.StringMatcher{m(E, "exact.host.")}, true},
		{"exact DNS, other name", []resources.StringMatcher{m(E, "other.host")}, false},
		{"empty exact", []resources.StringMatcher{m(E, "")}, false},
		{"exact URI", []resources.StringMatcher{m(E, "spiffe://td/ns/x")}, true},
		{"exact URI is case-sensitive", []resources.StringMatcher{m(E, "SPIFFE://td/ns/x")}, false},
		{"exact URI, ignore_case", []resources.StringMatcher{ic(m(E, "SPIFFE://TD/ns/x"))}, true},
		{"exact email", []resources.StringMatcher{m(E, "admin@example.com")}, true},
		{"exact IPv4", []resources.StringMatcher{m(E, "10.0.0.1")}, true},
		{"exact IPv6", []resources.StringMatcher{m(E, "::1")}, true},
		{"prefix URI", []resources.StringMatcher{m(P, "spiffe://td/")}, true},
		{"prefix, case", []resources.StringMatcher{m(P, "SPIFFE://")}, false},
		{"prefix, ignore_case", []resources.StringMatcher{ic(m(P, "SPIFFE://"))}, true},
		{"prefix of a wildcard DNS SAN, literally", []resources.StringMatcher{m(P, "*.example")}, true},
		{"prefix does not expand wildcards", []resources.StringMatcher{m(P, "api.")}, false},
		{"suffix email", []resources.StringMatcher{m(S, "@example.com")}, true},
		{"suffix, ignore_case", []resources.StringMatcher{ic(m(S, "@EXAMPLE.COM"))}, true},
		{"contains", []resources.StringMatcher{m(C, "ns/x")}, true},
		{"contains, no", []resources.StringMatcher{m(C, "ns/y")}, false},
		{"contains IP", []resources.StringMatcher{m(C, "0.0")}, true},
		{"safe_regex, full match", []resources.StringMatcher{m(R, "spiffe://td/ns/[a-z]+")}, true},
		{"safe_regex must match the whole SAN", []resources.StringMatcher{m(R, "spiffe://td/ns")}, false},
		{"one of several", []resources.StringMatcher{m(E, "nope"), m(S, "nope"), m(E, "api.example.com")}, true},
		{"none of several", []resources.StringMatcher{m(E, "nope"), m(P, "nope")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchSubjectAltNames(tc.ms, cert); got != tc.want {
				t.Errorf("matchSubjectAltNames(%v) = %v, want %v", tc.ms, got, tc.want)
			}
		})
	}
	if matchSubjectAltNames([]resources.StringMatcher{m(P, "")}, bare) {
		t.Error("a certificate without SANs matched a matcher")
	}
	if !matchSubjectAltNames(nil, bare) {
		t.Error("a certificate without SANs did not pass without matchers")
	}
}

// dnsMatchCases are the DNS wildcard rules (RFC 6125 §6.4.3 as gRFC A29
// implementations apply them): host is an exact matcher's value, san a
// certificate's DNS SAN.
var dnsMatchCases = []struct {
	host, san string
	want      bool
}{
	{"example.com", "example.com", true},
	{"Example.COM", "example.com", true},
	{"example.com.", "example.com", true},
	{"example.com", "example.com.", true},
	{"example.com", "example.org", false},
	{"api.example.com", "*.example.com", true},
	{"API.example.com", "*.EXAMPLE.com", true},
	{"api.example.com.", "*.example.com", true},
	{"example.com", "*.example.com", false},         // one label exactly
	{"a.b.example.com", "*.example.com", false},     // one label only
	{".example.com", "*.example.com", false},        // not an empty one
	{"example.com", "*", false},                     // single-label wildcard
	{"com", "*.", false},                            // single-label wildcard
	{"api.example.com", "a*.example.com", false},    // not the whole label
	{"api.example.com", "*i.example.com", false},    // not the whole label
	{"a.api.example.com", "a.*.example.com", false}, // not the left-most label
	{"a.b.com", "*.*.com", false},                   // one wildcard
	{"example.com", "*.com", true},                  // two labels are enough
	{"*.example.com", "*.example.com", true},
	{"api.example.com", "api.example.com*", false},
	{"", "", true},
	{"", "*.", false},
}

func TestDNSMatch(t *testing.T) {
	for _, tc := range dnsMatchCases {
		if got := dnsMatch(tc.host, tc.san); got != tc.want {
			t.Errorf("dnsMatch(%q, %q) = %v, want %v", tc.host, tc.san, got, tc.want)
		}
		if got := dnsMatchByLabels(tc.host, tc.san); got != tc.want {
			t.Errorf("dnsMatchByLabels(%q, %q) = %v, want %v (the oracle of FuzzDNSMatch is wrong)", tc.host, tc.san, got, tc.want)
		}
	}
}

// dnsMatchByLabels is dnsMatch written another way, label by label, as
// the oracle of FuzzDNSMatch.
func dnsMatchByLabels(host, san string) bool {
	labels := func(s string) []string { return strings.Split(strings.ToLower(strings.TrimSuffix(s, ".")), ".") }
	h, p := labels(host), labels(san)
	if !strings.Contains(san, "*") {
		return strings.Join(h, ".") == strings.Join(p, ".")
	}
	if len(p) < 2 || p[0] != "*" || strings.Contains(strings.Join(p[1:], "."), "*") || len(h) != len(p) || h[0] == "" {
		return false
	}
	for i := 1; i < len(p); i++ {
		if h[i] != p[i] {
			return false
		}
	}
	return true
}

// FuzzDNSMatch checks dnsMatch against its label-by-label oracle, and
// that an exact name always matches itself.
func FuzzDNSMatch(f *testing.F) {
	for _, tc := range dnsMatchCases {
		f.Add(tc.host, tc.san)
	}
	f.Fuzz(func(t *testing.T, host, san string) {
		if got, want := dnsMatch(host, san), dnsMatchByLabels(host, san); got != want {
			t.Fatalf("dnsMatch(%q, %q) = %v, oracle says %v", host, san, got, want)
		}
		if !strings.Contains(host, "*") && !dnsMatch(host, host) {
			t.Fatalf("dnsMatch(%q, itself) = false", host)
		}
	})
}
