// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// tableRows parses the status table into rows of fields (the cells hold
// no spaces in these tests), checking the header. The LAST UPDATED cell,
// which varies, is checked to be "-" or a time in RFC 3339 and left out
// of the rows.
func tableRows(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "TYPE NAME STATUS VERSION LAST UPDATED ERROR" {
		t.Fatalf("table header = %q, want TYPE NAME STATUS VERSION LAST UPDATED ERROR", lines[0])
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 6 {
			t.Fatalf("table row %q has fewer than 6 cells", l)
		}
		if _, err := time.Parse(time.RFC3339, f[4]); f[4] != "-" && err != nil {
			t.Errorf("LAST UPDATED of row %q: %v", l, err)
		}
		rows = append(rows, append(f[:4:4], f[5:]...))
	}
	return rows
}

// TestStatus_Table checks the text output of status for a served chain:
// one ACKED row per resource, in dump order, with its version. The
// bootstrap comes from GRPC_XDS_BOOTSTRAP and the flags follow the
// resources.
func TestStatus_Table(t *testing.T) {
	ctx := testContext(t)
	_, bootstrapFile := newChainServer(t)
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
// ClientConfig as protojson: the node and every resource with its status,
// version and content.
func TestStatus_JSON(t *testing.T) {
	ctx := testContext(t)
	_, bootstrapFile := newChainServer(t)

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--output", "json", "listener/svc", "cluster/cluster-svc")
	if code != exitOK || stderr != "" {
		t.Fatalf("status = %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	if !strings.HasPrefix(stdout, "{\n  \"node\": {") {
		t.Errorf("output starts %q, want an object indented by two spaces", stdout[:min(len(stdout), 40)])
	}
	cc := &v3statuspb.ClientConfig{}
	if err := protojson.Unmarshal([]byte(stdout), cc); err != nil {
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
}

// TestStatus_ResourceTimeout checks that --resource-timeout makes a
// missing resource DOES_NOT_EXIST well before --wait, and that status
// returns once every resource has settled.
func TestStatus_ResourceTimeout(t *testing.T) {
	ctx := testContext(t)
	_, bootstrapFile := newChainServer(t)

	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "--wait", "1h", "--resource-timeout", "200ms",
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
