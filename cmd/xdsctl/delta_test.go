// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// TestDelta_Status checks `status --delta`: the client speaks incremental
// xDS (the server records only delta requests), every resource of a served
// chain is ACKED, and the version column shows each resource's own
// version (the testutil server's per-resource hash, not the snapshot's
// "1").
func TestDelta_Status(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)
	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--delta", "--wait", "10s", "lds/svc", "cds/cluster-svc")
	if code != exitOK || stderr != "" {
		t.Fatalf("status --delta = %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	rows := tableRows(t, stdout)
	if len(rows) != 2 {
		t.Fatalf("status printed:\n%s\nwant two rows", stdout)
	}
	for _, r := range rows {
		if len(r) != 5 || r[2] != "ACKED" || r[3] == "1" || r[3] == "-" {
			t.Fatalf("row %q, want ACKED with a per-resource version", r)
		}
	}
	reqs := ms.Requests()
	if len(reqs) == 0 {
		t.Fatal("the server received no request")
	}
	for _, r := range reqs {
		if r.Delta == nil {
			t.Fatalf("SotW request %v from status --delta", r.Req)
		}
	}
}

// TestDelta_Watch checks `watch --delta`: the Listener arrives over delta.
func TestDelta_Watch(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)
	r := startRun(t, "watch", "--bootstrap", bootstrapFile, "--delta", "listener/svc")
	waitForOutput(ctx, t, &r.stdout, "the Listener", containsAll(`] Listener svc (version `, `routes via RouteConfiguration "route-svc"`))
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch --delta exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}
	for _, req := range ms.Requests() {
		if req.Delta == nil {
			t.Fatalf("SotW request %v from watch --delta", req.Req)
		}
	}
}

// TestDelta_HelpMentionsFlag checks that the flag is documented in the
// usage of the commands that take client flags.
func TestDelta_HelpMentionsFlag(t *testing.T) {
	ctx := testContext(t)
	for _, cmd := range []string{"watch", "status"} {
		_, stdout, stderr := runSync(ctx, cmd, "--help")
		if out := stdout + stderr; !strings.Contains(out, "-delta") || !strings.Contains(out, "delta_ads") {
			t.Errorf("%s --help does not document --delta:\n%s", cmd, out)
		}
	}
}
