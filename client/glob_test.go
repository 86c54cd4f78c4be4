// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestGlob_DeltaOnAuthorityServer checks xdstp glob collections (xRFC
// TP1) over delta on an authority's own management server: the glob is
// subscribed there (and nothing on the top-level server); its members are
// delivered and cached, other names ignored; removed_resources deletes a
// member; the last cancel unsubscribes from the glob.
func TestGlob_DeltaOnAuthorityServer(t *testing.T) {
	ctx := testContext(t)
	top := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	auth := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, top, testutil.BootstrapOptions{Authorities: map[string]string{"auth": auth.Address()}}, client.WithDelta())
	const (
		glob  = "xdstp://auth/envoy.config.cluster.v3.Cluster/pool/*"
		c1    = "xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c1"
		c2    = "xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c2"
		other = "xdstp://auth/envoy.config.cluster.v3.Cluster/other/c3"
	)
	w := newRecorder[*resources.Cluster]()
	cancel := client.Watch(c, resources.ClusterType, glob, w)
	wantDeltaRequest(t, auth, true, sub(cds, glob))

	nonce := sendDelta(t, auth, deltaResponse(cds, nil,
		deltaResource{name: c1, version: "1", msg: testutil.Cluster(c1, "eds")},
		deltaResource{name: c2, version: "1", msg: testutil.Cluster(c2, "eds")},
		deltaResource{name: other, version: "1", msg: testutil.Cluster(other, "eds")}))
	wantDeltaRequest(t, auth, false, ack(cds, nonce))
	for _, want := range []string{c1, c2} {
		if e := w.wantKind(ctx, t, changed, nil); e.value.Name != want {
			t.Fatalf("glob watcher got %v, want %s", e, want)
		}
	}
	w.wantNone(t, defaultTestShortTimeout)
	if dumpEntry(c, cds, c2) == nil || dumpEntry(c, cds, other) != nil {
		t.Fatalf("Dump = %v, want the members and not the other name", c.Dump())
	}

	// A second watch of the glob gets the cached members at once.
	w2 := newRecorder[*resources.Cluster]()
	cancel2 := client.Watch(c, resources.ClusterType, glob, w2)
	w2.wantKind(ctx, t, changed, nil)
	w2.wantKind(ctx, t, changed, nil)
	cancel2()

	nonce = sendDelta(t, auth, deltaResponse(cds, []string{c1}))
	wantDeltaRequest(t, auth, false, ack(cds, nonce))
	e := w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	var re *client.ResourceError
	if !errors.As(e.err, &re) || re.Name != c1 {
		t.Fatalf("error = %v, want one naming %s", e.err, c1)
	}

	const solo = "xdstp://auth/envoy.config.cluster.v3.Cluster/solo"
	defer client.Watch(c, resources.ClusterType, solo, newRecorder[*resources.Cluster]())()
	wantDeltaRequest(t, auth, false, sub(cds, solo))
	cancel()
	wantDeltaRequest(t, auth, false, unsub(cds, glob))

	if n := len(top.Requests()); n != 0 {
		t.Fatalf("the top-level server got %d requests, want none", n)
	}
}

// TestGlob_Match checks which names belong to a glob collection.
func TestGlob_Match(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c1", true},
		{"xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c1/deeper", false},
		{"xdstp://auth/envoy.config.cluster.v3.Cluster/pool/", false},
		{"xdstp://auth/envoy.config.cluster.v3.Cluster/poolx/c1", false},
		{"xdstp://other/envoy.config.cluster.v3.Cluster/pool/c1", false},
		{"xdstp://auth/envoy.config.cluster.v3.Cluster/pool/c1?k=v", false},
	} {
		if got := client.GlobMatch("xdstp://auth/envoy.config.cluster.v3.Cluster/pool/*", tc.name); got != tc.want {
			t.Errorf("GlobMatch(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
