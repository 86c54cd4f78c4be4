// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proxyless/xds/internal/asciifold"
	"github.com/proxyless/xds/resources"
)

// ErrNoVirtualHost is wrapped by the error of SelectVirtualHost when no
// virtual host's domains match the authority (package depmgr exports it
// as depmgr.ErrNoVirtualHost).
var ErrNoVirtualHost = errors.New("no matching virtual host")

// domainMatch is the kind of a virtual host domain pattern, in increasing
// order of preference.
type domainMatch int

const (
	domainInvalid   domainMatch = iota
	domainUniversal             // "*"
	domainPrefix                // "foo.*"
	domainSuffix                // "*.foo"
	domainExact                 // "foo.example.com"
)

// classifyDomain returns the kind of pattern d, as gRPC (Go, C++, Java)
// and Envoy read it: "*" matches everything; a leading '*' makes a suffix
// wildcard and, failing that, a trailing one a prefix wildcard, whatever
// the rest holds ("*s*" is the suffix "s*", "**" the suffix "*", "s*v*"
// the prefix "s*v"); a pattern without '*' is exact. "" and a pattern
// whose only '*' are inside ("a*b") are invalid.
func classifyDomain(d string) domainMatch {
	switch {
	case d == "":
		return domainInvalid
	case d == "*":
		return domainUniversal
	case d[0] == '*':
		return domainSuffix
	case d[len(d)-1] == '*':
		return domainPrefix
	case strings.Contains(d, "*"):
		return domainInvalid
	default:
		return domainExact
	}
}

// domainMatches reports whether pattern d, of kind k, matches host, ignoring
// ASCII case only (as gRPC C++ and Envoy do; gRPC Go compares
// case-sensitively). The '*' of a wildcard may stand for nothing.
func domainMatches(k domainMatch, d, host string) bool {
	switch k {
	case domainUniversal:
		return true
	case domainSuffix:
		return asciifold.HasSuffix(host, d[1:])
	case domainPrefix:
		return asciifold.HasPrefix(host, d[:len(d)-1])
	case domainExact:
		return asciifold.Equal(d, host)
	default:
		return false
	}
}

// SelectVirtualHost returns the virtual host of rc whose domains best match
// authority (R-16.2; gRPC Go FindBestMatchingVirtualHost): an exact domain
// beats a suffix wildcard, which beats a prefix wildcard, which beats "*";
// between two patterns of the same kind the longer wins, and between
// equally long ones the first. A virtual host with an invalid pattern
// ("", or '*' at neither end) never matches, whatever its other domains;
// the others are selected as usual. The error wraps ErrNoVirtualHost.
func SelectVirtualHost(authority string, rc *resources.RouteConfig) (*resources.VirtualHost, error) {
	var (
		best     *resources.VirtualHost
		bestKind = domainInvalid
		bestLen  int
		skipped  []string
	)
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		if slices.ContainsFunc(vh.Domains, func(d string) bool { return classifyDomain(d) == domainInvalid }) {
			skipped = append(skipped, vh.Name)
			continue
		}
		for _, d := range vh.Domains {
			k := classifyDomain(d)
			if k < bestKind || (k == bestKind && len(d) <= bestLen) || !domainMatches(k, d, authority) {
				continue
			}
			best, bestKind, bestLen = vh, k, len(d)
		}
	}
	if best == nil {
		if len(skipped) > 0 {
			return nil, fmt.Errorf("%w: no virtual host of %d has a domain matching the data-plane authority %q (skipped for an invalid domain pattern: %q)", ErrNoVirtualHost, len(rc.VirtualHosts), authority, skipped)
		}
		return nil, fmt.Errorf("%w: no virtual host of %d has a domain matching the data-plane authority %q", ErrNoVirtualHost, len(rc.VirtualHosts), authority)
	}
	return best, nil
}
