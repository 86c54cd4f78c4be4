// SPDX-License-Identifier: Apache-2.0

package rest_test

import (
	"testing"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
)

// TestWildcard checks WatchAll over REST: the wildcard's empty name list
// (the legacy form, for Listener and Cluster) is polled, and a Watch of a
// name next to it is served from the same polls. On the old transport an
// empty list was never polled: WatchAll got nothing, and the named watch
// a false does-not-exist (xdsctl status --rest URL 'listener/*'
// listener/svc exited 4).
func TestWildcard(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.set("1", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, s)
	all := clienttest.NewRecorder[*resources.Listener]()
	defer client.WatchAll(c, resources.ListenerType, all)()
	if e := all.Want(ctx, t, clienttest.Changed, nil); e.Value.Name != "svc" {
		t.Fatalf("WatchAll got %v, want svc", e)
	}
	if r := s.nextRequest(ctx, t, listenerType); len(r.GetResourceNames()) != 0 {
		t.Fatalf("first poll names %q, want the wildcard's empty list", r.GetResourceNames())
	}
	one := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", one)()
	one.Want(ctx, t, clienttest.Changed, nil)
	one.WantNone(t, 50*time.Millisecond)
}
