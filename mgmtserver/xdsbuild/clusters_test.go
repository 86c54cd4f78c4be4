// SPDX-License-Identifier: Apache-2.0

package xdsbuild_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/resources"
)

// TestBuilders_ClusterKindsAndRoutes checks that the builders of
// builders_clusters.go pass the client's validation, and what they decode
// to.
func TestBuilders_ClusterKindsAndRoutes(t *testing.T) {
	t.Run("LogicalDNSCluster", func(t *testing.T) {
		name, c, err := resources.ClusterType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.LogicalDNSCluster("dns", "svc.example.com", 443)))
		if err != nil {
			t.Fatal(err)
		}
		if name != "dns" || c.Kind != resources.ClusterKindLogicalDNS || c.DNSHost != "svc.example.com" || c.DNSPort != 443 {
			t.Fatalf("Cluster = %q %+v, want LOGICAL_DNS svc.example.com:443", name, c)
		}
	})
	t.Run("AggregateCluster", func(t *testing.T) {
		name, c, err := resources.ClusterType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.AggregateCluster("agg", "a", "b")))
		if err != nil {
			t.Fatal(err)
		}
		if name != "agg" || c.Kind != resources.ClusterKindAggregate || !slices.Equal(c.AggregateClusters, []string{"a", "b"}) {
			t.Fatalf("Cluster = %q %+v, want AGGREGATE of [a b]", name, c)
		}
	})
	t.Run("RouteConfigWithVirtualHosts", func(t *testing.T) {
		rc := xdsbuild.RouteConfigWithVirtualHosts("r",
			xdsbuild.VirtualHost("vh1", []string{"a.example.com"}, xdsbuild.ClusterRoute("/x/", "c1")),
			xdsbuild.VirtualHost("vh2", []string{"*"}, xdsbuild.WeightedClustersRoute("",
				xdsbuild.ClusterWeight{Name: "c2", Weight: 3}, xdsbuild.ClusterWeight{Name: "c3", Weight: 1})),
		)
		_, got, err := resources.RouteConfigType.DecodeTyped(xdsbuild.MarshalAny(rc))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.VirtualHosts) != 2 {
			t.Fatalf("RouteConfig has %d virtual hosts, want 2", len(got.VirtualHosts))
		}
		r1 := got.VirtualHosts[0].Routes[0]
		if r1.Match.Prefix != "/x/" || r1.Action.Kind != resources.RouteActionCluster || r1.Action.Cluster != "c1" {
			t.Errorf("vh1 route = %+v, want prefix /x/ to c1", r1)
		}
		var wc []string
		for _, c := range got.VirtualHosts[1].Routes[0].Action.WeightedClusters {
			wc = append(wc, fmt.Sprintf("%s:%d", c.Name, c.Weight))
		}
		if want := []string{"c2:3", "c3:1"}; !slices.Equal(wc, want) {
			t.Errorf("vh2 weighted clusters = %q, want %q", wc, want)
		}
	})
	t.Run("RouteConfigToClusters", func(t *testing.T) {
		_, got, err := resources.RouteConfigType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.RouteConfigToClusters("r", "svc", "c0", "c1")))
		if err != nil {
			t.Fatal(err)
		}
		vh := got.VirtualHosts[0]
		var clusters, prefixes []string
		for _, r := range vh.Routes {
			clusters = append(clusters, r.Action.Cluster)
			prefixes = append(prefixes, r.Match.Prefix)
		}
		if !slices.Equal(vh.Domains, []string{"svc"}) || !slices.Equal(clusters, []string{"c0", "c1", "c0"}) ||
			!slices.Equal(prefixes, []string{"/c0/", "/c1/", ""}) {
			t.Fatalf("virtual host = %+v, want routes /c0/ → c0, /c1/ → c1, \"\" → c0 for domain svc", vh)
		}
	})
}
