// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// TestEndpoints_WireAndProtoPathsAgree runs every ClusterLoadAssignment
// table case, and shapes the wire path reads differently from
// proto.Unmarshal or leaves to the proto path, through both paths of the
// decoder.
func TestEndpoints_WireAndProtoPathsAgree(t *testing.T) {
	for _, tc := range endpointsCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			checkEndpointsPaths(t, mustAny(t, tc.give))
		})
	}
	for _, tc := range endpointsWireCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			in := &anypb.Any{TypeUrl: EndpointsTypeURL, Value: tc.in}
			checkEndpointsPaths(t, in)
			if _, _, ok := endpointsFromWire(tc.in, false); ok != tc.wire {
				t.Fatalf("endpointsFromWire() ok = %v, want %v", ok, tc.wire)
			}
		})
	}
}

// endpointsWireCase is a serialized ClusterLoadAssignment and whether
// the wire path takes it.
type endpointsWireCase struct {
	name string
	in   []byte
	wire bool
}

// endpointsWireCases are the shapes TestEndpoints_WireAndProtoPathsAgree
// adds to the table cases; FuzzDecodeEndpoints is seeded from them too.
func endpointsWireCases(t testing.TB) []endpointsWireCase {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatalf("proto.Marshal: %v", err)
		}
		return b
	}
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	varint := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
	}
	// claOf is a ClusterLoadAssignment "e" of one locality (weight 1) whose
	// LocalityLbEndpoints is loc followed by the raw fields extra.
	claOf := func(loc *v3endpointpb.LocalityLbEndpoints, extra []byte) []byte {
		return field(field(nil, 1, []byte("e")), 2, append(marshal(loc), extra...))
	}
	// lbOf is claOf for one endpoint: the LbEndpoint ep followed by extra.
	lbOf := func(ep *v3endpointpb.LbEndpoint, extra []byte) []byte {
		return claOf(locality("z", 0, 1), field(nil, 2, append(marshal(ep), extra...)))
	}
	// epOf is lbOf for an Endpoint: ep followed by extra.
	epOf := func(ep *v3endpointpb.Endpoint, extra []byte) []byte {
		return lbOf(&v3endpointpb.LbEndpoint{}, field(nil, 1, append(marshal(ep), extra...)))
	}
	sockOf := func(extra []byte) []byte {
		sa := marshal(&v3corepb.SocketAddress{Address: "h", PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: 1}})
		return epOf(&v3endpointpb.Endpoint{}, field(nil, 1, field(nil, 1, append(sa, extra...))))
	}
	usual := lbEndpoint("10.0.0.1", 80, func(e *v3endpointpb.LbEndpoint) {
		e.HealthStatus = v3corepb.HealthStatus_DRAINING
		e.LoadBalancingWeight = wrapperspb.UInt32(7)
		e.GetEndpoint().Hostname = "host-1"
		e.GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr("::1", 80)}}
	})
	withHashKey := lbEndpoint("h", 1, func(e *v3endpointpb.LbEndpoint) {
		s, err := structpb.NewStruct(map[string]any{"hash_key": "k"})
		if err != nil {
			t.Fatal(err)
		}
		e.Metadata = &v3corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": s}}
	})
	return []endpointsWireCase{
		{name: "usual", in: marshal(cla("e", locality("a", 0, 2, usual), locality("b", 1, 3, lbEndpoint("10.0.0.2", 80)))), wire: true},
		{name: "benchmark resource", in: marshal(benchEndpoints(nil)), wire: true},
		{name: "weight-0 locality with an invalid endpoint", in: marshal(cla("e", locality("a", 0, 1, lbEndpoint("h", 1)), locality("b", 0, 0, lbEndpoint("", 1))))},
		{name: "weight-0 locality skipped", in: marshal(cla("e", locality("a", 0, 0, lbEndpoint("h", 1)), locality("b", 0, 1, lbEndpoint("h", 1)))), wire: true},
		{name: "empty locality", in: marshal(cla("e", locality("a", 0, 1), locality("b", 0, 1, lbEndpoint("h", 1)))), wire: true},
		{name: "locality sent twice, merged", in: claOf(locality("z", 0, 1, lbEndpoint("h", 1)), field(nil, 1, marshal(&v3corepb.Locality{SubZone: "s"})))},
		{name: "locality weight sent twice, merged", in: claOf(locality("z", 0, 1), field(nil, 3, marshal(&wrapperspb.UInt32Value{})))},
		{name: "priority as fixed32, unknown", in: claOf(locality("z", 0, 1), protowire.AppendFixed32(protowire.AppendTag(nil, 5, protowire.Fixed32Type), 3)), wire: true},
		{name: "priority repeated, last wins", in: claOf(locality("z", 1, 1), varint(nil, 5, 0)), wire: true},
		{name: "locality also as a varint, unknown", in: claOf(locality("z", 0, 1), varint(nil, 1, 1)), wire: true},
		{name: "locality only as a varint", in: claOf(&v3endpointpb.LocalityLbEndpoints{LoadBalancingWeight: wrapperspb.UInt32(1)}, varint(nil, 1, 1))},
		{name: "endpoint weight sent twice, merged", in: lbOf(usual, field(nil, 4, marshal(&wrapperspb.UInt32Value{Value: 2})))},
		{name: "endpoint weight empty", in: lbOf(lbEndpoint("h", 1), field(nil, 4, nil))},
		{name: "endpoint weight value as bytes, unknown", in: lbOf(lbEndpoint("h", 1), field(nil, 4, field(nil, 1, []byte("x"))))},
		{name: "endpoint sent twice, merged", in: lbOf(usual, field(nil, 1, marshal(&v3endpointpb.Endpoint{Hostname: "other"})))},
		{name: "endpoint then endpoint_name", in: lbOf(usual, field(nil, 5, []byte("n")))},
		{name: "health status repeated, last wins", in: lbOf(usual, varint(nil, 2, 1)), wire: true},
		{name: "health status unknown value", in: lbOf(lbEndpoint("h", 1), varint(nil, 2, 1<<40)), wire: true},
		{name: "hash key in metadata", in: marshal(cla("e", locality("z", 0, 1, withHashKey)))},
		{name: "additional address before the address", in: epOf(&v3endpointpb.Endpoint{AdditionalAddresses: []*v3endpointpb.Endpoint_AdditionalAddress{{Address: socketAddr("g", 2)}}}, field(nil, 1, marshal(socketAddr("h", 1)))), wire: true},
		{name: "additional address without address", in: epOf(&v3endpointpb.Endpoint{Address: socketAddr("h", 1)}, field(nil, 4, nil))},
		{name: "address sent twice, merged", in: epOf(&v3endpointpb.Endpoint{Address: socketAddr("h", 1)}, field(nil, 1, marshal(socketAddr("g", 2))))},
		{name: "hostname not UTF-8", in: epOf(&v3endpointpb.Endpoint{Address: socketAddr("h", 1)}, field(nil, 3, []byte{0xff}))},
		{name: "port repeated, last wins", in: sockOf(varint(nil, 3, 9)), wire: true},
		{name: "port too large, truncated", in: sockOf(varint(nil, 3, 1<<32+5)), wire: true},
		{name: "named port after the port", in: sockOf(field(nil, 4, []byte("http")))},
		{name: "host not UTF-8", in: sockOf(field(nil, 2, []byte{'h', 0xff}))},
		{name: "resolver name not UTF-8", in: sockOf(field(nil, 5, []byte{0xff}))},
		{name: "pipe after the socket address", in: epOf(&v3endpointpb.Endpoint{}, field(nil, 1, field(field(nil, 1, marshal(socketAddr("h", 1).GetSocketAddress())), 2, nil)))},
		{name: "cluster_name not UTF-8", in: field(nil, 1, []byte{0xff})},
		{name: "cluster_name repeated, last wins", in: field(marshal(cla("a", locality("z", 0, 1))), 1, []byte("b")), wire: true},
		{name: "no cluster_name", in: marshal(cla("", locality("z", 0, 1)))},
		{name: "policy", in: marshal(withDrops(cla("e"), drop("c", 1, 0)))},
		{name: "unknown fields", in: append(varint(claOf(locality("z", 0, 1, lbEndpoint("h", 1)), varint(nil, 99, 1)), 98, 1), field(nil, 97, []byte{0xff})...), wire: true},
		{name: "truncated", in: marshal(cla("e", locality("z", 0, 1, usual)))[:20]},
		{name: "bad tag", in: append(marshal(cla("e")), 0)},
		{name: "named_endpoints", in: field(marshal(cla("e", locality("z", 0, 1))), 5, field(field(nil, 1, []byte("k")), 2, marshal(&v3endpointpb.Endpoint{Hostname: "x"}))), wire: true},
	}
}
