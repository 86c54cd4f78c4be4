// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestClientFlags_PerType checks --per-type: the Listener and the
// RouteConfiguration come on two streams (one per type, on each type's own
// service), where ADS would carry both on one.
func TestClientFlags_PerType(t *testing.T) {
	ctx := testContext(t)
	ms, _ := newChainServer(t)

	code, stdout, stderr := runSync(ctx, "status", "--server", ms.Address(), "--per-type", "listener/svc", "route/route-svc")
	if code != exitOK {
		t.Fatalf("status --per-type = %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	streams := map[string]int64{}
	for _, r := range ms.Requests() {
		if r.Req != nil {
			streams[r.Req.GetTypeUrl()] = r.StreamID
		}
	}
	lds, rds := streams[resources.ListenerTypeURL], streams[resources.RouteConfigTypeURL]
	if lds == 0 || rds == 0 || lds == rds {
		t.Errorf("Listener on stream %d, RouteConfiguration on stream %d; want two different streams", lds, rds)
	}
}

// TestClientFlags_File checks --file: the resources of a DiscoveryResponse
// file, with no server and no bootstrap, and the flags it excludes.
func TestClientFlags_File(t *testing.T) {
	ctx := testContext(t)
	resp := &v3discoverypb.DiscoveryResponse{
		VersionInfo: "7",
		TypeUrl:     resources.ListenerTypeURL,
		Resources:   []*anypb.Any{testutil.MarshalAny(testutil.Listener("svc", "route-svc"))},
	}
	b, err := protojson.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lds.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runSync(ctx, "status", "--file", path, "listener/svc")
	if code != exitOK {
		t.Fatalf("status --file = %d, stderr %q", code, stderr)
	}
	if got, want := tableRows(t, stdout), [][]string{{"Listener", "svc", "ACKED", "7", "-"}}; !equalRows(got, want) {
		t.Errorf("status --file printed:\n%s\nwant rows %q", stdout, want)
	}

	for _, u := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--file", path, "--delta", "listener/svc"}, "--file and --delta exclude each other"},
		{[]string{"status", "--file", path, "--rest", "http://127.0.0.1:1", "listener/svc"}, "--file and --rest exclude each other"},
		{[]string{"status", "--rest", "http://127.0.0.1:1", "--server", "127.0.0.1:1", "listener/svc"}, "--rest and --server exclude each other"},
		{[]string{"status", "--rest-interval", "1s", "listener/svc"}, "--rest-interval needs --rest"},
	} {
		code, _, stderr := runSync(ctx, u.args...)
		if code != exitUsage {
			t.Errorf("xdsctl %q = %d, want %d", u.args, code, exitUsage)
		}
		checkOneLineError(t, stderr, u.want)
	}
}

// TestBootstrap_FileServerWithoutChannelCreds checks that a bootstrap
// whose server is a file:// source needs no channel_creds: status reads
// the sample mesh through it.
func TestBootstrap_FileServerWithoutChannelCreds(t *testing.T) {
	mesh, err := filepath.Abs(filepath.Join(repoRoot, "examples", "resources", "mesh"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	b := `{"xds_servers": [{"server_uri": "file://` + filepath.ToSlash(mesh) + `"}], "node": {"id": "n"}}`
	if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runSync(testContext(t), "status", "--bootstrap", path, "listener/svc", "cds/*")
	if code != exitOK {
		t.Fatalf("status --bootstrap %s = %d, stderr %q", b, code, stderr)
	}
	want := [][]string{{"Listener", "svc", "ACKED", "1", "-"}, {"Cluster", "cluster-svc", "ACKED", "1", "-"}, {"Cluster", "cluster-svc-canary", "ACKED", "1", "-"}}
	if got := tableRows(t, stdout); !equalRows(got, want) {
		t.Errorf("status printed:\n%s\nwant rows %q", stdout, want)
	}
}
