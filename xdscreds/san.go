// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/proxyless/xds/resources"
)

// matchSubjectAltNames is the server authorization of gRFC A29: it reports
// whether one of cert's subject alternative names (DNS names, email
// addresses, IP addresses in their text form, URIs such as SPIFFE IDs)
// matches one of ms, with StringMatcher semantics; an exact matcher
// against a DNS name follows the DNS wildcard rules of dnsMatch (the
// match_subject_alt_names documentation of the Envoy API, as grpc-go and
// grpc-java do). An empty ms accepts any certificate.
func matchSubjectAltNames(ms []resources.StringMatcher, cert *x509.Certificate) bool {
	if len(ms) == 0 {
		return true
	}
	for _, san := range cert.DNSNames {
		for _, m := range ms {
			if m.Kind == resources.StringMatchExact && m.Value != "" {
				if dnsMatch(m.Value, san) {
					return true
				}
				continue
			}
			if m.Match(san) {
				return true
			}
		}
	}
	for _, san := range cert.EmailAddresses {
		if matchAny(ms, san) {
			return true
		}
	}
	for _, ip := range cert.IPAddresses {
		if matchAny(ms, ip.String()) {
			return true
		}
	}
	for _, u := range cert.URIs {
		if matchAny(ms, u.String()) {
			return true
		}
	}
	return false
}

func matchAny(ms []resources.StringMatcher, s string) bool {
	for _, m := range ms {
		if m.Match(s) {
			return true
		}
	}
	return false
}

// dnsMatch reports whether host (the value of an exact matcher) matches
// san, a DNS name from a certificate that may hold a wildcard. Names
// compare case-insensitively and as absolute names (a trailing dot is
// implied). A wildcard is accepted only as the whole left-most label of a
// name of at least two labels ("*.example.com", not "*", "*a.example.com",
// "a*.example.com" or "a.*.example.com"), and stands for exactly one
// non-empty label: "*.example.com" matches "api.example.com", not
// "example.com" nor "a.b.example.com". These are the rules of RFC 6125
// §6.4.3 as gRPC applies them to match_subject_alt_names (grpc-go's
// dnsMatch, grpc-java's OkHostnameVerifier).
func dnsMatch(host, san string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, ".")) + "."
	san = strings.ToLower(strings.TrimSuffix(san, ".")) + "."
	if !strings.Contains(san, "*") {
		return host == san
	}
	// rest is the name after the wildcard: ".example.com.".
	rest, ok := strings.CutPrefix(san, "*")
	if !ok || !strings.HasPrefix(rest, ".") || rest == "." || strings.Contains(rest, "*") {
		return false // not the whole left-most label, a single-label name, or a second wildcard
	}
	label, ok := strings.CutSuffix(host, rest)
	return ok && label != "" && !strings.Contains(label, ".")
}

// describeSANs lists cert's SANs for an error message.
func describeSANs(cert *x509.Certificate) string {
	var parts []string
	add := func(kind string, n int, get func(int) string) {
		if n == 0 {
			return
		}
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("%q", get(i))
		}
		parts = append(parts, kind+" "+strings.Join(vals, ", "))
	}
	add("DNS", len(cert.DNSNames), func(i int) string { return cert.DNSNames[i] })
	add("URI", len(cert.URIs), func(i int) string { return cert.URIs[i].String() })
	add("email", len(cert.EmailAddresses), func(i int) string { return cert.EmailAddresses[i] })
	add("IP", len(cert.IPAddresses), func(i int) string { return cert.IPAddresses[i].String() })
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
