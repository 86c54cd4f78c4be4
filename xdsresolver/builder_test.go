// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"testing"

	"google.golang.org/grpc/resolver"
)

// TestDataPlaneAuthority checks the authority the virtual host is
// selected for: the channel's when grpc gives it, else the
// target's endpoint encoded as grpc encodes a default authority.
func TestDataPlaneAuthority(t *testing.T) {
	for _, tc := range []struct {
		endpoint, channel, want string
	}{
		{"svc", "", "svc"},
		{"svc.example.com:443", "", "svc.example.com:443"},
		{"my-service-client-side-xds/2nd component", "", "my-service-client-side-xds%2F2nd%20component"},
		{"a~b_c-d.e!$&'()*+,;=[::1]@x", "", "a~b_c-d.e!$&'()*+,;=[::1]@x"},
		{"100%/é?#", "", "100%25%2F%C3%A9%3F%23"},
		{":8080", "", "localhost:8080"},
		{"svc/with space", "override.example", "override.example"},
	} {
		if got := dataPlaneAuthority(tc.endpoint, resolver.BuildOptions{Authority: tc.channel}); got != tc.want {
			t.Errorf("dataPlaneAuthority(%q, channel %q) = %q; want %q", tc.endpoint, tc.channel, got, tc.want)
		}
	}
}
