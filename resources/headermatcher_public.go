// SPDX-License-Identifier: Apache-2.0

package resources

import (
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// HeaderMatcherFromProto converts and validates one envoy HeaderMatcher
// with the rules of route matchers, for configurations that
// embed header matchers outside a RouteConfiguration, such as the fault
// injection filter's headers (gRFC A33). The error names the field,
// relative to the HeaderMatcher.
func HeaderMatcherFromProto(h *v3routepb.HeaderMatcher) (HeaderMatcher, error) {
	return headerMatcherFromProto(h)
}
