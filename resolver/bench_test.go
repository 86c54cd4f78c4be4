// SPDX-License-Identifier: Apache-2.0

package resolver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/resources"
)

type fixedPicker struct{}

func (fixedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, nil
}

// benchPicker returns a picker over 100 routes of 10 header matchers
// each (x-h0 … x-h9), route i wanting x-hj = "v<i>" for j < lastFrom and
// x-hj = "w<i>" for the others; every route goes to one cluster with a
// READY locality.
func benchPicker(lastFrom int) *picker {
	cfg := &routerConfig{clusters: map[string]*clusterConfig{}}
	prio := &priorityConfig{leaf: "c", maxRequests: 1 << 30, localities: []localityConfig{{weight: 1}}}
	cfg.clusters["c"] = &clusterConfig{name: "c", priorities: []*priorityConfig{prio}}
	names := headerIndex{}
	for i := range 100 {
		m := resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/", CaseSensitive: true}
		for j := range 10 {
			v := fmt.Sprintf("v%d", i)
			if j >= lastFrom {
				v = fmt.Sprintf("w%d", i)
			}
			m.Headers = append(m.Headers, resources.HeaderMatcher{Name: fmt.Sprintf("x-h%d", j), Kind: resources.HeaderMatchExact, Value: v})
		}
		cfg.routes = append(cfg.routes, route{match: compileMatch(&m, names), action: resources.RouteActionCluster, targets: []weightedTarget{{cluster: "c", cum: 1}}, total: 1})
	}
	pp := &prioPicker{cfg: prio, counter: new(atomic.Int64), ready: []weightedPicker{{cum: 1, p: fixedPicker{}}}, total: 1}
	return &picker{cfg: cfg, clusters: map[string]*clusterPicker{"c": {prio: pp}}}
}

// BenchmarkPick measures one pick: 100 routes of 10 header matchers, the
// RPC matching the last route. "first-header-differs": each other route
// fails on its first matcher; "last-header-differs": on its tenth (the
// worst case, 991 header matches).
func BenchmarkPick(b *testing.B) {
	for _, bc := range []struct {
		name     string
		lastFrom int
	}{{"first-header-differs", 0}, {"last-header-differs", 9}} {
		b.Run(bc.name, func(b *testing.B) {
			p := benchPicker(bc.lastFrom)
			md := metadata.MD{}
			for j := range 10 {
				v := "v99"
				if j >= bc.lastFrom {
					v = "w99"
				}
				md.Set(fmt.Sprintf("x-h%d", j), v)
			}
			// All routes but the last want v<i>/w<i> for i < 99: with
			// lastFrom 9, routes i < 99 fail on x-h0 unless... make
			// them fail last: give the RPC the values of every route
			// for x-h0..x-h8 is impossible, so the worst case is
			// emulated by routes sharing the first nine values.
			if bc.lastFrom == 9 {
				for i := range 99 {
					for j := range 9 {
						p.cfg.routes[i].match.headers[j].hm.Value = md.Get(fmt.Sprintf("x-h%d", j))[0]
					}
				}
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
