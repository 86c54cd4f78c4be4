// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	"github.com/proxyless/xds/xdshttp"
)

// benchResources is the configuration of BenchmarkTransport's xds case:
// routing, splits and retries configured but idle (issue 29): a route on
// a header the requests do not carry, then a default route splitting
// 50/50 between two clusters of the backend, with a retry policy (5xx,
// 2 retries, per-try timeout) that the backend's 200s never trigger.
func benchResources(be *backend) testutil.Resources {
	r := clientResources("svc")
	split := testutil.WeightedClustersRoute("/", testutil.ClusterWeight{Name: "c", Weight: 50}, testutil.ClusterWeight{Name: "c2", Weight: 50})
	split.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "5xx,reset", NumRetries: wrapperspb.UInt32(2), PerTryTimeout: durationpb.New(5 * time.Second)}
	canary := &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}, Headers: []*v3routepb.HeaderMatcher{{Name: "x-canary", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}}},
		Action: clusterAction("c2"),
	}
	r.Routes[0].VirtualHosts[0].Routes = []*v3routepb.Route{canary, split}
	r.Clusters = append(r.Clusters, testutil.Cluster("c2", ""))
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{backendEndpoints("c", be), backendEndpoints("c2", be)}
	return r
}

// BenchmarkTransport compares a GET through the xDS Transport (route,
// split, pick, circuit breaker, retry policy, the endpoint's
// *http.Transport; benchResources) with the same GET
// through a plain *http.Transport to the same backend, keep-alive
// connections, small bodies, the requests sent in parallel. The target
// (issue 29) is xds ≥ 0.9 × plain in requests per second.
func BenchmarkTransport(b *testing.B) {
	for _, name := range []string{"plain", "xds"} {
		b.Run(name, func(b *testing.B) {
			be := startBackend(b, "b", nil)
			base := http.DefaultTransport.(*http.Transport).Clone()
			base.MaxIdleConnsPerHost = 100
			var hc *http.Client
			url := be.srv.URL + "/bench"
			if name == "plain" {
				hc = &http.Client{Transport: base}
				b.Cleanup(base.CloseIdleConnections)
			} else {
				e := newCliEnv(b, xdshttp.WithBaseTransport(base))
				e.update(b, benchResources(be))
				hc, url = e.hc, "http://svc/bench"
			}
			if resp, err := hc.Get(url); err != nil { // the first request waits for the configuration
				b.Fatal(err)
			} else {
				resp.Body.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := hc.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}
