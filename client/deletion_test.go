// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"slices"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// dumpEntry returns the CSDS entry of (typeURL, name), or nil.
func dumpEntry(c *client.Client, typeURL, name string) *v3statuspb.ClientConfig_GenericXdsConfig {
	for _, g := range c.Dump().GetGenericXdsConfigs() {
		if g.GetTypeUrl() == typeURL && g.GetName() == name {
			return g
		}
	}
	return nil
}

// TestDeletion_ClusterLeftOutIsDeleted checks: a cached Cluster that
// a CDS response leaves out is deleted (ResourceError wrapping
// ErrResourceNotFound, status DOES_NOT_EXIST), only once, and comes back
// when it reappears.
func TestDeletion_ClusterLeftOutIsDeleted(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	ms.Update("", chain)
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wl := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", wl)()
	wc := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", wc)()
	wl.wantKind(ctx, t, changed, nil)
	wc.wantKind(ctx, t, changed, nil)

	withoutCluster := chain
	withoutCluster.Clusters = nil
	ms.Update("", withoutCluster)
	wc.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	if g := dumpEntry(c, resources.ClusterTypeURL, "cluster-svc"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST || g.GetXdsConfig() != nil {
		t.Fatalf("CSDS entry after deletion = %v, want DOES_NOT_EXIST without config", g)
	}
	// Another response without it: not reported again.
	withoutCluster.Version = ""
	withoutCluster.Listeners = append(slices.Clone(chain.Listeners), testutil.Listener("other", "r"))
	ms.Update("", withoutCluster)
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Req.GetTypeUrl() == resources.ListenerTypeURL && r.Req.GetVersionInfo() == "3"
	}); err != nil {
		t.Fatal(err)
	}
	wc.wantNone(t, defaultTestShortTimeout)
	wl.wantNone(t, defaultTestShortTimeout)

	ms.Update("", chain)
	wc.wantKind(ctx, t, changed, nil)
}

// TestDeletion_IgnoreResourceDeletion checks: with the server feature
// ignore_resource_deletion, a left-out Listener keeps its cached value and
// its watchers hear nothing.
func TestDeletion_IgnoreResourceDeletion(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	ms.Update("", chain)
	c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: []string{bootstrap.FeatureIgnoreResourceDeletion}})
	wl := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", wl)()
	wl.wantKind(ctx, t, changed, nil)

	empty := testutil.Resources{Clusters: chain.Clusters}
	ms.Update("", empty)
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Req.GetTypeUrl() == resources.ListenerTypeURL && r.Req.GetVersionInfo() == "2"
	}); err != nil {
		t.Fatal(err)
	}
	wl.wantNone(t, defaultTestShortTimeout)
	if g := dumpEntry(c, resources.ListenerTypeURL, "svc"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED || g.GetXdsConfig() == nil {
		t.Fatalf("CSDS entry = %v, want ACKED with the cached config", g)
	}
	w2 := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w2)()
	w2.wantKind(ctx, t, changed, nil)
}

// TestDeletion_RouteAndEndpointsNeverDeletedByOmission checks: RDS
// and EDS responses that leave out a cached resource delete nothing.
func TestDeletion_RouteAndEndpointsNeverDeletedByOmission(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w1, w2 := newRecorder[*resources.RouteConfig](), newRecorder[*resources.RouteConfig]()
	defer client.Watch(c, resources.RouteConfigType, "r1", w1)()
	defer client.Watch(c, resources.RouteConfigType, "r2", w2)()
	e1 := newRecorder[*resources.Endpoints]()
	defer client.Watch(c, resources.EndpointsType, "e1", e1)()
	waitForNames(t, ms, resources.EndpointsTypeURL, "e1")
	waitForNamesAnyOrder(t, ms, resources.RouteConfigTypeURL, "r1", "r2")

	for _, resp := range []*v3discoverypb.DiscoveryResponse{
		discoveryResponse(resources.RouteConfigTypeURL, "1", testutil.RouteConfig("r1", "*", "c"), testutil.RouteConfig("r2", "*", "c")),
		discoveryResponse(resources.EndpointsTypeURL, "1", testutil.Endpoints("e1", "127.0.0.1", 80)),
	} {
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
	}
	w1.wantKind(ctx, t, changed, nil)
	w2.wantKind(ctx, t, changed, nil)
	e1.wantKind(ctx, t, changed, nil)

	for _, resp := range []*v3discoverypb.DiscoveryResponse{
		discoveryResponse(resources.RouteConfigTypeURL, "2", testutil.RouteConfig("r1", "*", "c2")),
		discoveryResponse(resources.EndpointsTypeURL, "2"),
	} {
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
	}
	w1.wantKind(ctx, t, changed, nil)
	w2.wantNone(t, defaultTestShortTimeout)
	e1.wantNone(t, defaultTestShortTimeout)
	for _, name := range []string{"r2"} {
		if g := dumpEntry(c, resources.RouteConfigTypeURL, name); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED {
			t.Fatalf("CSDS entry of %s = %v, want ACKED", name, g)
		}
	}
}

// TestDeletion_NACKedButCachedIsDeletable checks: a Cluster whose
// last update was NACKed still has its cached value and is deleted when a
// response leaves it out.
func TestDeletion_NACKedButCachedIsDeletable(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	for _, resp := range []*v3discoverypb.DiscoveryResponse{
		discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "")),
		discoveryResponse(resources.ClusterTypeURL, "2", invalidCluster("a")),
		discoveryResponse(resources.ClusterTypeURL, "3"),
	} {
		nonce, err := ms.SendResponse(ctx, resp)
		if err != nil {
			t.Fatal(err)
		}
		waitForNonce(t, ms, nonce)
	}
	w.wantKind(ctx, t, changed, nil)
	w.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
	w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
}
