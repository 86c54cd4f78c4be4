// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// sendAndWait sends each response and waits for the client's answer to it.
func sendAndWait(t *testing.T, ms *testutil.ManagementServer, resps ...*v3discoverypb.DiscoveryResponse) {
	t.Helper()
	ctx := testContext(t)
	for _, resp := range resps {
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
	}
}

// TestWatch_NewWatcherAfterNACK_ValueThenAmbientError checks with
// gRFC A88's order: a watch started after a NACK of a cached resource gets
// the cached value, then the NACK error as an AmbientError.
//
//  1. Watch "a"; the server sends a valid version 1, then an invalid 2.
//  2. A second watch of "a" gets ResourceChanged(version 1 value), then
//     AmbientError wrapping ErrResourceInvalid, and nothing else.
func TestWatch_NewWatcherAfterNACK_ValueThenAmbientError(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w1 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w1)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	sendAndWait(t, ms,
		discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "v1")),
		discoveryResponse(resources.ClusterTypeURL, "2", invalidCluster("a")))
	w1.wantKind(ctx, t, changed, nil)
	w1.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)

	w2 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w2)()
	if got := w2.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "v1" {
		t.Fatalf("new watcher got %+v, want the cached version 1 value", got)
	}
	w2.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
	w2.wantNone(t, defaultTestShortTimeout)
}

// TestWatch_NewWatcherAfterNACK_NoCacheResourceError checks for a
// resource never received valid: a new watch gets the NACK error as a
// ResourceError.
func TestWatch_NewWatcherAfterNACK_NoCacheResourceError(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w1 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w1)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	sendAndWait(t, ms, discoveryResponse(resources.ClusterTypeURL, "1", invalidCluster("a")))
	w1.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)

	w2 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w2)()
	w2.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
	w2.wantNone(t, defaultTestShortTimeout)
}

// TestWatch_SameValueAfterNACKIsDeliveredAgain checks R-13.5(c): after a
// NACK, a valid version with the same bytes as the cached value is
// delivered again, which tells the watcher the error is over; a further
// identical version is not delivered.
func TestWatch_SameValueAfterNACKIsDeliveredAgain(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	sendAndWait(t, ms,
		discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "v1")),
		discoveryResponse(resources.ClusterTypeURL, "2", invalidCluster("a")),
		discoveryResponse(resources.ClusterTypeURL, "3", testutil.Cluster("a", "v1")))
	w.wantKind(ctx, t, changed, nil)
	w.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
	if got := w.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "v1" {
		t.Fatalf("after the NACK, got %+v, want the version 3 (= version 1) value again", got)
	}
	sendAndWait(t, ms, discoveryResponse(resources.ClusterTypeURL, "4", testutil.Cluster("a", "v1")))
	w.wantNone(t, defaultTestShortTimeout)
	if g := dumpEntry(c, resources.ClusterTypeURL, "a"); g.GetVersionInfo() != "4" || g.GetErrorState() != nil {
		t.Fatalf("CSDS entry = %v, want ACKED at version 4 without error_state", g)
	}
}
