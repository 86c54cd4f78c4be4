// SPDX-License-Identifier: Apache-2.0

package router

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

type fixedPicker struct{}

func (fixedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, nil
}

// benchPicker returns a picker over 100 routes of 10 header matchers
// each (x-h0 … x-h9 exact), route i wanting value(i, j) for x-hj; every
// route goes to one cluster with a READY locality.
func benchPicker(b *testing.B, value func(i, j int) string) *picker {
	vh := resources.VirtualHost{Name: "vh", Domains: []string{"*"}}
	for i := range 100 {
		m := resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/", CaseSensitive: true}
		for j := range 10 {
			m.Headers = append(m.Headers, resources.HeaderMatcher{Name: fmt.Sprintf("x-h%d", j), Kind: resources.HeaderMatchExact, Value: value(i, j)})
		}
		vh.Routes = append(vh.Routes, resources.Route{Match: m, Action: resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: "c"}})
	}
	return pickerOver(b, &vh)
}

// pickerOver returns a picker over the routes of vh, whose every route
// goes to cluster "c", of one READY locality.
func pickerOver(b *testing.B, vh *resources.VirtualHost) *picker {
	leaf := &depmgr.ClusterConfig{
		Name:    "c",
		Cluster: &resources.Cluster{Name: "c", Kind: resources.ClusterKindEDS, MaxRequests: 1 << 30},
		Endpoints: &resources.Endpoints{ClusterName: "c", Localities: []resources.Locality{{Weight: 1, Endpoints: []resources.Endpoint{
			{Addresses: []string{"10.0.0.1:80"}, HealthStatus: resources.HealthStatusHealthy, Weight: 1},
		}}}},
	}
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{*vh}}
	dp, err := dataplane.Build(dataplane.Snapshot{
		RouteConfig: rc, VirtualHost: &rc.VirtualHosts[0],
		Cluster: func(string) *depmgr.ClusterResult { return &depmgr.ClusterResult{Name: "c", Config: leaf} },
	}, dataplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	prio := &Priority{Priority: dp.Clusters["c"].Priorities[0], Children: []ChildConfig{{Weight: 1}}}
	cfg := &Config{DP: dp, Clusters: map[string]*Cluster{"c": {DP: dp.Clusters["c"], Priorities: []*Priority{prio}}}}
	pp := newPrioPicker(prio, new(atomic.Int64), &clusterRef{})
	pp.ready, pp.total = []weightedPicker{{cum: 1, p: fixedPicker{}}}, 1
	return &picker{cfg: cfg, clusters: map[string]*clusterPicker{"c": {prio: pp}}}
}

// BenchmarkPick measures one pick over 100 routes of 10 exact header
// matchers, the RPC (10 headers) matching the last route:
//
//   - distinct: route i wants "v<i>" in every header, so each other route
//     fails on its first matcher (100 distinct matchers tried);
//   - shared-prefix: every route wants "v" in x-h0..x-h8 and "w<i>" in
//     x-h9: the router evaluates x-h9 first (the rarest matcher) and
//     equal matchers once per RPC, so each other route fails at once.
//
// A pick allocates once per header it reads that the RPC has (10 here):
// metadata.ValueFromOutgoingContext copies the values, and gRPC Go has
// no public accessor to the outgoing metadata that does not copy
// (FromOutgoingContext copies every header). The rest of a pick does not
// allocate unless load is reported (BenchmarkPickPaths: 0).
func BenchmarkPick(b *testing.B) {
	for _, bc := range []struct {
		name  string
		value func(i, j int) string
	}{
		{"distinct", func(i, _ int) string { return fmt.Sprintf("v%d", i) }},
		{"shared-prefix", func(i, j int) string {
			if j < 9 {
				return "v"
			}
			return fmt.Sprintf("w%d", i)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := benchPicker(b, bc.value)
			md := metadata.MD{}
			for j := range 10 {
				md.Set(fmt.Sprintf("x-h%d", j), bc.value(99, j))
			}
			ctx := metadata.NewOutgoingContext(context.Background(), md)
			info := balancer.PickInfo{FullMethodName: "/pkg.Svc/Method", Ctx: ctx}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				res, err := p.Pick(info)
				if err != nil {
					b.Fatal(err)
				}
				res.Done(balancer.DoneInfo{})
			}
		})
	}
}

// BenchmarkPickPaths measures one pick over 100 routes matching path
// prefixes only ("/svc<i>/"), the RPC matching the last one.
func BenchmarkPickPaths(b *testing.B) {
	vh := resources.VirtualHost{Name: "vh", Domains: []string{"*"}}
	for i := range 100 {
		m := resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: fmt.Sprintf("/svc%d/", i), CaseSensitive: true}
		vh.Routes = append(vh.Routes, resources.Route{Match: m, Action: resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: "c"}})
	}
	p := pickerOver(b, &vh)
	info := balancer.PickInfo{FullMethodName: "/svc99/Method", Ctx: context.Background()}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res, err := p.Pick(info)
		if err != nil {
			b.Fatal(err)
		}
		res.Done(balancer.DoneInfo{})
	}
}
