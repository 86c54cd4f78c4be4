// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
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

// fakeCSDS is a CSDS server that answers every fetch with resp.
type fakeCSDS struct {
	v3statuspb.UnimplementedClientStatusDiscoveryServiceServer
	resp *v3statuspb.ClientStatusResponse
}

func (f *fakeCSDS) FetchClientStatus(context.Context, *v3statuspb.ClientStatusRequest) (*v3statuspb.ClientStatusResponse, error) {
	return f.resp, nil
}

// startFakeCSDS serves resp over CSDS on loopback until the test ends and
// returns the address.
func startFakeCSDS(t *testing.T, resp *v3statuspb.ClientStatusResponse) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	v3statuspb.RegisterClientStatusDiscoveryServiceServer(s, &fakeCSDS{resp: resp})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return lis.Addr().String()
}

// TestStatusCSDS_ExitCodes checks that status --csds exits with the
// documented codes over the resources the CSDS server reports, of every
// client: 3 NACKED, 4 DOES_NOT_EXIST, 5 not received (REQUESTED, TIMEOUT,
// or named but in no client's dump), 6 stale (ACKED with this library's
// ErrStale), the lowest winning; without TYPE/NAME arguments every
// resource counts, with them only the resources they name (wildcards
// included).
func TestStatusCSDS_ExitCodes(t *testing.T) {
	entry := func(typeURL, name string, st v3adminpb.ClientResourceStatus) *v3statuspb.ClientConfig_GenericXdsConfig {
		return &v3statuspb.ClientConfig_GenericXdsConfig{TypeUrl: typeURL, Name: name, ClientStatus: st}
	}
	acked := func(typeURL, name string) *v3statuspb.ClientConfig_GenericXdsConfig {
		return entry(typeURL, name, v3adminpb.ClientResourceStatus_ACKED)
	}
	stale := acked(resources.ClusterTypeURL, "stale")
	stale.ErrorState = &v3adminpb.UpdateFailureState{Details: fmt.Errorf("xds: Cluster %q: %w", "stale", client.ErrStale).Error()}
	addr := startFakeCSDS(t, &v3statuspb.ClientStatusResponse{Config: []*v3statuspb.ClientConfig{
		{
			Node: &v3corepb.Node{Id: "n1"},
			GenericXdsConfigs: []*v3statuspb.ClientConfig_GenericXdsConfig{
				acked(resources.ListenerTypeURL, "svc"),
				entry(resources.ClusterTypeURL, "bad", v3adminpb.ClientResourceStatus_NACKED),
				entry(resources.ClusterTypeURL, "missing", v3adminpb.ClientResourceStatus_DOES_NOT_EXIST),
				entry(resources.EndpointsTypeURL, "pending", v3adminpb.ClientResourceStatus_REQUESTED),
				entry(resources.EndpointsTypeURL, "late", v3adminpb.ClientResourceStatus_TIMEOUT),
				stale,
			},
		},
		{
			Node:              &v3corepb.Node{Id: "n2"},
			GenericXdsConfigs: []*v3statuspb.ClientConfig_GenericXdsConfig{acked(resources.RouteConfigTypeURL, "route-svc")},
		},
	}})

	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string // "" means none
		wantRows   int    // table rows, over both clients
	}{
		{name: "every resource, NACKED wins", wantCode: exitNACKed, wantRows: 7,
			wantStderr: "xdsctl: status: cluster/bad is NACKED; cluster/missing does not exist; endpoints/pending was not received (REQUESTED); endpoints/late was not received (TIMEOUT); cluster/stale is stale"},
		{name: "ACKED in one client each", args: []string{"listener/svc", "route/route-svc"}, wantCode: exitOK, wantRows: 2},
		{name: "NACKED", args: []string{"cluster/bad"}, wantCode: exitNACKed, wantStderr: "cluster/bad is NACKED", wantRows: 1},
		{name: "DOES_NOT_EXIST", args: []string{"listener/svc", "cluster/missing"}, wantCode: exitDoesNotExist, wantStderr: "cluster/missing does not exist", wantRows: 2},
		{name: "REQUESTED", args: []string{"eds/pending"}, wantCode: exitNotReceived, wantStderr: "endpoints/pending was not received (REQUESTED)", wantRows: 1},
		{name: "TIMEOUT", args: []string{"eds/late"}, wantCode: exitNotReceived, wantStderr: "endpoints/late was not received (TIMEOUT)", wantRows: 1},
		{name: "in no client", args: []string{"listener/typo"}, wantCode: exitNotReceived, wantStderr: "listener/typo was not received", wantRows: 0},
		{name: "stale", args: []string{"cluster/stale"}, wantCode: exitStale, wantStderr: "cluster/stale is stale", wantRows: 1},
		{name: "wildcard", args: []string{"cds/*"}, wantCode: exitNACKed, wantStderr: "cluster/bad is NACKED; cluster/missing does not exist; cluster/stale is stale", wantRows: 3},
		{name: "wildcard ACKED", args: []string{"rds/*"}, wantCode: exitOK, wantRows: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			code, stdout, stderr := runSync(ctx, append([]string{"status", "--csds", addr}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("status --csds %q = %d, want %d; stdout:\n%s\nstderr: %s", tc.args, code, tc.wantCode, stdout, stderr)
			}
			if tc.wantStderr == "" && stderr != "" {
				t.Errorf("stderr = %q, want nothing", stderr)
			}
			if tc.wantStderr != "" {
				checkOneLineError(t, stderr, tc.wantStderr)
			}
			rows := 0
			for _, line := range strings.Split(stdout, "\n") {
				if line != "" && !strings.HasPrefix(line, "TYPE ") && !strings.HasPrefix(line, "# ") {
					rows++
				}
			}
			if rows != tc.wantRows {
				t.Errorf("status --csds %q printed %d rows, want %d:\n%s", tc.args, rows, tc.wantRows, stdout)
			}
			if tc.name == "stale" && !strings.Contains(stdout, "ACKED(stale)") {
				t.Errorf("status --csds %q printed\n%s\nwant ACKED(stale)", tc.args, stdout)
			}

			// The same verdict with structured output.
			code, stdout, _ = runSync(ctx, append([]string{"status", "--csds", addr, "-o", "json"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("status --csds -o json %q = %d, want %d", tc.args, code, tc.wantCode)
			}
			if n := checkOutputContract(t, outputJSON, stdout); n != 2 {
				t.Errorf("status --csds -o json printed %d records, want 2 (one per client)", n)
			}
		})
	}
}
