// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build resources with the deprecated fields gRPC still accepts.

package resources

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3aggregateclusterpb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
)

func adsSource() *v3corepb.ConfigSource {
	return &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Ads{Ads: &v3corepb.AggregatedConfigSource{}}}
}

func selfSource() *v3corepb.ConfigSource {
	return &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Self{Self: &v3corepb.SelfConfigSource{}}}
}

func pathSource() *v3corepb.ConfigSource {
	return &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Path{Path: "/etc/eds.yaml"}}
}

// edsCluster returns a valid EDS cluster, changed by the mods.
func edsCluster(name, service string, mods ...func(*v3clusterpb.Cluster)) *v3clusterpb.Cluster {
	c := &v3clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_EDS},
		EdsClusterConfig: &v3clusterpb.Cluster_EdsClusterConfig{
			EdsConfig:   adsSource(),
			ServiceName: service,
		},
		LbPolicy: v3clusterpb.Cluster_ROUND_ROBIN,
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// dnsCluster returns a valid LOGICAL_DNS cluster for host:port.
func dnsCluster(name, host string, port uint32, mods ...func(*v3clusterpb.Cluster)) *v3clusterpb.Cluster {
	c := &v3clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_LOGICAL_DNS},
		LoadAssignment: &v3endpointpb.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*v3endpointpb.LocalityLbEndpoints{{
				LbEndpoints: []*v3endpointpb.LbEndpoint{lbEndpoint(host, port)},
			}},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// aggregateCluster returns an aggregate cluster whose typed_config is cfg.
func aggregateCluster(t testing.TB, name string, cfg proto.Message) *v3clusterpb.Cluster {
	return &v3clusterpb.Cluster{
		Name: name,
		ClusterDiscoveryType: &v3clusterpb.Cluster_ClusterType{ClusterType: &v3clusterpb.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: mustAny(t, cfg),
		}},
	}
}

func clusterName(m proto.Message) string { return m.(*v3clusterpb.Cluster).GetName() }

// TestCluster_Decode covers the CDS validation rules of.
func TestCluster_Decode(t *testing.T) {
	runDecodeCases(t, ClusterType, clusterName, clusterCases(t))
}

// withHTTPDefaults gives the wanted Clusters of cases that leave them
// zero the defaults of the HTTP fields: MaxRetries 3, a panic
// threshold of 50 %, and for outlier detection consecutive_5xx 5 at 100 %.
func withHTTPDefaults(cases []decodeCase[*Cluster]) []decodeCase[*Cluster] {
	for _, tc := range cases {
		c := tc.want
		if c == nil {
			continue
		}
		if c.MaxRetries == 0 {
			c.MaxRetries = 3
		}
		if c.LBPolicy.HealthyPanicThreshold == 0 {
			c.LBPolicy.HealthyPanicThreshold = 50
		}
	}
	return cases
}

// clusterCases returns the table of TestCluster_Decode; the fuzz target is seeded from it.
func clusterCases(t testing.TB) []decodeCase[*Cluster] {
	rr := LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true}
	cases := []decodeCase[*Cluster]{
		{
			rule: "R-17.4",
			name: "eds with ads and service name",
			give: edsCluster("c", "c-eds"),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "c-eds", LBPolicy: rr, MaxRequests: 1024},
		},
		{
			rule: "R-17.4",
			name: "eds with self and no service name",
			give: edsCluster("c", "", func(c *v3clusterpb.Cluster) { c.EdsClusterConfig.EdsConfig = selfSource() }),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, LBPolicy: rr, MaxRequests: 1024},
		},
		{
			// the name is reported in canonical form.
			rule: "R-5.2",
			name: "xdstp name is canonicalised",
			give: edsCluster("xdstp://auth/envoy.config.cluster.v3.Cluster/c?b=2&a=1", "svc"),
			want: &Cluster{Name: "xdstp://auth/envoy.config.cluster.v3.Cluster/c?a=1&b=2", Kind: ClusterKindEDS, EDSServiceName: "svc", LBPolicy: rr, MaxRequests: 1024},
		},
		{
			// DEFAULT priority max_requests; other priorities ignored.
			rule: "R-17.4",
			name: "circuit breaker default priority",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{
					{Priority: v3corepb.RoutingPriority_HIGH, MaxRequests: wrapperspb.UInt32(7)},
					{Priority: v3corepb.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(512)},
				}}
			}),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 512},
		},
		{
			rule: "R-17.4",
			name: "circuit breaker default without max_requests",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{
					{Priority: v3corepb.RoutingPriority_DEFAULT},
				}}
			}),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024},
		},
		{
			rule: "R-17.4",
			name: "lrs server self",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LrsServer = selfSource() }),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024, LRSServerSelf: true},
		},
		{
			// RING_HASH defaults 1024 / 8Mi.
			rule: "R-17.4",
			name: "ring hash defaults",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_RING_HASH }),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", MaxRequests: 1024,
				LBPolicy: LBPolicy{Kind: LBPolicyRingHash, RingHashMinSize: 1024, RingHashMaxSize: 8 << 20}},
		},
		{
			rule: "R-17.4",
			name: "ring hash explicit sizes",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_RING_HASH
				c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
					MinimumRingSize: wrapperspb.UInt64(10), MaximumRingSize: wrapperspb.UInt64(100),
				}}
			}),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", MaxRequests: 1024,
				LBPolicy: LBPolicy{Kind: LBPolicyRingHash, RingHashMinSize: 10, RingHashMaxSize: 100}},
		},
		{
			rule: "R-17.4",
			name: "ring hash explicit zero means default",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_RING_HASH
				c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
					MinimumRingSize: wrapperspb.UInt64(0), MaximumRingSize: wrapperspb.UInt64(0),
				}}
			}),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", MaxRequests: 1024,
				LBPolicy: LBPolicy{Kind: LBPolicyRingHash, RingHashMinSize: 1024, RingHashMaxSize: 8 << 20}},
		},
		{
			// gRFC A48: choice_count defaults to 2.
			rule: "R-17.4",
			name: "least request default",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_LEAST_REQUEST }),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", MaxRequests: 1024,
				LBPolicy: LBPolicy{Kind: LBPolicyLeastRequest, LeastRequestChoiceCount: 2}},
		},
		{
			rule: "R-17.4",
			name: "least request choice count 3",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_LEAST_REQUEST
				c.LbConfig = &v3clusterpb.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &v3clusterpb.Cluster_LeastRequestLbConfig{
					ChoiceCount: wrapperspb.UInt32(3),
				}}
			}),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", MaxRequests: 1024,
				LBPolicy: LBPolicy{Kind: LBPolicyLeastRequest, LeastRequestChoiceCount: 3}},
		},
		{
			rule: "R-17.4",
			name: "logical dns",
			give: dnsCluster("d", "dns.example.com", 443),
			want: &Cluster{Name: "d", Kind: ClusterKindLogicalDNS, DNSHost: "dns.example.com", DNSPort: 443, LBPolicy: rr, MaxRequests: 1024},
		},
		{
			rule: "R-17.4",
			name: "logical dns ipv6 literal",
			give: dnsCluster("d", "::1", 80),
			want: &Cluster{Name: "d", Kind: ClusterKindLogicalDNS, DNSHost: "::1", DNSPort: 80, LBPolicy: rr, MaxRequests: 1024},
		},
		{
			// gRFC A37: children kept in priority order.
			rule: "R-17.4",
			name: "aggregate",
			give: aggregateCluster(t, "agg", &v3aggregateclusterpb.ClusterConfig{Clusters: []string{"b", "a", "c"}}),
			want: &Cluster{Name: "agg", Kind: ClusterKindAggregate, AggregateClusters: []string{"b", "a", "c"}, LBPolicy: rr, MaxRequests: 1024},
		},

		{
			// an xdstp EDS cluster with a service name is valid, and
			// the rule does not apply to other cluster types.
			rule: "R-5.6",
			name: "xdstp names with and without EDS",
			give: edsCluster("xdstp://auth/envoy.config.cluster.v3.Cluster/c", "xdstp://auth/envoy.config.endpoint.v3.ClusterLoadAssignment/c"),
			want: &Cluster{Name: "xdstp://auth/envoy.config.cluster.v3.Cluster/c", Kind: ClusterKindEDS, EDSServiceName: "xdstp://auth/envoy.config.endpoint.v3.ClusterLoadAssignment/c", LBPolicy: rr, MaxRequests: 1024},
		},
		{
			rule: "R-5.6",
			name: "xdstp logical dns cluster",
			give: dnsCluster("xdstp://auth/envoy.config.cluster.v3.Cluster/d", "h", 1),
			want: &Cluster{Name: "xdstp://auth/envoy.config.cluster.v3.Cluster/d", Kind: ClusterKindLogicalDNS, DNSHost: "h", DNSPort: 1, LBPolicy: rr, MaxRequests: 1024},
		},

		// Invalid resources: per-resource errors.
		{
			rule:    "R-17.4",
			name:    "eds config missing",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.EdsClusterConfig.EdsConfig = nil }),
			wantErr: "eds_cluster_config.eds_config: missing",
		},
		{
			rule:    "R-17.4",
			name:    "eds cluster config missing",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.EdsClusterConfig = nil }),
			wantErr: "eds_cluster_config.eds_config: missing",
		},
		{
			rule:    "R-17.4",
			name:    "eds config source path",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.EdsClusterConfig.EdsConfig = pathSource() }),
			wantErr: "eds_cluster_config.eds_config: config source must be ads or self",
		},
		{
			// xdstp cluster name with EDS needs service_name.
			rule:    "R-5.6",
			name:    "xdstp name without service name",
			give:    edsCluster("xdstp://auth/envoy.config.cluster.v3.Cluster/c", ""),
			wantErr: "eds_cluster_config.service_name: empty",
		},
		{
			rule:    "R-5.6",
			name:    "xdstp name with self config source without service name",
			give:    edsCluster("xdstp:///envoy.config.cluster.v3.Cluster/c", "", func(c *v3clusterpb.Cluster) { c.EdsClusterConfig.EdsConfig = selfSource() }),
			wantErr: "eds_cluster_config.service_name: empty, but required with an xdstp cluster name",
		},
		{
			rule: "R-17.4",
			name: "static type",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC}
			}),
			wantErr: "type: unsupported cluster type STATIC",
		},
		{
			rule:    "R-17.4",
			name:    "no discovery type",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.ClusterDiscoveryType = nil }),
			wantErr: "type: unsupported cluster type STATIC",
		},
		{
			rule: "R-17.4",
			name: "original dst type",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_ORIGINAL_DST}
			}),
			wantErr: "type: unsupported cluster type ORIGINAL_DST",
		},
		{
			rule: "R-17.4",
			name: "custom cluster type not aggregate",
			give: func() proto.Message {
				c := aggregateCluster(t, "x", &v3aggregateclusterpb.ClusterConfig{Clusters: []string{"a"}})
				c.GetClusterType().Name = "envoy.clusters.redis"
				return c
			}(),
			wantErr: `cluster_type.name: unsupported custom cluster type "envoy.clusters.redis"`,
		},
		{
			rule:    "R-17.4",
			name:    "aggregate with wrong config type",
			give:    aggregateCluster(t, "x", &v3clusterpb.Cluster{Name: "oops"}),
			wantErr: "cluster_type.typed_config: type URL",
		},
		{
			rule:    "R-17.4",
			name:    "aggregate with empty clusters",
			give:    aggregateCluster(t, "x", &v3aggregateclusterpb.ClusterConfig{}),
			wantErr: "cluster_type.typed_config.clusters: empty",
		},
		{
			rule: "R-17.4",
			name: "aggregate with undecodable config",
			give: func() proto.Message {
				c := aggregateCluster(t, "x", &v3aggregateclusterpb.ClusterConfig{Clusters: []string{"a"}})
				c.GetClusterType().TypedConfig.Value = []byte{0x0a, 0x05, 'a'} // truncated
				return c
			}(),
			wantErr: "cluster_type.typed_config: decoding ClusterConfig",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy maglev",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_MAGLEV }),
			wantErr: "lb_policy: unsupported policy MAGLEV",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy unknown enum value",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = 99 }),
			wantErr: "lb_policy: unsupported policy",
		},
		{
			rule: "R-17.4",
			name: "ring hash murmur",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_RING_HASH
				c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
					HashFunction: v3clusterpb.Cluster_RingHashLbConfig_MURMUR_HASH_2,
				}}
			}),
			wantErr: "ring_hash_lb_config.hash_function: unsupported hash function MURMUR_HASH_2",
		},
		{
			rule: "R-17.4",
			name: "ring hash min greater than max",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_RING_HASH
				c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
					MinimumRingSize: wrapperspb.UInt64(200), MaximumRingSize: wrapperspb.UInt64(100),
				}}
			}),
			wantErr: "ring_hash_lb_config: minimum_ring_size 200 is greater than maximum_ring_size 100",
		},
		{
			rule: "R-17.4",
			name: "ring hash max above limit",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_RING_HASH
				c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
					MaximumRingSize: wrapperspb.UInt64(8<<20 + 1),
				}}
			}),
			wantErr: "ring_hash_lb_config.maximum_ring_size: 8388609 exceeds the limit",
		},
		{
			rule: "R-17.4",
			name: "ring hash min above limit",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_RING_HASH
				c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
					MinimumRingSize: wrapperspb.UInt64(1 << 30),
				}}
			}),
			wantErr: "ring_hash_lb_config.minimum_ring_size: 1073741824 exceeds the limit",
		},
		{
			// gRFC A48: choice_count ≥ 2.
			rule: "R-17.4",
			name: "least request choice count 1",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.LbPolicy = v3clusterpb.Cluster_LEAST_REQUEST
				c.LbConfig = &v3clusterpb.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &v3clusterpb.Cluster_LeastRequestLbConfig{
					ChoiceCount: wrapperspb.UInt32(1),
				}}
			}),
			wantErr: "least_request_lb_config.choice_count: 1, must be at least 2",
		},
		{
			rule:    "R-17.4",
			name:    "lrs server ads",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LrsServer = adsSource() }),
			wantErr: "lrs_server: config source must be self",
		},
		{
			rule:    "R-17.4",
			name:    "logical dns without load assignment",
			give:    dnsCluster("d", "h", 1, func(c *v3clusterpb.Cluster) { c.LoadAssignment = nil }),
			wantErr: "load_assignment: missing",
		},
		{
			rule: "R-17.4",
			name: "logical dns with two localities",
			give: dnsCluster("d", "h", 1, func(c *v3clusterpb.Cluster) {
				c.LoadAssignment.Endpoints = append(c.LoadAssignment.Endpoints, c.LoadAssignment.Endpoints[0])
			}),
			wantErr: "load_assignment.endpoints: 2 localities",
		},
		{
			rule:    "R-17.4",
			name:    "logical dns with no endpoint",
			give:    dnsCluster("d", "h", 1, func(c *v3clusterpb.Cluster) { c.LoadAssignment.Endpoints[0].LbEndpoints = nil }),
			wantErr: "load_assignment.endpoints[0].lb_endpoints: 0 endpoints",
		},
		{
			rule: "R-17.4",
			name: "logical dns without socket address",
			give: dnsCluster("d", "h", 1, func(c *v3clusterpb.Cluster) {
				c.LoadAssignment.Endpoints[0].LbEndpoints[0] = &v3endpointpb.LbEndpoint{}
			}),
			wantErr: "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address: missing",
		},
		{
			rule: "R-17.4",
			name: "logical dns with resolver name",
			give: dnsCluster("d", "h", 1, func(c *v3clusterpb.Cluster) {
				c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().ResolverName = "custom"
			}),
			wantErr: "socket_address.resolver_name: custom resolvers are not supported",
		},
		{
			rule:    "R-17.4",
			name:    "logical dns with empty host",
			give:    dnsCluster("d", "", 1),
			wantErr: "socket_address.address: empty",
		},
		{
			rule:    "R-17.4",
			name:    "logical dns with zero port",
			give:    dnsCluster("d", "h", 0),
			wantErr: "socket_address.port_value: missing or zero",
		},
	}
	cases = append(cases, clusterSecurityCases(t)...)
	cases = append(cases, clusterLBCases(t)...)
	return append(withHTTPDefaults(cases), clusterHTTPCases(t)...)
}

// TestCluster_TopLevelErrors checks that the failures that leave no
// resource name are top-level errors: name "".
func TestCluster_TopLevelErrors(t *testing.T) {
	cases := []struct {
		name    string
		give    *anypb.Any
		wantErr string
	}{
		{name: "empty name", give: mustAny(t, edsCluster("", "s")), wantErr: "name: empty resource name"},
		{name: "undecodable", give: &anypb.Any{TypeUrl: ClusterTypeURL, Value: []byte{0xff}}, wantErr: "decoding Cluster"},
		{name: "wrong type URL", give: mustAny(t, &v3endpointpb.ClusterLoadAssignment{ClusterName: "x"}), wantErr: "does not match"},
		{name: "nil resource", give: nil, wantErr: "no resource"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := ClusterType.Decode(tc.give)
			if name != "" || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode() = %q, %v, %v; want \"\", nil, error containing %q", name, v, err, tc.wantErr)
			}
			if v.(*Cluster) != nil {
				t.Fatalf("Decode() value = %v, want a nil *Cluster", v)
			}
		})
	}
}

// TestClusterKind_String checks the enum names used in messages.
func TestClusterKind_String(t *testing.T) {
	cases := []struct {
		name string
		give interface{ String() string }
		want string
	}{
		{name: "eds", give: ClusterKindEDS, want: "EDS"},
		{name: "logical dns", give: ClusterKindLogicalDNS, want: "LOGICAL_DNS"},
		{name: "aggregate", give: ClusterKindAggregate, want: "AGGREGATE"},
		{name: "invalid kind", give: ClusterKind(0), want: "ClusterKind(0)"},
		{name: "round robin", give: LBPolicyRoundRobin, want: "ROUND_ROBIN"},
		{name: "ring hash", give: LBPolicyRingHash, want: "RING_HASH"},
		{name: "least request", give: LBPolicyLeastRequest, want: "LEAST_REQUEST"},
		{name: "invalid policy", give: LBPolicyKind(9), want: "LBPolicyKind(9)"},
	}
	for _, tc := range cases {
		if got := tc.give.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
