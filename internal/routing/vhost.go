// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"errors"
	"fmt"
	"strings"

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

// classifyDomain returns the kind of pattern d: "" and patterns with a '*'
// that is neither the first nor the last character are invalid.
func classifyDomain(d string) domainMatch {
	switch {
	case d == "":
		return domainInvalid
	case d == "*":
		return domainUniversal
	case strings.HasPrefix(d, "*"):
		if strings.Contains(d[1:], "*") {
			return domainInvalid
		}
		return domainSuffix
	case strings.HasSuffix(d, "*"):
		if strings.Contains(d[:len(d)-1], "*") {
			return domainInvalid
		}
		return domainPrefix
	case strings.Contains(d, "*"):
		return domainInvalid
	default:
		return domainExact
	}
}

// domainMatches reports whether pattern d, of kind k, matches host, ignoring
// ASCII case (as gRPC C++ and Envoy do; gRPC Go compares case-sensitively).
func domainMatches(k domainMatch, d, host string) bool {
	switch k {
	case domainUniversal:
		return true
	case domainSuffix:
		suffix := d[1:]
		return len(host) >= len(suffix) && strings.EqualFold(host[len(host)-len(suffix):], suffix)
	case domainPrefix:
		prefix := d[:len(d)-1]
		return len(host) >= len(prefix) && strings.EqualFold(host[:len(prefix)], prefix)
	case domainExact:
		return strings.EqualFold(d, host)
	default:
		return false
	}
}

// SelectVirtualHost returns the virtual host of rc whose domains best match
// authority (R-16.2; gRPC Go FindBestMatchingVirtualHost): an exact domain
// beats a suffix wildcard, which beats a prefix wildcard, which beats "*";
// between two patterns of the same kind the longer wins, and between
// equally long ones the first. An invalid pattern anywhere fails the lookup,
// as in every gRPC client. The error wraps ErrNoVirtualHost.
func SelectVirtualHost(authority string, rc *resources.RouteConfig) (*resources.VirtualHost, error) {
	var (
		best     *resources.VirtualHost
		bestKind = domainInvalid
		bestLen  int
	)
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		for _, d := range vh.Domains {
			k := classifyDomain(d)
			if k == domainInvalid {
				return nil, fmt.Errorf("%w: virtual host %q has an invalid domain pattern %q", ErrNoVirtualHost, vh.Name, d)
			}
			if k < bestKind || (k == bestKind && len(d) <= bestLen) || !domainMatches(k, d, authority) {
				continue
			}
			best, bestKind, bestLen = vh, k, len(d)
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: no virtual host of %d has a domain matching the data-plane authority %q", ErrNoVirtualHost, len(rc.VirtualHosts), authority)
	}
	return best, nil
}
