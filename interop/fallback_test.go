// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestGoControlPlane_Fallback_PrimaryDownThenRevert checks gRFC A71
// against two go-control-plane servers over gRPC: with the primary
// down at start, the fallback's cluster arrives within 5 s; once the
// primary comes up on its address, the client reverts to it within 10 s and
// the fallback's stream ends within 3 s of the revert.
func TestGoControlPlane_Fallback_PrimaryDownThenRevert(t *testing.T) {
	ctx := t.Context()
	// Reserve the primary's address, then free it: nothing listens there.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	primaryAddr := lis.Addr().String()
	lis.Close()

	fallback := startGCPServer(t)
	fallback.setSnapshot(ctx, t, "1", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("c", "from-fallback")}})

	js := fmt.Sprintf(`{
		"xds_servers": [
			{"server_uri": %q, "channel_creds": [{"type": "insecure"}]},
			{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}
		],
		"node": {"id": %q}
	}`, primaryAddr, fallback.Addr, nodeID)
	cfg, err := bootstrap.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	start := time.Now()
	w := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "c", w)()
	from := func(server string) func(watchEvent[*resources.Cluster]) bool {
		return func(e watchEvent[*resources.Cluster]) bool {
			return e.kind == changed && e.value.EDSServiceName == server
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, i, err := w.waitFor(waitCtx, 0, from("from-fallback"))
	if err != nil {
		t.Fatalf("no fallback data within 5s of start: %v", err)
	}
	t.Logf("fallback data after %v", time.Since(start))

	time.Sleep(2 * time.Second) // the primary stays down a little
	plis, err := net.Listen("tcp", primaryAddr)
	if err != nil {
		t.Skipf("cannot listen on the primary's address again: %v", err)
	}
	primary := startGCPServerOn(t, plis)
	primary.setSnapshot(ctx, t, "1", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("c", "from-primary")}})
	up := time.Now()
	waitCtx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := w.waitFor(waitCtx, i+1, from("from-primary")); err != nil {
		t.Fatalf("no revert within 10s of the primary coming up: %v", err)
	}
	reverted := time.Now()
	t.Logf("reverted %v after the primary came up", reverted.Sub(up))
	if o, _ := c.ResourceOrigin(resources.ClusterType, "c"); o.ServerURI != primaryAddr {
		t.Fatalf("ResourceOrigin = %+v, want the primary %s", o, primaryAddr)
	}
	waitCtx, cancel = context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, _, err := fallback.Closed.waitFor(waitCtx, 0, func(int64) bool { return true }); err != nil {
		t.Fatalf("the fallback stream did not end within 3s of the revert: %v", err)
	}
}
