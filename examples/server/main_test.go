// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestTour runs the self-contained tour and checks what it printed: each
// step, and the outcome of each call.
func TestTour(t *testing.T) {
	var out strings.Builder
	if err := tour(t.Context(), &out); err != nil {
		t.Fatalf("tour: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"a client, before the Listener: Unavailable",
		"serving mode: SERVING",
		"spiffe://example.org/client: OK, the server saw spiffe://example.org/client",
		"spiffe://example.org/intruder: PermissionDenied",
		"a client without a certificate: Unavailable",
		"serving mode: NOT_SERVING",
		"Done.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tour printed:\n%s\nwant a line with %q", out.String(), want)
		}
	}
}
