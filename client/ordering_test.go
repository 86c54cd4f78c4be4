// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// serialRecorder is a recorder that also checks that no two watcher
// methods run at once.
type serialRecorder struct {
	*recorder[*resources.Cluster]
	busy *sync.Mutex
	t    *testing.T
}

func (r serialRecorder) guard() func() {
	if !r.busy.TryLock() {
		r.t.Error("two watcher methods ran at the same time")
		return func() {}
	}
	return r.busy.Unlock
}

func (r serialRecorder) ResourceChanged(v *resources.Cluster, done func()) {
	defer r.guard()()
	r.recorder.ResourceChanged(v, done)
}

func (r serialRecorder) ResourceError(err error, done func()) {
	defer r.guard()()
	r.recorder.ResourceError(err, done)
}

func (r serialRecorder) AmbientError(err error, done func()) {
	defer r.guard()()
	r.recorder.AmbientError(err, done)
}

// TestOrdering_ResponseOrderDeletionsLast checks:
// watcher methods never overlap, updates are delivered in the order of the
// response's resources, and deletions come after every update of that
// response, in name order.
func TestOrdering_ResponseOrderDeletionsLast(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	log := &callLog{}
	busy := &sync.Mutex{}
	names := []string{"a", "b", "c", "d"}
	recs := map[string]*recorder[*resources.Cluster]{}
	for _, n := range names {
		r := newRecorder[*resources.Cluster]()
		r.log, r.label = log, n
		recs[n] = r
		defer client.Watch(c, resources.ClusterType, n, serialRecorder{recorder: r, busy: busy, t: t})()
	}
	waitForNames(t, ms, resources.ClusterTypeURL, names...)

	send := func(version string, clusters ...*v3clusterpb.Cluster) {
		t.Helper()
		resp := discoveryResponse(resources.ClusterTypeURL, version)
		for _, cl := range clusters {
			resp.Resources = append(resp.Resources, testutil.MarshalAny(cl))
		}
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
	}
	send("1", testutil.Cluster("c", ""), testutil.Cluster("a", ""), testutil.Cluster("d", ""), testutil.Cluster("b", ""))
	for _, n := range names {
		recs[n].wantKind(ctx, t, changed, nil)
	}
	// d and c left out (deleted), b and a changed, in that order.
	send("2", testutil.Cluster("b", "b2"), testutil.Cluster("a", "a2"))
	recs["a"].wantKind(ctx, t, changed, nil)
	recs["b"].wantKind(ctx, t, changed, nil)
	recs["c"].wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	recs["d"].wantKind(ctx, t, resourceError, client.ErrResourceNotFound)

	want := []string{
		"c:changed", "a:changed", "d:changed", "b:changed",
		"b:changed", "a:changed", "c:resource_error", "d:resource_error",
	}
	if diff := cmp.Diff(log.get(), want); diff != "" {
		t.Fatalf("watcher call order (-got, +want):\n%s", diff)
	}
}
