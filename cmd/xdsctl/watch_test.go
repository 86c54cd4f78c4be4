// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestWatch_Text checks the text output of watch:
//  1. Watch a Listener and a Cluster of a served chain.
//  2. Wait for both blocks, with their versions, the server that sent
//     them, and summaries.
//  3. Interrupt: exit 0, nothing on stderr.
func TestWatch_Text(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)

	r := startRun(t, "watch", "--bootstrap", bootstrapFile, "listener/svc", "cds/cluster-svc")
	from := " from " + ms.Address() + ": "
	waitForOutput(ctx, t, &r.stdout, "the Listener and the Cluster", containsAll(
		`] Listener svc (version 1)`+from+`routes via RouteConfiguration "route-svc"`,
		`] Cluster cluster-svc (version 1)`+from+`EDS, EDS service name "eds-svc", ROUND_ROBIN`,
	))
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d after interruption, want 0; stderr: %s", code, r.stderr.String())
	}
	if s := r.stderr.String(); s != "" {
		t.Fatalf("stderr = %q, want nothing", s)
	}
}

// jsonLines parses output as one JSON object per line.
func jsonLines(t *testing.T, output string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.SplitAfter(output, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			break // being written
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line %q is not a JSON object: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// nLines returns a condition that holds when the output has n complete
// lines.
func nLines(n int) func(string) bool {
	return func(s string) bool { return strings.Count(s, "\n") >= n }
}

// TestWatch_JSON checks the JSON output of watch:
//  1. Watch the four resources of a served chain.
//  2. Check one changed event per resource: type_url, name, version, and
//     the resource as protojson with its @type.
//  3. Change the endpoints on the server; check the next event carries
//     the new version and endpoints.
func TestWatch_JSON(t *testing.T) {
	ctx := testContext(t)
	ms, bootstrapFile := newChainServer(t)

	r := startRun(t, "watch", "--bootstrap", bootstrapFile, "--output", "json",
		"listener/svc", "route/route-svc", "cluster/cluster-svc", "endpoints/eds-svc")
	lines := jsonLines(t, waitForOutput(ctx, t, &r.stdout, "four events", nLines(4)))
	wantNames := map[string]string{
		resources.ListenerTypeURL:    "svc",
		resources.RouteConfigTypeURL: "route-svc",
		resources.ClusterTypeURL:     "cluster-svc",
		resources.EndpointsTypeURL:   "eds-svc",
	}
	for _, l := range lines {
		typeURL, _ := l["type_url"].(string)
		wantName, ok := wantNames[typeURL]
		if !ok {
			t.Errorf("event %v: unexpected or repeated type_url", l)
			continue
		}
		delete(wantNames, typeURL)
		res, _ := l["resource"].(map[string]any)
		if l["event"] != "changed" || l["name"] != wantName || l["version"] != "1" || res == nil || res["@type"] != typeURL {
			t.Errorf("event %v, want changed %s %q version 1 with the resource", l, typeURL, wantName)
		}
		if _, ok := l["error"]; ok {
			t.Errorf("event %v has an error field; changed events have none", l)
		}
		nameField := "name"
		if typeURL == resources.EndpointsTypeURL {
			nameField = "cluster_name"
		}
		if res[nameField] != wantName {
			t.Errorf("resource %v: %s = %v, want %q", res, nameField, res[nameField], wantName)
		}
	}
	if len(wantNames) != 0 {
		t.Errorf("no events for %v", wantNames)
	}

	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{9090}})
	chain.Version = "2"
	ms.Update("", chain)
	lines = jsonLines(t, waitForOutput(ctx, t, &r.stdout, "the endpoints update", nLines(5)))
	last := lines[4]
	if last["event"] != "changed" || last["type_url"] != resources.EndpointsTypeURL || last["version"] != "2" ||
		!strings.Contains(mustJSON(t, last["resource"]), `"port_value":9090`) {
		t.Errorf("event after the update = %v, want the endpoints on port 9090, version 2", last)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWatch_PersistStale checks that watch says where a value came from
// and whether it is stale:
//  1. watch -o json with --persist-dir against a live server: the changed
//     event has "server" and no "stale"; the value is saved.
//  2. Stop the server; watch -o json with the same directory and server
//     address and a short --persist-timeout: the changed event carries
//     the saved value with "stale": true and the server that sent it.
//  3. The same in text: "from ADDR, stale".
func TestWatch_PersistStale(t *testing.T) {
	ctx := testContext(t)
	ms, _ := newChainServer(t)
	addr, dir := ms.Address(), t.TempDir()

	r := startRun(t, "watch", "--server", addr, "--persist-dir", dir, "-o", "json", "cluster/cluster-svc")
	l := jsonLines(t, waitForOutput(ctx, t, &r.stdout, "the cluster", nLines(1)))[0]
	if l["event"] != "changed" || l["server"] != addr || l["stale"] != nil {
		t.Errorf("event from the live server = %v, want changed with server %q and no stale", l, addr)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}

	ms.Stop()
	r = startRun(t, "watch", "--server", addr, "--persist-dir", dir, "--persist-timeout", "100ms", "-o", "json", "cluster/cluster-svc")
	var changed map[string]any
	waitForOutput(ctx, t, &r.stdout, "the stale cluster", func(s string) bool {
		for _, l := range jsonLines(t, s) {
			if l["event"] == "changed" {
				changed = l
				return true
			}
		}
		return false
	})
	if changed["server"] != addr || changed["stale"] != true || changed["version"] != "1" || changed["resource"] == nil {
		t.Errorf("event from persistence = %v, want changed version 1 with server %q and stale true", changed, addr)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}

	r = startRun(t, "watch", "--server", addr, "--persist-dir", dir, "--persist-timeout", "100ms", "cluster/cluster-svc")
	waitForOutput(ctx, t, &r.stdout, "the stale cluster in text", containsAll(
		`] Cluster cluster-svc (version 1) from `+addr+`, stale: EDS`,
	))
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}
}

// TestWatch_XDSTPName checks that TYPE/NAME is split at the first "/", so
// an xdstp name reaches the client whole, and that the resource of an
// authority is delivered.
func TestWatch_XDSTPName(t *testing.T) {
	ctx := testContext(t)
	const name = "xdstp://auth/envoy.config.cluster.v3.Cluster/c1"
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{Version: "1", Clusters: []*v3clusterpb.Cluster{testutil.Cluster(name, "eds-c1")}})
	bootstrapFile := writeBootstrap(t, ms, testutil.BootstrapOptions{Authorities: map[string]string{"auth": ""}})

	r := startRun(t, "watch", "--bootstrap", bootstrapFile, "--output", "json", "cluster/"+name)
	lines := jsonLines(t, waitForOutput(ctx, t, &r.stdout, "the xdstp cluster", nLines(1)))
	if l := lines[0]; l["event"] != "changed" || l["name"] != name || l["type_url"] != resources.ClusterTypeURL {
		t.Errorf("event = %v, want changed %q", l, name)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}
}

// TestWatch_ResourceTimeout checks that --resource-timeout shortens the
// does-not-exist timer: a missing resource gets a resource_error event
// with an error and no resource.
func TestWatch_ResourceTimeout(t *testing.T) {
	ctx := testContext(t)
	_, bootstrapFile := newChainServer(t)

	r := startRun(t, "watch", "--bootstrap", bootstrapFile, "--output", "json", "--resource-timeout", "200ms", "cluster/missing")
	lines := jsonLines(t, waitForOutput(ctx, t, &r.stdout, "the resource error", nLines(1)))
	l := lines[0]
	if l["event"] != "resource_error" || l["name"] != "missing" || !strings.Contains(l["error"].(string), "does not exist") {
		t.Errorf("event = %v, want a resource_error that says the cluster does not exist", l)
	}
	if _, ok := l["resource"]; ok {
		t.Errorf("event = %v has a resource; errors have none", l)
	}
	if code := r.stop(t); code != exitOK {
		t.Fatalf("watch exited with %d, want 0; stderr: %s", code, r.stderr.String())
	}
}

// TestParseResourceArg checks TYPE/NAME parsing: every type spelling, and
// splitting at the first "/".
func TestParseResourceArg(t *testing.T) {
	tests := []struct {
		give     string
		wantType string
		wantName string
	}{
		{"listener/svc", resources.ListenerTypeURL, "svc"},
		{"LDS/svc", resources.ListenerTypeURL, "svc"},
		{"route/r", resources.RouteConfigTypeURL, "r"},
		{"rds/r", resources.RouteConfigTypeURL, "r"},
		{"cluster/c", resources.ClusterTypeURL, "c"},
		{"cds/c", resources.ClusterTypeURL, "c"},
		{"endpoints/e", resources.EndpointsTypeURL, "e"},
		{"eds/e", resources.EndpointsTypeURL, "e"},
		{"cluster/a/b", resources.ClusterTypeURL, "a/b"},
		// The type names the status table and watch print.
		{"Listener/svc", resources.ListenerTypeURL, "svc"},
		{"RouteConfiguration/route-svc", resources.RouteConfigTypeURL, "route-svc"},
		{"Cluster/c", resources.ClusterTypeURL, "c"},
		{"ClusterLoadAssignment/eds-svc", resources.EndpointsTypeURL, "eds-svc"},
		{"clusterloadassignment/e", resources.EndpointsTypeURL, "e"},
		{"ROUTECONFIGURATION/*", resources.RouteConfigTypeURL, "*"},
		{"cluster/xdstp://auth/envoy.config.cluster.v3.Cluster/c1", resources.ClusterTypeURL, "xdstp://auth/envoy.config.cluster.v3.Cluster/c1"},
	}
	for _, tt := range tests {
		got, err := parseResourceArg(tt.give)
		if err != nil {
			t.Errorf("parseResourceArg(%q) = %v", tt.give, err)
			continue
		}
		if got.kind.typeURL != tt.wantType || got.name != tt.wantName {
			t.Errorf("parseResourceArg(%q) = %s %q, want %s %q", tt.give, got.kind.typeURL, got.name, tt.wantType, tt.wantName)
		}
	}
	for _, bad := range []string{"", "cluster", "cluster/", "/c", "secret/s", "type.googleapis.com/envoy.config.cluster.v3.Cluster"} {
		if _, err := parseResourceArg(bad); err == nil {
			t.Errorf("parseResourceArg(%q) succeeded, want an error", bad)
		}
	}
}

// TestStatus_TableTypesAsInput checks that what the status table prints
// can be pasted back: each row's TYPE/NAME ("RouteConfiguration/route-svc")
// is accepted as an argument, and names the same resource.
func TestStatus_TableTypesAsInput(t *testing.T) {
	ctx := testContext(t)
	_, bootstrapFile := newChainServer(t)
	code, stdout, stderr := runSync(ctx, "status", "--bootstrap", bootstrapFile, "listener/svc", "route/route-svc", "cluster/cluster-svc", "endpoints/eds-svc")
	if code != exitOK {
		t.Fatalf("status = %d, stderr %q", code, stderr)
	}
	rows := tableRows(t, stdout)
	if len(rows) != 4 {
		t.Fatalf("status printed %d rows, want 4:\n%s", len(rows), stdout)
	}
	args := []string{"status", "--bootstrap", bootstrapFile}
	for _, row := range rows {
		args = append(args, row[0]+"/"+row[1])
	}
	code, again, stderr := runSync(ctx, args...)
	if code != exitOK {
		t.Fatalf("xdsctl %q = %d, stderr %q; want 0", args, code, stderr)
	}
	if got := tableRows(t, again); !equalRows(got, rows) {
		t.Errorf("status of the printed names:\n%s\nwant the same rows as\n%s", again, stdout)
	}
}
