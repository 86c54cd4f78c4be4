// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/proxyless/xds/testutil"
)

// conformanceServer starts a management server with two Listeners,
// RouteConfigurations, Clusters and ClusterLoadAssignments (l<i> → r<i>
// → c<i> → c<i>) for every node.
func conformanceServer(t *testing.T, opts testutil.ServerOptions) *testutil.ManagementServer {
	t.Helper()
	ms := testutil.NewManagementServer(t, opts)
	var r testutil.Resources
	for i := range 2 {
		r.Listeners = append(r.Listeners, testutil.Listener(fmt.Sprint("l", i), fmt.Sprint("r", i)))
		r.Routes = append(r.Routes, testutil.RouteConfig(fmt.Sprint("r", i), "*", fmt.Sprint("c", i)))
		r.Clusters = append(r.Clusters, testutil.Cluster(fmt.Sprint("c", i), ""))
		r.Endpoints = append(r.Endpoints, testutil.Endpoints(fmt.Sprint("c", i), "10.0.0.1", 8080))
	}
	ms.Update("", r)
	return ms
}

// TestConformance_JSON checks xdsctl conformance against testutil's
// server, which follows every rule: exit 0, one JSON object per check and
// variant with the keys of the contract, no failure, the checks that need
// a Change callback skipped, and a summary last.
func TestConformance_JSON(t *testing.T) {
	addr := conformanceServer(t, testutil.ServerOptions{}).Address()
	code, stdout, stderr := runSync(t.Context(), "conformance", "--server", addr, "--per-type", "--quiet", "200ms", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	n := checkOutputContract(t, outputJSON, stdout)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if n < 2 || len(lines) != n {
		t.Fatalf("%d records, %d lines", n, len(lines))
	}
	results := map[string]int{}
	for _, line := range lines[:len(lines)-1] {
		var rec map[string]string
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		for _, k := range []string{"check", "variant", "result", "rule", "source", "detail"} {
			if rec[k] == "" {
				t.Errorf("record %q has no %q", line, k)
			}
		}
		results[rec["result"]]++
		if rec["result"] == "fail" {
			t.Errorf("failed: %s", line)
		}
		if rec["check"] == "update_pushed" && (rec["result"] != "skip" || !strings.Contains(rec["detail"], "Config.Change")) {
			t.Errorf("update_pushed without a Change callback: %s, want skip naming Config.Change", line)
		}
		if rec["variant"] == "sotw-per-type" {
			results["per-type"]++
		}
	}
	var sum struct {
		Summary map[string]int `json:"summary"`
		Result  string         `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Result != "pass" {
		t.Errorf("summary %q (%v), want result pass", lines[len(lines)-1], err)
	}
	if sum.Summary["pass"] != results["pass"] || sum.Summary["skip"] != results["skip"] || results["per-type"] == 0 {
		t.Errorf("summary %v, counted %v", sum.Summary, results)
	}
}

// TestConformance_ExitCodes checks the exit codes: 1 when a check fails
// (a server that never answers), 2 when the run cannot be made (no
// server at the address, bad flags), and the table for people.
func TestConformance_ExitCodes(t *testing.T) {
	silent := conformanceServer(t, testutil.ServerOptions{Manual: true}).Address()
	boot := writeBootstrap(t, conformanceServer(t, testutil.ServerOptions{}), testutil.BootstrapOptions{NodeID: "from-bootstrap"})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	lis.Close()

	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"a check fails", []string{"--server", silent, "--timeout", "300ms", "--quiet", "100ms"}, exitFailure,
			"missing_resource_reported      delta           fail", "checks failed"},
		{"bootstrap", []string{"--bootstrap", boot, "--variant", "sotw", "--quiet", "100ms"}, exitOK,
			"0 failed", ""},
		{"bootstrap and server", []string{"--bootstrap", boot, "--server", silent}, exitUsage, "", "--server and --bootstrap exclude each other"},
		{"no server", []string{"--server", closed, "--timeout", "300ms"}, exitUsage, "", "reaching the management server"},
		{"no --server", nil, exitUsage, "", "--server or --bootstrap is needed"},
		{"bad variant", []string{"--server", silent, "--variant", "both-ways"}, exitUsage, "", "--variant: want sotw, delta or both"},
		{"bad output", []string{"--server", silent, "-o", "xml"}, exitUsage, "", "--output: want table, json or yaml"},
		{"argument", []string{"--server", silent, "extra"}, exitUsage, "", `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runSync(t.Context(), append([]string{"conformance"}, tc.args...)...)
			if code != tc.wantCode || !strings.Contains(stdout, tc.wantStdout) || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %s\nwant exit %d, stdout with %q, stderr with %q", code, stdout, stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}
