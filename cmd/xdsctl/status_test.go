// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// tableCells parses the status table into rows of fields (the cells hold
// no spaces in these tests), checking the header and that the LAST
// UPDATED cell (index 5) is "-" or a time in RFC 3339.
func tableCells(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	const header = "TYPE NAME STATUS VERSION SERVER LAST UPDATED ERROR"
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != header {
		t.Fatalf("table header = %q, want %s", lines[0], header)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 7 {
			t.Fatalf("table row %q has fewer than 7 cells", l)
		}
		if _, err := time.Parse(time.RFC3339, f[5]); f[5] != "-" && err != nil {
			t.Errorf("LAST UPDATED of row %q: %v", l, err)
		}
		rows = append(rows, f)
	}
	return rows
}

// tableRows returns the rows of the status table without the cells that
// vary, SERVER and LAST UPDATED: TYPE NAME STATUS VERSION ERROR....
func tableRows(t *testing.T, out string) [][]string {
	t.Helper()
	var rows [][]string
	for _, f := range tableCells(t, out) {
		rows = append(rows, append(f[:4:4], f[6:]...))
	}
	return rows
}

// tableServers returns the SERVER column of the status table.
func tableServers(t *testing.T, out string) []string {
	t.Helper()
	var servers []string
	for _, f := range tableCells(t, out) {
		servers = append(servers, f[4])
	}
	return servers
}

// TestStatus_Table checks the text output of status for a served chain:
// one ACKED row per resource, in dump order, with its version. The
// bootstrap comes from GRPC_XDS_BOOTSTRAP and the flags follow the
// resources.
func TestStatus_Table(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)
	t.Setenv("GRPC_XDS_BOOTSTRAP", bootstrapFile)

	code, stdout, stderr := runSync(ctx, "status", "eds/eds-svc", "cds/cluster-svc", "rds/route-svc", "lds/svc", "--wait", "10s")
	if code != exitOK || stderr != "" {
		t.Fatalf("status = %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	want := [][]string{
		{"Listener", "svc", "ACKED", "1", "-"},
		{"RouteConfiguration", "route-svc", "ACKED", "1", "-"},
		{"Cluster", "cluster-svc", "ACKED", "1", "-"},
		{"ClusterLoadAssignment", "eds-svc", "ACKED", "1", "-"},
	}
	if got := tableRows(t, stdout); !equalRows(got, want) {
		t.Fatalf("status printed:\n%s\nwant rows %q", stdout, want)
	}
	addr := ms.Address()
	if got, want := tableServers(t, stdout), []string{addr, addr, addr, addr}; !slices.Equal(got, want) {
		t.Errorf("SERVER column = %q, want %q", got, want)
	}
}

func equalRows(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], " ") != strings.Join(b[i], " ") {
			return false
		}
	}
	return true
}

// TestStatus_JSON checks that status --output json prints the CSDS
// ClientConfig as protojson, on one line: the node and every resource with its status,
// version and content, then the "origins" field with the server of each.
func TestStatus_JSON(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--output", "json", "listener/svc", "cluster/cluster-svc")
	if code != exitOK || stderr != "" {
		t.Fatalf("status = %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	if !strings.HasPrefix(stdout, `{"node":{`) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("output = %q, want one object on one line", stdout)
	}
	cc := &v3statuspb.ClientConfig{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(stdout), cc); err != nil {
		t.Fatalf("output is not a ClientConfig: %v\n%s", err, stdout)
	}
	if cc.GetNode().GetId() != "xdsctl-test" {
		t.Errorf("node = %v, want id xdsctl-test", cc.GetNode())
	}
	gs := cc.GetGenericXdsConfigs()
	if len(gs) != 2 {
		t.Fatalf("generic_xds_configs = %v, want 2", gs)
	}
	for i, want := range []struct{ typeURL, name string }{{resources.ListenerTypeURL, "svc"}, {resources.ClusterTypeURL, "cluster-svc"}} {
		g := gs[i]
		if g.GetTypeUrl() != want.typeURL || g.GetName() != want.name || g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED ||
			g.GetVersionInfo() != "1" || g.GetXdsConfig().GetTypeUrl() != want.typeURL {
			t.Errorf("generic_xds_configs[%d] = %v, want %s %q ACKED version 1 with its resource", i, g, want.typeURL, want.name)
		}
	}
	var origins struct {
		Origins []jsonOrigin `json:"origins"`
	}
	if err := json.Unmarshal([]byte(stdout), &origins); err != nil {
		t.Fatal(err)
	}
	addr := ms.Address()
	wantOrigins := []jsonOrigin{{resources.ListenerTypeURL, "svc", addr, false}, {resources.ClusterTypeURL, "cluster-svc", addr, false}}
	if !slices.Equal(origins.Origins, wantOrigins) {
		t.Errorf("origins = %+v, want %+v", origins.Origins, wantOrigins)
	}
}

// TestStatus_PersistStale checks --persist-dir and the stale status:
//  1. status with --persist-dir against a live server: ACKED from the
//     server, exit 0; the values are saved.
//  2. Stop the server. status with the same directory and server address
//     and a short --persist-timeout: the saved values are ACKED(stale),
//     with the server that sent them, exit 6, stderr names them.
//  3. The same with --output json: "origins" says stale and the server.
func TestStatus_PersistStale(t *testing.T) {
	ctx := testContext(t)
	ms, _ := newChainServer(t)
	addr, dir := ms.Address(), t.TempDir()

	code, stdout, stderr := runSync(ctx, "status", "--server", addr, "--persist-dir", dir, "--wait", "10s", "lds/svc", "cds/cluster-svc")
	if code != exitOK || stderr != "" {
		t.Fatalf("status against the live server = %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	if got, want := tableServers(t, stdout), []string{addr, addr}; !slices.Equal(got, want) {
		t.Fatalf("SERVER column = %q, want %q", got, want)
	}

	ms.Stop()
	code, stdout, stderr = runSync(ctx, "status", "--server", addr, "--persist-dir", dir, "--persist-timeout", "100ms", "--wait", "10s",
		"lds/svc", "cds/cluster-svc")
	if code != exitStale {
		t.Fatalf("status against the stopped server = %d, stderr %q, stdout:\n%s\nwant %d", code, stderr, stdout, exitStale)
	}
	checkOneLineError(t, stderr, "status: listener/svc is stale (served from the persisted copy only); cluster/cluster-svc is stale")
	cells := tableCells(t, stdout)
	for i, want := range []struct{ typ, name string }{{"Listener", "svc"}, {"Cluster", "cluster-svc"}} {
		f := cells[i]
		if f[0] != want.typ || f[1] != want.name || f[2] != "ACKED(stale)" || f[3] != "1" || f[4] != addr || !strings.Contains(strings.Join(f[6:], " "), "stale") {
			t.Errorf("row %q, want %s %s ACKED(stale) version 1 from %s, with an error saying it is stale", f, want.typ, want.name, addr)
		}
	}

	code, stdout, _ = runSync(ctx, "status", "--server", addr, "--persist-dir", dir, "--persist-timeout", "100ms", "--wait", "10s",
		"-o", "json", "lds/svc")
	if code != exitStale {
		t.Fatalf("status -o json = %d, want %d", code, exitStale)
	}
	var got struct {
		Origins []jsonOrigin `json:"origins"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	want := []jsonOrigin{{TypeURL: resources.ListenerTypeURL, Name: "svc", Server: addr, Stale: true}}
	if !slices.Equal(got.Origins, want) {
		t.Errorf("origins = %+v, want %+v", got.Origins, want)
	}
}

// TestStatus_PersistNothingSaved checks that with --persist-dir but
// nothing saved, an unreachable server is still exit 1, after the
// persistence timeout.
func TestStatus_PersistNothingSaved(t *testing.T) {
	ctx := testContext(t)
	code, stdout, stderr := runSync(ctx, "status", "--server", "127.0.0.1:1", "--persist-dir", t.TempDir(), "--persist-timeout", "100ms",
		"--wait", "10s", "lds/svc")
	if code != exitFailure || stdout != "" {
		t.Errorf("status = %d, stdout %q; want %d and nothing", code, stdout, exitFailure)
	}
	checkOneLineError(t, stderr, "cannot reach the management server")
}

// TestStatus_ResourceTimeout checks that --resource-timeout makes a
// missing resource DOES_NOT_EXIST well before --wait, and that status
// returns once every resource has settled.
func TestStatus_ResourceTimeout(t *testing.T) {
	ctx := testContext(t)
	_, bootstrapFile := newChainServer(t)

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--wait", "1h", "--resource-timeout", "1s",
		"cluster/cluster-svc", "cluster/missing")
	if code != exitDoesNotExist {
		t.Fatalf("status = %d, stderr %q; want %d", code, stderr, exitDoesNotExist)
	}
	checkOneLineError(t, stderr, "status: cluster/missing does not exist")
	want := [][]string{
		{"Cluster", "cluster-svc", "ACKED", "1", "-"},
		{"Cluster", "missing", "DOES_NOT_EXIST", "-", "-"},
	}
	if got := tableRows(t, stdout); !equalRows(got, want) {
		t.Fatalf("status printed:\n%s\nwant rows %q", stdout, want)
	}
}

// TestStatus_WaitBounds checks that status prints the dump after --wait
// even when the management server never answers: the resource is still
// REQUESTED.
func TestStatus_WaitBounds(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	bootstrapFile := writeBootstrap(t, ms, testutil.BootstrapOptions{})

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--wait", "100ms", "listener/svc")
	if code != exitNotReceived {
		t.Fatalf("status = %d, stderr %q; want %d", code, stderr, exitNotReceived)
	}
	checkOneLineError(t, stderr, "status: listener/svc was not received within 100ms (REQUESTED)")
	want := [][]string{{"Listener", "svc", "REQUESTED", "-", "-"}}
	if got := tableRows(t, stdout); !equalRows(got, want) {
		t.Fatalf("status printed:\n%s\nwant rows %q", stdout, want)
	}
}

// TestStatus_Unreachable checks that status fails with one line on stderr
// and exit 1 when every resource gets a connection error: the server
// rejects every stream.
func TestStatus_Unreachable(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)
	ms.RejectStreams(errors.New("go away"))

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--wait", "1h", "listener/svc", "cluster/cluster-svc")
	if code != exitFailure {
		t.Errorf("status = %d, want %d", code, exitFailure)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	checkOneLineError(t, stderr, "cannot reach the management server")
}

// TestStatus_NoServer checks the same for a server that is not running at
// all.
func TestStatus_NoServer(t *testing.T) {
	ctx := testContext(t)
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bootstrapFile := writeBootstrap(t, ms, testutil.BootstrapOptions{})
	ms.Stop()

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--wait", "1h", "cluster/c")
	if code != exitFailure || stdout != "" {
		t.Errorf("status = %d, stdout %q; want %d and nothing", code, stdout, exitFailure)
	}
	checkOneLineError(t, stderr, "cannot reach the management server")
}

// TestPersistFlags_Usage checks the usage errors of --persist-timeout on
// every command that takes it.
func TestPersistFlags_Usage(t *testing.T) {
	ctx := testContext(t)
	for _, cmd := range []string{"watch", "resolve", "status"} {
		for _, u := range []struct {
			args []string
			want string
		}{
			{[]string{"--persist-timeout", "1s"}, "--persist-timeout needs --persist-dir"},
			{[]string{"--persist-dir", t.TempDir(), "--persist-timeout", "-1s"}, "--persist-timeout must not be negative"},
		} {
			args := append(append([]string{cmd, "--server", "127.0.0.1:1"}, u.args...), "listener/svc")
			code, _, stderr := runSync(ctx, args...)
			if code != exitUsage {
				t.Errorf("xdsctl %q = %d, want %d", args, code, exitUsage)
			}
			checkOneLineError(t, stderr, u.want)
		}
	}
}
