// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"context"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// TestDepMgr_StaleCallback_CapturedName checks R-16.9 (BEAT): a callback
// of an RDS watch that was replaced (here called by hand, as a late
// callback queued before the cancel would run) has no effect, because the
// watch acts only while it is the current one, whatever name is current.
// gRPC Go passes the current name to such a callback, so its stale-name
// check passes. The same holds for a cluster watch.
//  1. svc → route-1 → c1 is published.
//  2. The Listener switches to route-2 → c1; route-2 is published.
//  3. The route-1 watch and a cancelled c2 watch deliver values: no
//     ResourceChanged, and the state does not change.
func TestDepMgr_StaleCallback_CapturedName(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	res := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-1")},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-1", "svc", "c1")},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("c1", "")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("c1", "127.0.0.1", 80)},
	}
	ms.Update("", res)
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	updates := make(chan *XDSConfig, 10)
	m := New(c, "svc", watcher.Funcs[*XDSConfig]{OnChanged: func(cfg *XDSConfig) { updates <- cfg }})
	defer m.Close()
	next := func() *XDSConfig {
		t.Helper()
		select {
		case cfg := <-updates:
			return cfg
		case <-ctx.Done():
			t.Fatal("no ResourceChanged")
			return nil
		}
	}
	next()
	m.mu.Lock()
	old := m.rds
	stale := &clusterNode{m: m, name: "c2"} // a watch cancelled earlier
	m.mu.Unlock()

	res.Listeners = []*v3listenerpb.Listener{testutil.Listener("svc", "route-2")}
	res.Routes = append(res.Routes, testutil.RouteConfig("route-2", "svc", "c1"))
	ms.Update("", res)
	if cfg := next(); cfg.RouteConfig.Name != "route-2" {
		t.Fatalf("RouteConfig = %q, want route-2", cfg.RouteConfig.Name)
	}

	_, staleRC, err := resources.RouteConfigType.DecodeTyped(testutil.MarshalAny(testutil.RouteConfig("route-1", "svc", "c-stale")))
	if err != nil {
		t.Fatal(err)
	}
	_, staleCluster, err := resources.ClusterType.DecodeTyped(testutil.MarshalAny(testutil.Cluster("c2", "")))
	if err != nil {
		t.Fatal(err)
	}
	old.ResourceChanged(client.Versioned[*resources.RouteConfig]{Value: staleRC}, func() {})
	old.ResourceError(client.ErrResourceNotFound, func() {})
	stale.ResourceChanged(client.Versioned[*resources.Cluster]{Value: staleCluster}, func() {})
	select {
	case cfg := <-updates:
		t.Fatalf("a stale callback published %q with clusters %v", cfg.RouteConfig.Name, cfg.ClusterNames())
	case <-time.After(10 * time.Millisecond):
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur.rc.Name != "route-2" || m.clusters.get("c-stale") != nil || m.clusters.get("c2") != nil || m.endpoints.get("c2") != nil {
		t.Fatalf("a stale callback changed the state: route config %q, %d clusters", m.cur.rc.Name, m.clusters.len())
	}
}
