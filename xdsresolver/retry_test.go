// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdsresolver/internal/router"
)

// TestRetryServiceConfig checks how the retry policies of routes become
// the method configs of the service config (gRFC A44 on gRPC's service
// config): one entry per method class, a policy only where every route
// that can match the class's RPCs has it, conflicts reported.
func TestRetryServiceConfig(t *testing.T) {
	p1 := &resources.RetryPolicy{RetryOn: []codes.Code{codes.Unavailable}, NumRetries: 3, BaseInterval: 25 * time.Millisecond, MaxInterval: 250 * time.Millisecond}
	p2 := &resources.RetryPolicy{RetryOn: []codes.Code{codes.Canceled, codes.ResourceExhausted}, NumRetries: 1, BaseInterval: time.Second, MaxInterval: 1500 * time.Millisecond}
	const (
		j1 = `{"maxAttempts":4,"initialBackoff":"0.025s","maxBackoff":"0.25s","backoffMultiplier":2,"retryableStatusCodes":[14]}`
		j2 = `{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1.5s","backoffMultiplier":2,"retryableStatusCodes":[1,8]}`
		lb = `{"loadBalancingConfig":[{"proxyless_xds_router_experimental":{}}]`
	)
	type r struct {
		m      resources.RouteMatch
		p      *resources.RetryPolicy
		action resources.RouteActionKind
	}
	prefix := func(p string) resources.RouteMatch {
		return resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: p, CaseSensitive: true}
	}
	path := func(p string) resources.RouteMatch {
		return resources.RouteMatch{PathKind: resources.PathKindPath, Path: p, CaseSensitive: true}
	}
	withHeader := func(m resources.RouteMatch) resources.RouteMatch {
		m.Headers = []resources.HeaderMatcher{{Name: "x", Kind: resources.HeaderMatchPresent, Present: true}}
		return m
	}
	half := uint32(500_000)
	tests := []struct {
		name          string
		routes        []r
		vh            *resources.RetryPolicy
		want          string
		wantConflicts int
		canDisable    bool // DialOptions' interceptors
	}{
		{"no policy", []r{{m: prefix("")}}, nil, router.ServiceConfig, 0, false},
		{"retry_on without a gRPC code", []r{{m: prefix(""), p: &resources.RetryPolicy{NumRetries: 2}}}, nil, router.ServiceConfig, 0, false},
		{"one route", []r{{m: prefix(""), p: p1}}, nil, lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"the virtual host's", []r{{m: prefix("")}}, p1, lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"the route's over the virtual host's", []r{{m: path("/S/M"), p: p2}, {m: prefix("")}}, p1,
			lb + `,"methodConfig":[{"name":[{"service":"S","method":"M"}],"retryPolicy":` + j2 + `},{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"a method without, the rest with", []r{{m: path("/S/M")}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{"service":"S","method":"M"}]},{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"a service", []r{{m: prefix("/S/"), p: p2}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{"service":"S"}],"retryPolicy":` + j2 + `},{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"a service, nothing else", []r{{m: prefix("/S/"), p: p2}}, nil,
			lb + `,"methodConfig":[{"name":[{"service":"S"}],"retryPolicy":` + j2 + `}]}`, 0, false},
		{"same policy behind headers", []r{{m: withHeader(prefix("")), p: p1}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"other policy behind headers", []r{{m: withHeader(prefix("")), p: p2}, {m: prefix(""), p: p1}}, nil, router.ServiceConfig, 2, false},
		{"other policy behind headers, for one service", []r{{m: withHeader(prefix("/S/")), p: p2}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{"service":"S"}]},{"name":[{}],"retryPolicy":` + j1 + `}]}`, 2, false},
		{"runtime fraction", []r{{m: func() resources.RouteMatch { m := prefix(""); m.FractionPerMillion = &half; return m }(), p: p2}, {m: prefix(""), p: p1}}, nil, router.ServiceConfig, 2, false},
		{"a partial prefix", []r{{m: prefix("/S/Get"), p: p2}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{"service":"S"}]},{"name":[{}],"retryPolicy":` + j1 + `}]}`, 2, false},
		{"a regex", []r{{m: resources.RouteMatch{PathKind: resources.PathKindSafeRegex, Regex: regexp.MustCompile(`^(?:/S/.*)$`)}, p: p2}, {m: prefix(""), p: p1}}, nil, router.ServiceConfig, 2, false},
		{"non_forwarding routes do not conflict", []r{{m: withHeader(prefix("")), action: resources.RouteActionNonForwarding}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"case-insensitive method", []r{{m: resources.RouteMatch{PathKind: resources.PathKindPath, Path: "/s/m"}, p: p2}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{"service":"s","method":"m"}],"retryPolicy":` + j2 + `}]}`, 2, false},
		{"routes after a catch-all do not count", []r{{m: prefix(""), p: p1}, {m: withHeader(prefix("")), p: p2}}, nil,
			lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, false},
		{"no policy behind headers", []r{{m: withHeader(prefix(""))}, {m: prefix(""), p: p1}}, nil, router.ServiceConfig, 2, false},
		{"no policy behind headers, interceptors", []r{{m: withHeader(prefix(""))}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, true},
		{"a method prefix without policy, interceptors", []r{{m: prefix("/S/M")}, {m: prefix(""), p: p1}}, nil,
			lb + `,"methodConfig":[{"name":[{}],"retryPolicy":` + j1 + `}]}`, 0, true},
		{"other policies behind headers, interceptors", []r{{m: withHeader(prefix("")), p: p2}, {m: prefix(""), p: p1}}, nil, router.ServiceConfig, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vh := &resources.VirtualHost{Name: "vh", Domains: []string{"*"}, RetryPolicy: tt.vh}
			for _, r := range tt.routes {
				action := r.action
				if action == 0 {
					action = resources.RouteActionCluster
				}
				vh.Routes = append(vh.Routes, resources.Route{Match: r.m, Action: resources.RouteAction{Kind: action, Cluster: "c", RetryPolicy: r.p}})
			}
			dp, err := dataplane.Build(dataplane.Snapshot{VirtualHost: vh, Cluster: func(string) *depmgr.ClusterResult { return nil }}, dataplane.Options{})
			if err != nil {
				t.Fatal(err)
			}
			retry := make([]retryKey, len(dp.Routes))
			for i := range dp.Routes {
				retry[i] = routePolicy(&dp.Routes[i], vh)
			}
			classes, conflicts, _ := retryClasses(dp.Routes, retry, tt.canDisable)
			if got := serviceConfigJSON(classes); got != tt.want {
				t.Errorf("service config:\n got %s\nwant %s", got, tt.want)
			}
			if len(conflicts) != tt.wantConflicts || !slices.IsSorted(conflicts) {
				t.Errorf("conflicts = %q; want %d, sorted", conflicts, tt.wantConflicts)
			}
		})
	}
}
