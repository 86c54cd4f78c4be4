// SPDX-License-Identifier: Apache-2.0

package file_test

import (
	"path/filepath"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
)

// TestWildcard checks WatchAll from files: the wildcard's empty name list
// (its legacy form, for Listener and Cluster) gets every resource of the
// type, and so does "*" (RouteConfiguration); a Watch of a name next to it
// is served too. On the old transport only "*" was a wildcard: WatchAll of
// Listeners got nothing (xdsctl status --file PATH 'listener/*' exited 5).
func TestWildcard(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	lds := filepath.Join(dir, "lds.json")
	replace(t, lds, encode(t, lds, response(listenerType, chain.Listeners[0], testutil.Listener("other", "route-other"))))
	rds := filepath.Join(dir, "rds.json")
	replace(t, rds, encode(t, rds, response(resources.RouteConfigTypeURL, chain.Routes[0])))
	c := newClient(t, dir)

	all := clienttest.NewRecorder[*resources.Listener]()
	defer client.WatchAll(c, resources.ListenerType, all)()
	got := map[string]bool{}
	for range 2 {
		got[all.Want(ctx, t, clienttest.Changed, nil).Value.Name] = true
	}
	if !got["svc"] || !got["other"] {
		t.Fatalf("WatchAll of Listeners got %v, want svc and other", got)
	}
	routes := clienttest.NewRecorder[*resources.RouteConfig]()
	defer client.WatchAll(c, resources.RouteConfigType, routes)()
	if e := routes.Want(ctx, t, clienttest.Changed, nil); e.Value.Name != "route-svc" {
		t.Fatalf("WatchAll of RouteConfigurations got %v, want route-svc", e)
	}
	one := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", one)()
	one.Want(ctx, t, clienttest.Changed, nil)
}
