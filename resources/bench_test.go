// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

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
