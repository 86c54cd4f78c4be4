// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

func socketAddr(host string, port uint32) *v3corepb.Address {
	return &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
		Address:       host,
		PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
	}}}
}

// lbEndpoint returns an endpoint at host:port, changed by the mods.
func lbEndpoint(host string, port uint32, mods ...func(*v3endpointpb.LbEndpoint)) *v3endpointpb.LbEndpoint {
	e := &v3endpointpb.LbEndpoint{HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
		Address: socketAddr(host, port),
	}}}
	for _, m := range mods {
		m(e)
	}
	return e
}

// locality returns a locality in zone z (region "r") with the given
// priority and weight (0 = unset) and endpoints.
func locality(z string, prio, weight uint32, eps ...*v3endpointpb.LbEndpoint) *v3endpointpb.LocalityLbEndpoints {
	l := &v3endpointpb.LocalityLbEndpoints{
		Locality:    &v3corepb.Locality{Region: "r", Zone: z},
		Priority:    prio,
		LbEndpoints: eps,
	}
	if weight != 0 {
		l.LoadBalancingWeight = wrapperspb.UInt32(weight)
	}
	return l
}

func cla(name string, locs ...*v3endpointpb.LocalityLbEndpoints) *v3endpointpb.ClusterLoadAssignment {
	return &v3endpointpb.ClusterLoadAssignment{ClusterName: name, Endpoints: locs}
}

func withDrops(c *v3endpointpb.ClusterLoadAssignment, drops ...*v3endpointpb.ClusterLoadAssignment_Policy_DropOverload) *v3endpointpb.ClusterLoadAssignment {
	c.Policy = &v3endpointpb.ClusterLoadAssignment_Policy{DropOverloads: drops}
	return c
}

func drop(cat string, n uint32, d v3typepb.FractionalPercent_DenominatorType) *v3endpointpb.ClusterLoadAssignment_Policy_DropOverload {
	return &v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{
		Category:       cat,
		DropPercentage: &v3typepb.FractionalPercent{Numerator: n, Denominator: d},
	}
}

func endpointsName(m proto.Message) string {
	return m.(*v3endpointpb.ClusterLoadAssignment).GetClusterName()
}

// ep returns the decoded form of lbEndpoint(host, port) with weight 1.
func ep(addrs ...string) Endpoint { return Endpoint{Addresses: addrs, Weight: 1} }

func loc(z string, prio, weight uint32, eps ...Endpoint) Locality {
	return Locality{ID: LocalityID{Region: "r", Zone: z}, Priority: prio, Weight: weight, Endpoints: eps}
}

// TestEndpoints_Decode covers the EDS validation rules of.
func TestEndpoints_Decode(t *testing.T) {
	runDecodeCases(t, EndpointsType, endpointsName, endpointsCases(t))
}

// endpointsCases returns the table of TestEndpoints_Decode; the fuzz target is seeded from it.
func endpointsCases(t testing.TB) []decodeCase[*Endpoints] {
	cases := []decodeCase[*Endpoints]{
		{
			rule: "R-17.5",
			name: "one locality",
			give: cla("e", locality("z", 0, 3,
				lbEndpoint("10.0.0.1", 80, func(e *v3endpointpb.LbEndpoint) {
					e.HealthStatus = v3corepb.HealthStatus_HEALTHY
					e.LoadBalancingWeight = wrapperspb.UInt32(5)
					e.GetEndpoint().Hostname = "host-1"
				}),
				lbEndpoint("10.0.0.2", 80, func(e *v3endpointpb.LbEndpoint) { e.HealthStatus = v3corepb.HealthStatus_DRAINING }),
			)),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{
				loc("z", 0, 3,
					Endpoint{Addresses: []string{"10.0.0.1:80"}, Hostname: "host-1", HealthStatus: HealthStatusHealthy, Weight: 5},
					Endpoint{Addresses: []string{"10.0.0.2:80"}, HealthStatus: HealthStatusDraining, Weight: 1},
				),
			}},
		},
		{
			rule: "R-17.5",
			name: "no localities",
			give: cla("e"),
			want: &Endpoints{ClusterName: "e"},
		},
		{
			rule: "R-17.5",
			name: "ipv6 and additional addresses",
			give: cla("e", locality("z", 0, 1, lbEndpoint("::1", 443, func(e *v3endpointpb.LbEndpoint) {
				e.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr("10.0.0.1", 443)}}
			}))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1, ep("[::1]:443", "10.0.0.1:443"))}},
		},
		{
			rule: "R-17.5",
			name: "unknown health status kept",
			give: cla("e", locality("z", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) { e.HealthStatus = 42 }))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1, Endpoint{Addresses: []string{"h:1"}, HealthStatus: 42, Weight: 1})}},
		},
		{
			// weight 0 or unset → locality dropped.
			rule: "R-17.5",
			name: "weight zero localities dropped",
			give: cla("e",
				locality("a", 0, 0, lbEndpoint("10.0.0.1", 1)),
				func() *v3endpointpb.LocalityLbEndpoints {
					l := locality("b", 0, 0, lbEndpoint("10.0.0.2", 1))
					l.LoadBalancingWeight = wrapperspb.UInt32(0)
					return l
				}(),
				locality("c", 0, 1, lbEndpoint("10.0.0.3", 1)),
			),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("c", 0, 1, ep("10.0.0.3:1"))}},
		},
		{
			// The same locality in two priorities is allowed (gRFC A52).
			rule: "R-17.5",
			name: "two priorities, same locality in both",
			give: cla("e",
				locality("z", 1, 2, lbEndpoint("10.0.0.2", 1)),
				locality("z", 0, 1, lbEndpoint("10.0.0.1", 1)),
			),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{
				loc("z", 1, 2, ep("10.0.0.2:1")),
				loc("z", 0, 1, ep("10.0.0.1:1")),
			}},
		},
		{
			// the sum of the locality weights of a priority fits.
			rule: "R-17.5",
			name: "locality weights sum to MaxUint32",
			give: cla("e",
				locality("a", 0, math.MaxUint32-1, lbEndpoint("10.0.0.1", 1)),
				locality("b", 0, 1, lbEndpoint("10.0.0.2", 1)),
			),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{
				loc("a", 0, math.MaxUint32-1, ep("10.0.0.1:1")),
				loc("b", 0, 1, ep("10.0.0.2:1")),
			}},
		},
		{
			// HUNDRED / TEN_THOUSAND / MILLION, scaled per million.
			rule: "R-17.5",
			name: "drop overloads",
			give: withDrops(cla("e"),
				drop("a", 5, v3typepb.FractionalPercent_HUNDRED),
				drop("b", 5, v3typepb.FractionalPercent_TEN_THOUSAND),
				drop("c", 7, v3typepb.FractionalPercent_MILLION),
				drop("d", 200, v3typepb.FractionalPercent_HUNDRED),
				drop("e", math.MaxUint32, v3typepb.FractionalPercent_HUNDRED),
			),
			want: &Endpoints{ClusterName: "e", DropOverloads: []DropOverload{
				{Category: "a", PerMillion: 50_000},
				{Category: "b", PerMillion: 500},
				{Category: "c", PerMillion: 7},
				{Category: "d", PerMillion: 1_000_000},
				{Category: "e", PerMillion: 1_000_000},
			}},
		},
		{
			rule: "R-5.2",
			name: "xdstp name canonicalised",
			give: cla("xdstp://a/envoy.config.endpoint.v3.ClusterLoadAssignment/e?z=1&y=2"),
			want: &Endpoints{ClusterName: "xdstp://a/envoy.config.endpoint.v3.ClusterLoadAssignment/e?y=2&z=1"},
		},
		{
			// gRFC A76: the hash key comes from the "envoy.lb" filter
			// metadata; other metadata is ignored.
			rule: "R-17.5",
			name: "endpoint hash key",
			give: cla("e", locality("z", 0, 1,
				lbEndpoint("10.0.0.1", 80, func(e *v3endpointpb.LbEndpoint) {
					e.Metadata = &v3corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{
						"envoy.lb": mustStruct(t, map[string]any{"hash_key": "k1", "other": 1}),
						"x":        mustStruct(t, map[string]any{"hash_key": "ignored"}),
					}}
				}),
				lbEndpoint("10.0.0.2", 80, func(e *v3endpointpb.LbEndpoint) {
					e.Metadata = &v3corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": mustStruct(t, map[string]any{"hash_key": 7})}}
				}),
			)),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1,
				Endpoint{Addresses: []string{"10.0.0.1:80"}, Weight: 1, HashKey: "k1"},
				ep("10.0.0.2:80"),
			)}},
		},
		{
			// grpc-go accepts an empty drop category (gRPC C++ does not).
			rule: "R-17.5",
			name: "drop overload without category",
			give: withDrops(cla("e"), drop("", 1, v3typepb.FractionalPercent_MILLION)),
			want: &Endpoints{ClusterName: "e", DropOverloads: []DropOverload{{PerMillion: 1}}},
		},
		{
			// Localities may come in any priority order; an empty locality
			// (no region, zone or sub-zone) is a locality like any other.
			rule: "R-17.5",
			name: "priorities out of order and an empty locality",
			give: cla("e",
				locality("b", 1, 1, lbEndpoint("10.0.0.2", 1)),
				&v3endpointpb.LocalityLbEndpoints{Locality: &v3corepb.Locality{}, LoadBalancingWeight: wrapperspb.UInt32(1), LbEndpoints: []*v3endpointpb.LbEndpoint{lbEndpoint("10.0.0.1", 1)}},
			),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{
				loc("b", 1, 1, ep("10.0.0.2:1")),
				{Weight: 1, Endpoints: []Endpoint{ep("10.0.0.1:1")}},
			}},
		},
		{
			// endpoints of the same host on different ports are
			// different addresses; so are IPv6 and IPv4 forms.
			rule: "R-17.5",
			name: "same host on two ports",
			give: cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 1), lbEndpoint("10.0.0.1", 2), lbEndpoint("::ffff:10.0.0.1", 1))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1, ep("10.0.0.1:1"), ep("10.0.0.1:2"), ep("[::ffff:10.0.0.1]:1"))}},
		},
		{
			rule: "R-17.5",
			name: "locality without endpoints",
			give: cla("e", locality("z", 0, 5)),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 5)}},
		},

		// Invalid resources: per-resource errors.
		{
			rule: "R-17.5",
			name: "locality without locality",
			give: cla("e", func() *v3endpointpb.LocalityLbEndpoints {
				l := locality("z", 0, 1)
				l.Locality = nil
				return l
			}()),
			wantErr: "endpoints[0].locality: missing",
		},
		{
			rule:    "R-17.5",
			name:    "priority gap",
			give:    cla("e", locality("a", 0, 1), locality("b", 2, 1), locality("c", 2, 1)),
			wantErr: "endpoints: priority 1 has no locality",
		},
		{
			// checked after weight-0 localities are dropped.
			rule:    "R-17.5",
			name:    "priority gap from a weight-0 locality",
			give:    cla("e", locality("a", 0, 0), locality("b", 1, 1)),
			wantErr: "priority 0 has no locality",
		},
		{
			rule:    "R-17.5",
			name:    "priority beyond the number of localities",
			give:    cla("e", locality("a", 0, 1), locality("b", 7, 1)),
			wantErr: "endpoints[1].priority: priority 7 leaves a gap",
		},
		{
			rule: "R-17.5",
			name: "locality weight sum overflows",
			give: cla("e",
				locality("a", 0, math.MaxUint32, lbEndpoint("10.0.0.1", 1)),
				locality("b", 0, 1, lbEndpoint("10.0.0.2", 1)),
			),
			wantErr: "endpoints[1].load_balancing_weight: sum of locality weights of priority 0",
		},
		{
			rule:    "R-17.5",
			name:    "duplicate locality in a priority",
			give:    cla("e", locality("a", 0, 1), locality("a", 0, 2)),
			wantErr: `endpoints[1].locality: locality {region="r", zone="a", sub_zone=""} appears twice in priority 0`,
		},
		{
			rule: "R-17.5",
			name: "endpoint weight zero",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
				e.LoadBalancingWeight = wrapperspb.UInt32(0)
			}))),
			wantErr: "endpoints[0].lb_endpoints[0].load_balancing_weight: must be at least 1",
		},
		{
			rule: "R-17.5",
			name: "endpoint weight sum overflows",
			give: cla("e", locality("a", 0, 1,
				lbEndpoint("h1", 1, func(e *v3endpointpb.LbEndpoint) { e.LoadBalancingWeight = wrapperspb.UInt32(math.MaxUint32) }),
				lbEndpoint("h2", 1),
			)),
			wantErr: "endpoints[0].lb_endpoints[1].load_balancing_weight: sum of endpoint weights",
		},
		{
			rule:    "R-17.5",
			name:    "duplicate address across localities",
			give:    cla("e", locality("a", 0, 1, lbEndpoint("h", 1)), locality("b", 0, 1, lbEndpoint("h", 1))),
			wantErr: "endpoints[1].lb_endpoints[0].endpoint: duplicate address h:1",
		},
		{
			rule: "R-17.5",
			name: "duplicate additional address",
			give: cla("e", locality("a", 0, 1,
				lbEndpoint("h", 1),
				lbEndpoint("g", 1, func(e *v3endpointpb.LbEndpoint) {
					e.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr("h", 1)}}
				}),
			)),
			wantErr: "endpoints[0].lb_endpoints[1].endpoint: duplicate address h:1",
		},
		{
			rule:    "R-17.5",
			name:    "endpoint missing",
			give:    cla("e", locality("a", 0, 1, &v3endpointpb.LbEndpoint{})),
			wantErr: "endpoints[0].lb_endpoints[0].endpoint: missing",
		},
		{
			rule: "R-17.5",
			name: "named endpoint",
			give: cla("e", locality("a", 0, 1, &v3endpointpb.LbEndpoint{
				HostIdentifier: &v3endpointpb.LbEndpoint_EndpointName{EndpointName: "n"},
			})),
			wantErr: "endpoints[0].lb_endpoints[0].endpoint_name: named endpoints are not supported",
		},
		{
			rule: "R-17.5",
			name: "pipe address",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
				e.GetEndpoint().Address = &v3corepb.Address{Address: &v3corepb.Address_Pipe{Pipe: &v3corepb.Pipe{Path: "/p"}}}
			}))),
			wantErr: "endpoints[0].lb_endpoints[0].endpoint.address.socket_address: missing",
		},
		{
			rule:    "R-17.5",
			name:    "empty host",
			give:    cla("e", locality("a", 0, 1, lbEndpoint("", 1))),
			wantErr: "endpoint.address.socket_address.address: empty",
		},
		{
			rule: "R-17.5",
			name: "named port",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
				e.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = &v3corepb.SocketAddress_NamedPort{NamedPort: "http"}
			}))),
			wantErr: "socket_address.named_port: named ports are not supported",
		},
		{
			rule: "R-17.5",
			name: "bad additional address",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
				e.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{}}
			}))),
			wantErr: "endpoint.additional_addresses[0].address.socket_address: missing",
		},
		{
			rule:    "R-17.5",
			name:    "drop denominator unknown",
			give:    withDrops(cla("e"), drop("a", 1, 99)),
			wantErr: "policy.drop_overloads[0].drop_percentage.denominator: unsupported value 99",
		},
		{
			// a duplicate among the addresses of one endpoint.
			rule: "R-17.5",
			name: "duplicate additional address of the same endpoint",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
				e.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr("h", 1)}}
			}))),
			wantErr: "endpoints[0].lb_endpoints[0].endpoint: duplicate address h:1",
		},
		{
			// a weight-0 locality is dropped before its endpoints are
			// looked at, so it does not count for duplicates.
			rule:    "R-17.5",
			name:    "priority made only of weight-0 localities",
			give:    cla("e", locality("a", 0, 1, lbEndpoint("h", 1)), locality("b", 1, 0, lbEndpoint("h", 1)), locality("c", 2, 1, lbEndpoint("g", 1))),
			wantErr: "endpoints: priority 1 has no locality with a non-zero weight, but priority 2 has",
		},
		{
			// The scan reports the first error in field order, a duplicate
			// address like any other: a later invalid field does not hide it.
			rule: "R-17.5",
			name: "duplicate address before an invalid weight",
			give: cla("e",
				locality("a", 0, 1, lbEndpoint("h", 1), lbEndpoint("h", 1)),
				locality("b", 0, 1, lbEndpoint("g", 1, func(e *v3endpointpb.LbEndpoint) { e.LoadBalancingWeight = wrapperspb.UInt32(0) })),
			),
			wantErr: "endpoints[0].lb_endpoints[1].endpoint: duplicate address h:1",
		},
		{
			rule: "R-17.5",
			name: "invalid weight before a duplicate address",
			give: cla("e",
				locality("a", 0, 1, lbEndpoint("h", 1), lbEndpoint("g", 1, func(e *v3endpointpb.LbEndpoint) { e.LoadBalancingWeight = wrapperspb.UInt32(0) })),
				locality("b", 0, 1, lbEndpoint("h", 1)),
			),
			wantErr: "endpoints[0].lb_endpoints[1].load_balancing_weight: must be at least 1 when set",
		},
		{
			rule: "R-17.5",
			name: "duplicate address before a missing locality",
			give: cla("e",
				locality("a", 0, 1, lbEndpoint("h", 1)),
				locality("b", 0, 1, lbEndpoint("h", 1)),
				&v3endpointpb.LocalityLbEndpoints{LoadBalancingWeight: wrapperspb.UInt32(1)},
			),
			wantErr: "endpoints[1].lb_endpoints[0].endpoint: duplicate address h:1",
		},
		{
			rule: "R-17.5",
			name: "invalid address before a duplicate address in the same endpoint",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
				e.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr("h", 1)}, {Address: socketAddr("", 1)}}
			}))),
			wantErr: "endpoints[0].lb_endpoints[0].endpoint.additional_addresses[1].address.socket_address.address: empty",
		},
		{
			// One address in the IPv4 and the IPv6 notation is not a
			// duplicate: addresses compare as strings.
			rule: "R-17.5",
			name: "same port, different hosts",
			give: cla("e", locality("a", 0, 1, lbEndpoint("h", 1), lbEndpoint("h", 2), lbEndpoint("::1", 1), lbEndpoint("0:0::1", 1))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{
				loc("a", 0, 1, ep("h:1"), ep("h:2"), ep("[::1]:1"), ep("[0:0::1]:1")),
			}},
		},
		{
			// grpc-go reads a missing drop_percentage as 0% (gRPC C++
			// rejects it); nothing is dropped.
			rule: "R-17.5",
			name: "drop percentage missing",
			give: withDrops(cla("e"), &v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{Category: "c"}),
			want: &Endpoints{ClusterName: "e", DropOverloads: []DropOverload{{Category: "c"}}},
		},
	}
	return cases
}

// TestEndpoints_TopLevelErrors checks that an empty cluster_name and an
// undecodable resource are top-level errors.
func TestEndpoints_TopLevelErrors(t *testing.T) {
	cases := []struct {
		name    string
		give    *anypb.Any
		wantErr string
	}{
		{name: "empty cluster_name", give: mustAny(t, cla("", locality("z", 0, 1))), wantErr: "cluster_name: empty resource name"},
		{name: "undecodable", give: &anypb.Any{TypeUrl: EndpointsTypeURL, Value: []byte{0x0a, 0x10}}, wantErr: "decoding ClusterLoadAssignment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := EndpointsType.DecodeTyped(tc.give)
			if name != "" || v != nil || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DecodeTyped() = %q, %v, %v; want \"\", nil, error containing %q", name, v, err, tc.wantErr)
			}
		})
	}
}

// TestEndpoints_SharedLocalityNames checks that the locality names of
// resources decoded apart share their memory.
func TestEndpoints_SharedLocalityNames(t *testing.T) {
	var zones []string
	for _, name := range []string{"a", "b"} {
		_, e, err := EndpointsType.DecodeTyped(mustAny(t, cla(name, locality("zone-1", 0, 1, lbEndpoint("10.0.0.1", 80)))))
		if err != nil {
			t.Fatalf("DecodeTyped(%q) error: %v", name, err)
		}
		zones = append(zones, e.Localities[0].ID.Zone)
	}
	if zones[0] != "zone-1" || unsafe.StringData(zones[0]) != unsafe.StringData(zones[1]) {
		t.Fatalf("zones %q and %q do not share their memory", zones[0], zones[1])
	}
}

// TestHealthStatus_String checks that values and names mirror the proto
// enum.
func TestHealthStatus_String(t *testing.T) {
	cases := []struct {
		name  string
		give  HealthStatus
		proto v3corepb.HealthStatus
		want  string
	}{
		{name: "unknown", give: HealthStatusUnknown, proto: v3corepb.HealthStatus_UNKNOWN, want: "UNKNOWN"},
		{name: "healthy", give: HealthStatusHealthy, proto: v3corepb.HealthStatus_HEALTHY, want: "HEALTHY"},
		{name: "unhealthy", give: HealthStatusUnhealthy, proto: v3corepb.HealthStatus_UNHEALTHY, want: "UNHEALTHY"},
		{name: "draining", give: HealthStatusDraining, proto: v3corepb.HealthStatus_DRAINING, want: "DRAINING"},
		{name: "timeout", give: HealthStatusTimeout, proto: v3corepb.HealthStatus_TIMEOUT, want: "TIMEOUT"},
		{name: "degraded", give: HealthStatusDegraded, proto: v3corepb.HealthStatus_DEGRADED, want: "DEGRADED"},
		{name: "out of range", give: 42, proto: 42, want: "HealthStatus(42)"},
	}
	for _, tc := range cases {
		if got := tc.give.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want)
		}
		if got := HealthStatus(tc.proto); got != tc.give {
			t.Errorf("%s: HealthStatus(%v) = %d, want %d", tc.name, tc.proto, got, tc.give)
		}
	}
}

// mustStruct returns m as a Struct.
func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatalf("structpb.NewStruct: %v", err)
	}
	return s
}

// TestEndpoints_DuplicateAddressesAmongMany checks duplicate detection
// with enough addresses for hash collisions: none reported among
// distinct addresses, and the first duplicate at its exact position.
func TestEndpoints_DuplicateAddressesAmongMany(t *testing.T) {
	build := func(dupAt, dupOf int) *v3endpointpb.ClusterLoadAssignment {
		var locs []*v3endpointpb.LocalityLbEndpoints
		n := 0
		for l := range 3 {
			var eps []*v3endpointpb.LbEndpoint
			for range 400 {
				host := func(k int) string {
					return "10." + strconv.Itoa(k/65536) + "." + strconv.Itoa(k/256%256) + "." + strconv.Itoa(k%256)
				}
				first := n
				if n == dupAt {
					first = dupOf
				}
				eps = append(eps, lbEndpoint(host(first), 80, func(ep *v3endpointpb.LbEndpoint) {
					ep.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr(host(n), 81)}}
				}))
				n++
			}
			locs = append(locs, locality("z"+strconv.Itoa(l), 0, 1, eps...))
		}
		return cla("e", locs...)
	}
	_, got, err := EndpointsType.DecodeTyped(mustAny(t, build(-1, -1)))
	if err != nil {
		t.Fatalf("DecodeTyped(distinct addresses) error = %v", err)
	}
	seen := map[string]bool{}
	for _, l := range got.Localities {
		for _, e := range l.Endpoints {
			for _, a := range e.Addresses {
				seen[a] = true
			}
		}
	}
	if len(seen) != 2*1200 {
		t.Fatalf("decoded %d distinct addresses, want %d", len(seen), 2*1200)
	}
	for _, tc := range []struct{ dupAt, dupOf int }{{1, 0}, {799, 13}, {1199, 1198}, {400, 399}} {
		_, _, err := EndpointsType.DecodeTyped(mustAny(t, build(tc.dupAt, tc.dupOf)))
		want := "endpoints[" + strconv.Itoa(tc.dupAt/400) + "].lb_endpoints[" + strconv.Itoa(tc.dupAt%400) + "].endpoint: duplicate address 10.0." +
			strconv.Itoa(tc.dupOf/256) + "." + strconv.Itoa(tc.dupOf%256) + ":80"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeTyped(endpoint %d repeats the address of %d) error = %v, want it to contain %q", tc.dupAt, tc.dupOf, err, want)
		}
	}
}

// TestAddressSet_Grows checks the set past the size it was made for.
func TestAddressSet_Grows(t *testing.T) {
	s := newAddressSet(0)
	for i := range 1000 {
		s.all = append(s.all, strconv.Itoa(i))
		if !s.insert(i) {
			t.Fatalf("insert(%d) = false for a new address", i)
		}
	}
	for i := range 1000 {
		s.all = append(s.all, strconv.Itoa(i))
		if s.insert(len(s.all) - 1) {
			t.Fatalf("insert(%q) = true for an address already in the set", s.all[i])
		}
	}
}
