// SPDX-License-Identifier: Apache-2.0

package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestDemoAdmin_StatusCSDS checks demo --admin and status --csds together
// (gRFC A40): the demo serves CSDS for its client, and status --csds reads
// it over gRPC and prints the demo's resources of all four types ACKED, as
// a table, as JSON, and filtered by TYPE/NAME arguments.
func TestDemoAdmin_StatusCSDS(t *testing.T) {
	ctx := testContext(t)
	r := startRun(t, "demo", "--base-port", "0", "--admin", "127.0.0.1:0", "--interval", "1h")
	out := waitForOutput(ctx, t, &r.stdout, "the demo's CSDS address and resolved mesh",
		containsAll("serving CSDS on ", "ClusterLoadAssignment eds-svc-canary"))
	addr := regexp.MustCompile(`serving CSDS on (\S+) `).FindStringSubmatch(out)[1]

	code, stdout, stderr := runSync(ctx, "status", "--csds", addr)
	if code != exitOK {
		t.Fatalf("status --csds = %d, stderr: %s", code, stderr)
	}
	for _, row := range []string{
		`(?m)^Listener\s+svc\s+ACKED\s+\d+\s+-\s+\S+\s+-$`,
		`(?m)^RouteConfiguration\s+route-svc\s+ACKED\s+\d+\s+-\s+\S+\s+-$`,
		`(?m)^Cluster\s+cluster-svc\s+ACKED\s+\d+\s+-\s+\S+\s+-$`,
		`(?m)^Cluster\s+cluster-svc-canary\s+ACKED\s+\d+\s+-\s+\S+\s+-$`,
		`(?m)^ClusterLoadAssignment\s+eds-svc\s+ACKED\s+\d+\s+-\s+\S+\s+-$`,
		`(?m)^ClusterLoadAssignment\s+eds-svc-canary\s+ACKED\s+\d+\s+-\s+\S+\s+-$`,
	} {
		if !regexp.MustCompile(row).MatchString(stdout) {
			t.Errorf("status --csds output lacks a row matching %s; it is:\n%s", row, stdout)
		}
	}

	code, stdout, stderr = runSync(ctx, "status", "--csds", addr, "--output", "json", "cluster/cluster-svc")
	if code != exitOK {
		t.Fatalf("status --csds --output json = %d, stderr: %s", code, stderr)
	}
	if n := checkOutputContract(t, outputJSON, stdout); n != 1 {
		t.Errorf("status --csds --output json printed %d records, want 1 (one client)", n)
	}
	if !strings.Contains(stdout, `"name":"cluster-svc"`) || !strings.Contains(stdout, `"client_status":"ACKED"`) ||
		strings.Contains(stdout, `"name":"svc"`) {
		t.Errorf("status --csds --output json cluster/cluster-svc = %s, want only that cluster, ACKED", stdout)
	}

	if code := r.stop(t); code != exitOK {
		t.Fatalf("demo = %d, stderr: %s", code, r.stderr.String())
	}
}

// TestStatusCSDS_Unreachable checks that status --csds fails (exit 1) with
// an error naming the address when nothing serves CSDS there.
func TestStatusCSDS_Unreachable(t *testing.T) {
	ctx := testContext(t)
	code, _, stderr := runSync(ctx, "status", "--csds", "127.0.0.1:1")
	if code != exitFailure || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("status --csds 127.0.0.1:1 = %d, stderr %q; want 1 and the address", code, stderr)
	}
}
