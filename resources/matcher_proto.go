// SPDX-License-Identifier: Apache-2.0

package resources

import (
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// StringMatcherFromProto converts sm as the decoders do (gRPC's rules:
// prefix, suffix and contains non-empty, an exact match possibly empty, a
// RE2 regex compiled with full-match semantics, no custom matcher), for
// configurations that stay protos inside decoded values, such as the
// RBAC rules of an HTTP filter's config (HTTPFilter.Config), which the
// decoders have validated with these rules (HeaderMatcherFromProto does
// the same for header matchers). The error is a *ValidationError whose
// Field is relative to sm.
func StringMatcherFromProto(sm *v3matcherpb.StringMatcher) (StringMatcher, error) {
	return stringMatcherFromProto(sm)
}
