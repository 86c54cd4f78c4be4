// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

type fixedPicker struct{}

func (fixedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, nil
}

// benchPicker returns a picker over 100 routes of 10 header matchers
// each (x-h0 … x-h9 exact), route i wanting value(i, j) for x-hj; every
// route goes to one cluster with a READY locality.
func benchPicker(value func(i, j int) string) *picker {
	cfg := &routerConfig{clusters: map[string]*clusterConfig{}}
	prio := &priorityConfig{leaf: "c", maxRequests: 1 << 30, localities: []localityConfig{{weight: 1}}}
	cfg.clusters["c"] = &clusterConfig{name: "c", priorities: []*priorityConfig{prio}}
	names := routing.NewIndex()
	for i := range 100 {
		m := resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/", CaseSensitive: true}
		for j := range 10 {
			m.Headers = append(m.Headers, resources.HeaderMatcher{Name: fmt.Sprintf("x-h%d", j), Kind: resources.HeaderMatchExact, Value: value(i, j)})
		}
		cfg.routes = append(cfg.routes, route{match: routing.Compile(&m, names), action: resources.RouteActionCluster, targets: []weightedTarget{{cluster: "c", cum: 1}}, total: 1})
	}
	orderRoutes(cfg.routes)
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
			p := benchPicker(bc.value)
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
	p := benchPicker(func(int, int) string { return "" })
	for i := range p.cfg.routes {
		m := resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: fmt.Sprintf("/svc%d/", i), CaseSensitive: true}
		p.cfg.routes[i].match = routing.Compile(&m, nil)
	}
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
