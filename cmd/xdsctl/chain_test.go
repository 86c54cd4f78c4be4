// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3aggregateclusterpb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
)

// dumpedKeys returns "TypeName/name" of every resource in c's dump.
func dumpedKeys(c *client.Client) []string {
	var out []string
	for _, g := range c.Dump().GetGenericXdsConfigs() {
		out = append(out, shortTypeName(g.GetTypeUrl())+"/"+g.GetName())
	}
	return out
}

// waitForDump polls c's dump until it lists exactly want, in dump order.
func waitForDump(ctx context.Context, t *testing.T, c *client.Client, want []string) {
	t.Helper()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		got := dumpedKeys(c)
		if slices.Equal(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("watched resources = %q, want %q", got, want)
		case <-ticker.C:
		}
	}
}

// TestFollowChain checks the demo's chain follower:
//  1. A Listener with an inline RouteConfiguration routes to an aggregate
//     cluster of an EDS cluster and a LOGICAL_DNS cluster: every cluster
//     and the EDS cluster's endpoints (named by the cluster, no EDS
//     service name) are watched, and no RouteConfiguration.
//  2. The Listener switches to RDS, to a route to another cluster: the new
//     chain is watched and every watch of the old one is cancelled.
func TestFollowChain(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	aggregate := &v3clusterpb.Cluster{
		Name: "agg",
		ClusterDiscoveryType: &v3clusterpb.Cluster_ClusterType{ClusterType: &v3clusterpb.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: testutil.MarshalAny(&v3aggregateclusterpb.ClusterConfig{Clusters: []string{"c1", "dns"}}),
		}},
	}
	dns := &v3clusterpb.Cluster{
		Name:                 "dns",
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_LOGICAL_DNS},
		LoadAssignment:       testutil.Endpoints("dns", "dns.example.com", 443),
	}
	ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.ListenerInline("svc", testutil.RouteConfig("inline", "*", "agg"))},
		Clusters:  []*v3clusterpb.Cluster{aggregate, testutil.Cluster("c1", ""), dns},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("c1", "127.0.0.1", 80)},
	})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var out syncBuffer
	e := &env{stdout: &out, stderr: &out, now: time.Now}
	f := followChain(c, e, "svc", func(ev event) { out.Write([]byte(formatEventText(ev))) })
	defer f.stop()
	waitForOutput(ctx, t, &out, "the inline chain", containsAll(
		"] Listener svc (version 1): inline RouteConfiguration",
		"] Cluster agg (version 1): AGGREGATE of [c1, dns]",
		"] Cluster c1 (version 1): EDS,",
		"] Cluster dns (version 1): LOGICAL_DNS, DNS dns.example.com:443",
		"] ClusterLoadAssignment c1 (version 1): 1 endpoint in 1 locality",
	))
	waitForDump(ctx, t, c, []string{"Listener/svc", "Cluster/agg", "Cluster/c1", "Cluster/dns", "ClusterLoadAssignment/c1"})

	next := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	next.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "*", "c2")}
	next.Clusters = []*v3clusterpb.Cluster{testutil.Cluster("c2", "eds-c2")}
	next.Endpoints = []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-c2", "127.0.0.1", 81, 82)}
	ms.Update("", next)
	waitForOutput(ctx, t, &out, "the RDS chain", containsAll(
		`] Listener svc (version 2): routes via RouteConfiguration "route-svc"`,
		"] ClusterLoadAssignment eds-c2 (version 2): 2 endpoints in 1 locality",
	))
	waitForDump(ctx, t, c, []string{"Listener/svc", "RouteConfiguration/route-svc", "Cluster/c2", "ClusterLoadAssignment/eds-c2"})
}

// TestRouteClusters checks that every cluster a route names is listed
// once, in route order.
func TestRouteClusters(t *testing.T) {
	_, rc, err := resources.RouteConfigType.DecodeTyped(testutil.MarshalAny(goldenRouteConfig("r")))
	if err != nil {
		t.Fatal(err)
	}
	got := routeClusters(rc)
	if want := []string{"api-get", "api-list", "api-v1", "api-v2"}; !slices.Equal(got, want) {
		t.Fatalf("routeClusters() = %q, want %q", got, want)
	}
}
