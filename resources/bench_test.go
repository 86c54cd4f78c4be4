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

// The benchmarks below measure, per resource of each built-in type (one
// sub-benchmark per type, named by its message: Listener,
// RouteConfiguration, Cluster, ClusterLoadAssignment):
//
//	BenchmarkUnmarshal    proto.Unmarshal of the resource's bytes into its
//	                      top-level message: the floor;
//	BenchmarkDecode       Type.DecodeTyped of the same bytes: decode,
//	                      validate and convert (target ≤ 1.2× the floor);
//	BenchmarkRepeat       what the client does for a resource whose bytes
//	                      did not change (client/response.go): Type.NameBytes,
//	                      a cache probed with m[string(b)], bytes.Equal with
//	                      the cached copy. No decoding, no allocation;
//	BenchmarkDecodeRatio  the three interleaved in short rounds, reported
//	                      as ratios, so that the load of a shared machine
//	                      weighs on them alike.
//
// Compare Decode with Unmarshal with: benchstat -col .name old.txt

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

// benchTypes are the resources of the benchmarks, by message name.
var benchTypes = []struct {
	name   string
	typ    interface{ DecodeAny(*anypb.Any) error }
	msg    func(*testing.B) proto.Message
	newMsg func() proto.Message
}{
	{"Listener", decodeAny(ListenerType), benchListener, func() proto.Message { return &v3listenerpb.Listener{} }},
	{"RouteConfiguration", decodeAny(RouteConfigType), benchRouteConfig, func() proto.Message { return &v3routepb.RouteConfiguration{} }},
	{"Cluster", decodeAny(ClusterType), benchCluster, func() proto.Message { return &v3clusterpb.Cluster{} }},
	{"ClusterLoadAssignment", decodeAny(EndpointsType), benchEndpoints, func() proto.Message { return &v3endpointpb.ClusterLoadAssignment{} }},
}

// typedDecoder adapts a Type[T] to the benchmarks' table.
type typedDecoder[T any] struct{ typ Type[T] }

func decodeAny[T any](typ Type[T]) typedDecoder[T] { return typedDecoder[T]{typ} }

func (d typedDecoder[T]) DecodeAny(r *anypb.Any) error {
	_, _, err := d.typ.DecodeTyped(r)
	return err
}

// BenchmarkUnmarshal is the floor: proto.Unmarshal of each benchmark
// resource into its top-level message.
func BenchmarkUnmarshal(b *testing.B) {
	benchEachType(b, func(i int, r *anypb.Any) error { return proto.Unmarshal(r.GetValue(), benchTypes[i].newMsg()) })
}

// BenchmarkDecode decodes, validates and converts each benchmark resource
// with its Type, as the client does for a new resource.
func BenchmarkDecode(b *testing.B) {
	benchEachType(b, func(i int, r *anypb.Any) error { return benchTypes[i].typ.DecodeAny(r) })
}

// benchEachType runs op on the resource of each of benchTypes (by index),
// one sub-benchmark per type.
func benchEachType(b *testing.B, op func(i int, r *anypb.Any) error) {
	for i, bt := range benchTypes {
		b.Run(bt.name, func(b *testing.B) {
			r := asReceived(b, bt.msg(b))
			b.ReportAllocs()
			b.SetBytes(int64(len(r.GetValue())))
			for b.Loop() {
				if err := op(i, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRepeat is the client's path for a resource whose bytes equal
// the cached ones (a SotW push repeating a resource).
func BenchmarkRepeat(b *testing.B) {
	b.Run("Listener", func(b *testing.B) { benchRepeat(b, ListenerType, benchListener(b)) })
	b.Run("RouteConfiguration", func(b *testing.B) { benchRepeat(b, RouteConfigType, benchRouteConfig(b)) })
	b.Run("Cluster", func(b *testing.B) { benchRepeat(b, ClusterType, benchCluster(b)) })
	b.Run("ClusterLoadAssignment", func(b *testing.B) { benchRepeat(b, EndpointsType, benchEndpoints(b)) })
}

func benchRepeat[T any](b *testing.B, typ Type[T], m proto.Message) {
	r := asReceived(b, m)
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
}

// BenchmarkDecodeRatio interleaves Unmarshal, Decode and Repeat in short
// rounds and reports decode/unmarshal (target ≤ 1.2) and the repeat path
// in percent of a decode (target < 5).
func BenchmarkDecodeRatio(b *testing.B) {
	b.Run("Listener", func(b *testing.B) { benchRatio(b, ListenerType, benchListener(b), benchTypes[0].newMsg) })
	b.Run("RouteConfiguration", func(b *testing.B) { benchRatio(b, RouteConfigType, benchRouteConfig(b), benchTypes[1].newMsg) })
	b.Run("Cluster", func(b *testing.B) { benchRatio(b, ClusterType, benchCluster(b), benchTypes[2].newMsg) })
	b.Run("ClusterLoadAssignment", func(b *testing.B) { benchRatio(b, EndpointsType, benchEndpoints(b), benchTypes[3].newMsg) })
}

func benchRatio[T any](b *testing.B, typ Type[T], m proto.Message, newMsg func() proto.Message) {
	r := asReceived(b, m)
	if _, _, err := typ.DecodeTyped(r); err != nil {
		b.Fatalf("the benchmark resource is invalid: %v", err)
	}
	name, _ := typ.Name(r)
	cache := map[string][]byte{name: bytes.Clone(r.GetValue())}
	const k, kRepeat = 8, 64
	var tUnmarshal, tDecode, tRepeat time.Duration
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
			if nb, ok := typ.NameBytes(r); !ok || !bytes.Equal(cache[string(nb)], r.GetValue()) {
				b.Fatal("the repeated resource was not recognised")
			}
		}
		t3 := time.Now()
		tUnmarshal, tDecode, tRepeat = tUnmarshal+t1.Sub(t0), tDecode+t2.Sub(t1), tRepeat+t3.Sub(t2)
	}
	b.ReportMetric(float64(tDecode)/float64(tUnmarshal), "decode/unmarshal")
	b.ReportMetric(100*(float64(tRepeat)/kRepeat)/(float64(tDecode)/k), "repeat-%-of-decode")
}
