// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// TestDump_StatusesAndErrorState checks the CSDS view:
// REQUESTED, ACKED with version and config, NACKED keeping the cached
// version with the rejected one in error_state, and DOES_NOT_EXIST, in type
// then name order, with the node.
func TestDump_StatusesAndErrorState(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, c := inMemory(t)
		// "missing" times out after 15 s; then the others are watched.
		wm := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "missing", wm)()
		wm.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
		for _, n := range []string{"acked", "nacked", "requested"} {
			defer client.Watch(c, resources.ClusterType, n, newRecorder[*resources.Cluster]())()
		}
		defer client.Watch(c, resources.ListenerType, "l", newRecorder[*resources.Listener]())()
		waitForNamesAnyOrder(t, ms, resources.ClusterTypeURL, "acked", "missing", "nacked", "requested")
		waitForNamesAnyOrder(t, ms, resources.ListenerTypeURL, "l")
		acked, nacked := testutil.Cluster("acked", ""), testutil.Cluster("nacked", "")
		for _, resp := range []*v3discoverypb.DiscoveryResponse{
			discoveryResponse(resources.ClusterTypeURL, "1", acked, nacked),
			discoveryResponse(resources.ClusterTypeURL, "2", acked, invalidCluster("nacked")),
		} {
			nonce, err := ms.SendResponse(ctx, resp)
			if err != nil {
				t.Fatal(err)
			}
			waitForNonce(t, ms, nonce)
		}
		synctest.Wait()

		got := c.Dump()
		var nackDetail string
		for _, g := range got.GetGenericXdsConfigs() {
			if g.GetName() == "nacked" {
				nackDetail = g.GetErrorState().GetDetails()
			}
		}
		if nackDetail == "" {
			t.Fatalf("no error_state details for the NACKed cluster in %v", got)
		}
		want := &v3statuspb.ClientConfig{
			Node: got.GetNode(),
			GenericXdsConfigs: []*v3statuspb.ClientConfig_GenericXdsConfig{
				{TypeUrl: resources.ListenerTypeURL, Name: "l", ClientStatus: v3adminpb.ClientResourceStatus_REQUESTED},
				{TypeUrl: resources.ClusterTypeURL, Name: "acked", VersionInfo: "2", ClientStatus: v3adminpb.ClientResourceStatus_ACKED, XdsConfig: testutil.MarshalAny(acked)},
				{TypeUrl: resources.ClusterTypeURL, Name: "missing", ClientStatus: v3adminpb.ClientResourceStatus_DOES_NOT_EXIST},
				{
					TypeUrl: resources.ClusterTypeURL, Name: "nacked", VersionInfo: "1", ClientStatus: v3adminpb.ClientResourceStatus_NACKED, XdsConfig: testutil.MarshalAny(nacked),
					ErrorState: &v3adminpb.UpdateFailureState{VersionInfo: "2", Details: nackDetail},
				},
				{TypeUrl: resources.ClusterTypeURL, Name: "requested", ClientStatus: v3adminpb.ClientResourceStatus_REQUESTED},
			},
		}
		if diff := cmp.Diff(got, want, protocmp.Transform(),
			protocmp.IgnoreFields(&v3statuspb.ClientConfig_GenericXdsConfig{}, "last_updated"),
			protocmp.IgnoreFields(&v3adminpb.UpdateFailureState{}, "last_update_attempt")); diff != "" {
			t.Fatalf("Dump() (-got, +want):\n%s", diff)
		}
		if got.GetNode().GetId() != "test-node" || got.GetNode().GetUserAgentName() != bootstrap.UserAgentName {
			t.Fatalf("Dump().node = %v, want the client's node", got.GetNode())
		}
	})
}

// TestDump_ResourceVersion checks ResourceVersion: inside ResourceChanged
// (before done) it is the version of the value delivered; it stays at the
// last valid version after a NACK, as Dump's version_info does;
// it is "" for names not cached.
func TestDump_ResourceVersion(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	versions := make(chan string, 10)
	defer client.Watch(c, resources.ClusterType, "a", watcher.Funcs[*resources.Cluster]{
		OnChanged: func(*resources.Cluster) { versions <- c.ResourceVersion(resources.ClusterType, "a") },
	})()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	if v := c.ResourceVersion(resources.ClusterType, "a"); v != "" {
		t.Fatalf("ResourceVersion before any response = %q, want empty", v)
	}
	sendAndWait(t, ms,
		discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "v1")),
		discoveryResponse(resources.ClusterTypeURL, "2", testutil.Cluster("a", "v2")),
		discoveryResponse(resources.ClusterTypeURL, "3", invalidCluster("a")))
	for _, want := range []string{"1", "2"} {
		select {
		case got := <-versions:
			if got != want {
				t.Fatalf("ResourceVersion in ResourceChanged = %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if v := c.ResourceVersion(resources.ClusterType, "a"); v != "2" {
		t.Fatalf("ResourceVersion after a NACK of version 3 = %q, want the cached version 2", v)
	}
	if v := c.ResourceVersion(resources.ClusterType, "unknown"); v != "" {
		t.Fatalf("ResourceVersion of an unknown name = %q, want empty", v)
	}
	if v := c.ResourceVersion(nil, "a"); v != "" {
		t.Fatalf("ResourceVersion(nil, a) = %q, want empty", v)
	}
	if o, ok := c.ResourceOrigin(nil, "a"); ok {
		t.Fatalf("ResourceOrigin(nil, a) = %+v, true; want false", o)
	}
}
