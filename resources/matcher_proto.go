// SPDX-License-Identifier: Apache-2.0

package resources

import (
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// The two functions below are public for the code that reads the config
// of a filter this package does not decode (an application reading
// Listeners for its own filters), so that it converts the matchers inside
// with the rules the decoders apply to the filter configs they know (the
// fault filter's headers, gRFC A33; RBAC rules, gRFC A41), which they hold
// decoded (HTTPFilter.Fault, HTTPFilter.RBAC).

// HeaderMatcherFromProto converts and validates one envoy HeaderMatcher
// with the rules of route matchers, for header matchers embedded
// outside a RouteConfiguration, such as the fault injection filter's
// headers (gRFC A33). The error names the field, relative to the
// HeaderMatcher.
func HeaderMatcherFromProto(h *v3routepb.HeaderMatcher) (HeaderMatcher, error) {
	return headerMatcherFromProto(h)
}

// StringMatcherFromProto converts sm as the decoders do (gRPC's rules:
// prefix, suffix and contains non-empty, an exact match possibly empty, a
// RE2 regex compiled with full-match semantics, no custom matcher), for
// string matchers inside filter configs, such as the RBAC rules of an
// HTTP filter's config. The error is a *ValidationError whose Field is
// relative to sm.
func StringMatcherFromProto(sm *v3matcherpb.StringMatcher) (StringMatcher, error) {
	return stringMatcherFromProto(sm)
}
