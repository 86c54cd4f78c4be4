// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestResolver_Example_Runs runs the example as `go run` does and checks
// that it succeeds: RPCs reach A, then B after the EDS update.
func TestResolver_Example_Runs(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{"RPC 1: answered by A", "EDS update: eds-greeter = [B]", "OK: the RPCs followed the endpoint from A to B"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q:\n%s", want, out.String())
		}
	}
}
