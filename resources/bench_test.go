// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3roundrobinpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	v3wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// The benchmarks below measure, per resource of each built-in type:
//
//	op=unmarshal  proto.Unmarshal of the resource's bytes into its message,
//	              the floor (target: decode + validate ≤ 1.5× this);
//	op=decode     Type.DecodeTyped: decode, validate and convert;
//	op=repeat     what the client does for a resource whose bytes did not
//	              change (client/response.go decodeAll): Type.Name, then
//	              bytes.Equal with the cached copy. No decoding;
//	op=repeat-bytes the same with Type.NameBytes and a cache probed with
//	              m[string(b)], which allocates nothing;
//	op=paired     all interleaved, reported as ratios (see below).
//
// Compare the columns with: benchstat -col /op old.txt

// benchListener is a typical client Listener: RDS over ADS, the router.
func benchListener(b *testing.B) proto.Message {
	return listener(b, "outbound|8080||frontend.ns.svc.cluster.local", hcm(b, "route-frontend", func(h *v3httppb.HttpConnectionManager) {
		h.CommonHttpProtocolOptions = &v3corepb.HttpProtocolOptions{MaxStreamDuration: durationpb.New(30 * time.Second)}
		h.StatPrefix = "outbound_8080_frontend"
	}))
}

// benchRouteConfig is a RouteConfiguration with one virtual host and 100
// routes: path prefixes to a cluster each, every fifth splitting traffic
// between two clusters, every tenth with a header matcher and a retry
// policy, and a catch-all.
func benchRouteConfig(b *testing.B) proto.Message {
	vh := &v3routepb.VirtualHost{Name: "frontend", Domains: []string{"frontend.ns.svc.cluster.local", "frontend", "frontend:8080"}}
	for i := range 99 {
		svc := "pkg.Service" + strconv.Itoa(i)
		r := clusterRoute("outbound|8080||"+svc+".ns.svc.cluster.local", func(r *v3routepb.Route) {
			r.Name = svc
			r.Match.PathSpecifier = &v3routepb.RouteMatch_Prefix{Prefix: "/" + svc + "/"}
			r.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(10 * time.Second)}
		})
		if i%5 == 0 {
			withWeighted(cw(svc+"-v1", 90), cw(svc+"-v2", 10))(r)
		}
		if i%10 == 0 {
			withHeader(&v3routepb.HeaderMatcher{Name: "x-canary", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
				MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "true"},
			}}})(r)
			withRetry(&v3routepb.RetryPolicy{RetryOn: "unavailable,cancelled", NumRetries: wrapperspb.UInt32(2)})(r)
		}
		vh.Routes = append(vh.Routes, r)
	}
	vh.Routes = append(vh.Routes, clusterRoute("default"))
	return routeConfig("route-frontend", vh)
}

// benchCluster is a typical EDS cluster: ADS, a service name, a connect
// timeout, a circuit breaker, and the gRFC A52 policy a control plane
// sends for round robin.
func benchCluster(b *testing.B) proto.Message {
	name := "outbound|8080||frontend.ns.svc.cluster.local"
	return edsCluster(name, name, func(c *v3clusterpb.Cluster) {
		c.ConnectTimeout = durationpb.New(5 * time.Second)
		c.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{{
			Priority:    v3corepb.RoutingPriority_DEFAULT,
			MaxRequests: wrapperspb.UInt32(4096),
		}}}
		c.LoadBalancingPolicy = lbPolicies(b, &v3wrrlocalitypb.WrrLocality{EndpointPickingPolicy: lbPolicies(b, &v3roundrobinpb.RoundRobin{})})
	})
}

// benchEndpoints is a ClusterLoadAssignment with 100 endpoints in four
// localities over two priorities.
func benchEndpoints(b *testing.B) proto.Message {
	var locs []*v3endpointpb.LocalityLbEndpoints
	for l := range 4 {
		var eps []*v3endpointpb.LbEndpoint
		for e := range 25 {
			eps = append(eps, lbEndpoint("10.0."+strconv.Itoa(l)+"."+strconv.Itoa(e+1), 8080, func(ep *v3endpointpb.LbEndpoint) {
				ep.HealthStatus = v3corepb.HealthStatus_HEALTHY
				ep.LoadBalancingWeight = wrapperspb.UInt32(uint32(e%3 + 1))
			}))
		}
		locs = append(locs, locality("zone-"+strconv.Itoa(l), uint32(l/2), 100, eps...))
	}
	return cla("outbound|8080||frontend.ns.svc.cluster.local", locs...)
}

// asReceived marshals m into an Any inside a DiscoveryResponse and
// unmarshals that, so that the Any is what the client's engine sees.
func asReceived(b *testing.B, m proto.Message) *anypb.Any {
	b.Helper()
	wire, err := proto.Marshal(&v3discoverypb.DiscoveryResponse{VersionInfo: "1", Resources: []*anypb.Any{mustAny(b, m)}})
	if err != nil {
		b.Fatalf("proto.Marshal: %v", err)
	}
	resp := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(wire, resp); err != nil {
		b.Fatalf("proto.Unmarshal: %v", err)
	}
	return resp.GetResources()[0]
}

func BenchmarkDecode(b *testing.B) {
	b.Run("type=Listener", func(b *testing.B) {
		benchType(b, ListenerType, benchListener(b), func() proto.Message { return &v3listenerpb.Listener{} })
	})
	b.Run("type=RouteConfiguration", func(b *testing.B) {
		benchType(b, RouteConfigType, benchRouteConfig(b), func() proto.Message { return &v3routepb.RouteConfiguration{} })
	})
	b.Run("type=Cluster", func(b *testing.B) {
		benchType(b, ClusterType, benchCluster(b), func() proto.Message { return &v3clusterpb.Cluster{} })
	})
	b.Run("type=ClusterLoadAssignment", func(b *testing.B) {
		benchType(b, EndpointsType, benchEndpoints(b), func() proto.Message { return &v3endpointpb.ClusterLoadAssignment{} })
	})
}

// benchType runs the three ops on resource m of typ; newMsg returns an
// empty message of m's type.
func benchType[T any](b *testing.B, typ Type[T], m proto.Message, newMsg func() proto.Message) {
	r := asReceived(b, m)
	if _, _, err := typ.DecodeTyped(r); err != nil {
		b.Fatalf("the benchmark resource is invalid: %v", err)
	}
	b.Run("op=unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(r.GetValue())))
		for b.Loop() {
			if err := proto.Unmarshal(r.GetValue(), newMsg()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(r.GetValue())))
		for b.Loop() {
			if _, _, err := typ.DecodeTyped(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=paired", func(b *testing.B) {
		// The three ops interleaved in short rounds, so that the load of a
		// shared machine weighs on them alike, reported as ratios:
		// decode/unmarshal (target ≤ 1.5) and the repeat path in percent
		// of a decode (target < 5).
		name, _ := typ.Name(r)
		cached := bytes.Clone(r.GetValue())
		cache := map[string][]byte{name: cached}
		const k, kRepeat = 8, 64
		var tUnmarshal, tDecode, tRepeat, tRepeatBytes time.Duration
		for b.Loop() {
			t0 := time.Now()
			for range k {
				if err := proto.Unmarshal(r.GetValue(), newMsg()); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for range k {
				if _, _, err := typ.DecodeTyped(r); err != nil {
					b.Fatal(err)
				}
			}
			t2 := time.Now()
			for range kRepeat {
				if n, ok := typ.Name(r); !ok || n != name || !bytes.Equal(cached, r.GetValue()) {
					b.Fatal("the repeated resource was not recognised")
				}
			}
			t3 := time.Now()
			for range kRepeat {
				if nb, ok := typ.NameBytes(r); !ok || !bytes.Equal(cache[string(nb)], r.GetValue()) {
					b.Fatal("the repeated resource was not recognised")
				}
			}
			t4 := time.Now()
			tUnmarshal, tDecode = tUnmarshal+t1.Sub(t0), tDecode+t2.Sub(t1)
			tRepeat, tRepeatBytes = tRepeat+t3.Sub(t2), tRepeatBytes+t4.Sub(t3)
		}
		perDecode := float64(tDecode) / k
		b.ReportMetric(float64(tDecode)/float64(tUnmarshal), "decode/unmarshal")
		b.ReportMetric(100*(float64(tRepeat)/kRepeat)/perDecode, "repeat-%-of-decode")
		b.ReportMetric(100*(float64(tRepeatBytes)/kRepeat)/perDecode, "repeat-bytes-%-of-decode")
	})
	b.Run("op=repeat-bytes", func(b *testing.B) {
		name, _ := typ.Name(r)
		cache := map[string][]byte{name: bytes.Clone(r.GetValue())}
		b.ReportAllocs()
		b.SetBytes(int64(len(r.GetValue())))
		for b.Loop() {
			nb, ok := typ.NameBytes(r)
			if !ok || !bytes.Equal(cache[string(nb)], r.GetValue()) {
				b.Fatal("the repeated resource was not recognised")
			}
		}
	})
	b.Run("op=repeat", func(b *testing.B) {
		// The cache holds a copy of the bytes, as received in an earlier
		// response; the new response's bytes are a different slice.
		name, _ := typ.Name(r)
		cached := bytes.Clone(r.GetValue())
		b.ReportAllocs()
		b.SetBytes(int64(len(r.GetValue())))
		for b.Loop() {
			n, ok := typ.Name(r)
			if !ok || n != name || !bytes.Equal(cached, r.GetValue()) {
				b.Fatal("the repeated resource was not recognised")
			}
		}
	})
}

const benchClusters = 1000

// cds1000 returns the resources of a marshalled, then unmarshalled CDS
// DiscoveryResponse with 1,000 typical EDS clusters, as the client's
// engine sees them.
func cds1000(b *testing.B) []*anypb.Any {
	b.Helper()
	resp := &v3discoverypb.DiscoveryResponse{VersionInfo: "1", TypeUrl: ClusterTypeURL, Nonce: "n"}
	for i := range benchClusters {
		name := "outbound|8080||service-" + strconv.Itoa(i) + ".namespace.svc.cluster.local"
		c := edsCluster(name, name, func(c *v3clusterpb.Cluster) {
			c.ConnectTimeout = durationpb.New(5 * time.Second)
			c.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{{
				Priority:    v3corepb.RoutingPriority_DEFAULT,
				MaxRequests: wrapperspb.UInt32(4096),
			}}}
		})
		resp.Resources = append(resp.Resources, mustAny(b, c))
	}
	wire, err := proto.Marshal(resp)
	if err != nil {
		b.Fatalf("proto.Marshal: %v", err)
	}
	got := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(wire, got); err != nil {
		b.Fatalf("proto.Unmarshal: %v", err)
	}
	return got.GetResources()
}

// BenchmarkDecodeCDS1000 decodes and validates 1,000 typical EDS clusters
// per iteration with ClusterType.Decode, as the engine does for a full CDS
// response. Compare with BenchmarkUnmarshalCDS1000.
func BenchmarkDecodeCDS1000(b *testing.B) {
	rs := cds1000(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range rs {
			if _, _, err := ClusterType.Decode(r); err != nil {
				b.Fatalf("Decode: %v", err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchClusters, "ns/resource")
}

// BenchmarkUnmarshalCDS1000 is the baseline: proto.Unmarshal of the same
// 1,000 clusters into v3clusterpb.Cluster, without validation.
func BenchmarkUnmarshalCDS1000(b *testing.B) {
	rs := cds1000(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range rs {
			c := &v3clusterpb.Cluster{}
			if err := proto.Unmarshal(r.GetValue(), c); err != nil {
				b.Fatalf("Unmarshal: %v", err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchClusters, "ns/resource")
}
