// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3roundrobinpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	v3wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
)

// fuzzDecode feeds random bytes as the value of a resource of typ and
// checks the decoding contract: no panic escapes; a
// successful decode has a name, a value whose Raw is the input, and a name
// the fast path agrees with; any reported name agrees with the fast path.
// It also checks that wireCheck accepts exactly what proto.Unmarshal
// accepts for the resource's message, and extra checks the caller gives.
func fuzzDecode[T rawer](f *testing.F, typ Type[T], cases []decodeCase[T], md protoreflect.MessageDescriptor, extra func(*testing.T, *anypb.Any)) {
	for _, tc := range cases {
		f.Add(mustAny(f, tc.give).GetValue())
	}
	if typ.TypeURL() == ListenerTypeURL {
		// The HttpConnectionManagers of the Listener cases, for the
		// second half of the Listener target.
		for _, tc := range cases {
			if l, ok := any(tc.give).(*v3listenerpb.Listener); ok && l.GetApiListener() != nil {
				f.Add(l.GetApiListener().GetApiListener().GetValue())
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := &anypb.Any{TypeUrl: typ.TypeURL(), Value: b}
		name, v, err := typ.DecodeTyped(in)
		fast, ok := typ.Name(in)
		if name != "" && (!ok || fast != name) {
			t.Fatalf("DecodeTyped() name = %q (err %v), but Name() = %q, %v", name, err, fast, ok)
		}
		checkWire(t, b, md)
		if extra != nil {
			extra(t, in)
		}
		if err != nil {
			return
		}
		if name == "" {
			t.Fatalf("DecodeTyped() succeeded without a name")
		}
		var zero T
		if any(v) == any(zero) || !bytes.Equal(v.Raw().GetValue(), in.GetValue()) {
			t.Fatalf("DecodeTyped() value %v does not carry the input as Raw", v)
		}
	})
}

// checkWire fails t if wireCheck and proto.Unmarshal disagree on b.
func checkWire(t *testing.T, b []byte, md protoreflect.MessageDescriptor) {
	t.Helper()
	werr := wireCheck(b, md)
	if errors.Is(werr, errWireUnsupported) {
		return
	}
	perr := proto.Unmarshal(b, newMessage(md))
	if (werr == nil) != (perr == nil) {
		t.Fatalf("wireCheck(%s) = %v, but proto.Unmarshal = %v", md.FullName(), werr, perr)
	}
}

// checkListenerPaths fails t if the wire and proto paths of the Listener
// decoder disagree.
func checkListenerPaths(t *testing.T, in *anypb.Any) {
	t.Helper()
	checkPaths(t, in, decodeListener, decodeListenerProto)
}

// checkPaths fails t if decode (a decoder with a wire path) and
// decodeProto (its proto path) disagree on in: name, error text, value
// and raw bytes.
func checkPaths[T rawer](t *testing.T, in *anypb.Any, decode, decodeProto func(*anypb.Any) (string, T, error)) {
	t.Helper()
	name, v, err := decode(in)
	pname, pv, perr := decodeProto(in)
	if name != pname || (err == nil) != (perr == nil) || (err != nil && err.Error() != perr.Error()) {
		t.Fatalf("wire path = %q, %v; proto path = %q, %v", name, err, pname, perr)
	}
	if diff := cmp.Diff(v, pv, cmpOpts); diff != "" {
		t.Fatalf("wire and proto paths differ (-wire, +proto):\n%s", diff)
	}
	if err == nil && !proto.Equal(v.Raw(), pv.Raw()) {
		t.Fatalf("wire path Raw() = %v, proto path Raw() = %v", v.Raw(), pv.Raw())
	}
}

func FuzzDecodeListener(f *testing.F) {
	fuzzDecode(f, ListenerType, listenerCases(f), listenerDesc, func(t *testing.T, in *anypb.Any) {
		checkListenerPaths(t, in)
		// The input again, as the HttpConnectionManager of a Listener, so
		// that the fuzzer reaches the inner message directly.
		checkWire(t, in.GetValue(), hcmDesc)
		lis, err := proto.Marshal(&v3listenerpb.Listener{Name: "l", ApiListener: &v3listenerpb.ApiListener{
			ApiListener: &anypb.Any{TypeUrl: hcmTypeURL, Value: in.GetValue()},
		}})
		if err != nil {
			t.Fatalf("proto.Marshal: %v", err)
		}
		checkListenerPaths(t, &anypb.Any{TypeUrl: ListenerTypeURL, Value: lis})
	})
}

func FuzzDecodeRouteConfig(f *testing.F) {
	fuzzDecode(f, RouteConfigType, routeConfigCases(f), (*v3routepb.RouteConfiguration)(nil).ProtoReflect().Descriptor(), nil)
}

func FuzzDecodeCluster(f *testing.F) {
	for _, child := range []*v3clusterpb.LoadBalancingPolicy{
		lbPolicies(f, &v3roundrobinpb.RoundRobin{}),
		lbPolicies(f, &anypb.Any{TypeUrl: "type.googleapis.com/example.LB"}, &v3roundrobinpb.RoundRobin{}),
		lbPolicies(f, &v3wrrlocalitypb.WrrLocality{EndpointPickingPolicy: lbPolicies(f, &v3roundrobinpb.RoundRobin{})}),
	} {
		b, err := proto.Marshal(&v3wrrlocalitypb.WrrLocality{EndpointPickingPolicy: child})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	fuzzDecode(f, ClusterType, clusterCases(f), (*v3clusterpb.Cluster)(nil).ProtoReflect().Descriptor(), func(t *testing.T, in *anypb.Any) {
		// The input again, as a WrrLocality config: the wire and proto
		// reads of its child policies must agree.
		checkWire(t, in.GetValue(), wrrLocalityDesc)
		m := &v3wrrlocalitypb.WrrLocality{}
		perr := proto.Unmarshal(in.GetValue(), m)
		var got, want []lbEntry
		collect := func(out *[]lbEntry) func(int, lbEntry) bool {
			return func(_ int, e lbEntry) bool { *out = append(*out, e); return false }
		}
		complete := lbList{wire: in.GetValue()}.each(collect(&got))
		if perr != nil && complete {
			t.Fatalf("lbList.each() read to the end bytes proto.Unmarshal rejects: %v", perr)
		}
		if perr == nil && complete {
			lbList{proto: m.GetEndpointPickingPolicy()}.each(collect(&want))
			if diff := cmp.Diff(got, want, cmp.AllowUnexported(lbEntry{}), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("the wire read of a WrrLocality differs from proto.Unmarshal (-wire, +proto):\n%s", diff)
			}
		}
		// And the policy it converts to, wherever it is read from.
		wp, werr := wrrLocalityPolicy(in.GetValue(), -1)
		if perr != nil {
			if werr == nil {
				t.Fatalf("wrrLocalityPolicy() accepted bytes proto.Unmarshal rejects: %v", perr)
			}
			return
		}
		pp, pErr := lbPolicyFromProto(lbList{proto: m.GetEndpointPickingPolicy()}, 0)
		if pErr != nil {
			pErr = withFieldPrefix("endpoint_picking_policy", pErr)
		} else {
			pp.WeightedByLocality = true
		}
		if fmt.Sprint(werr) != fmt.Sprint(pErr) {
			t.Fatalf("wrrLocalityPolicy() error = %v; from the proto %v", werr, pErr)
		}
		if diff := cmp.Diff(wp, pp); diff != "" {
			t.Fatalf("lbPolicyFromProto(wire) differs from the proto path (-wire, +proto):\n%s", diff)
		}
	})
}

func FuzzDecodeEndpoints(f *testing.F) {
	for _, tc := range endpointsWireCases(f) {
		f.Add(tc.in)
	}
	fuzzDecode(f, EndpointsType, endpointsCases(f), claDesc, checkEndpointsPaths)
}

// checkEndpointsPaths fails t if the wire and proto paths of the
// ClusterLoadAssignment decoder disagree, without options and with
// WithHTTPConnect.
func checkEndpointsPaths(t *testing.T, in *anypb.Any) {
	t.Helper()
	for _, o := range []decodeOptions{{}, {httpConnect: true}} {
		checkPaths(t, in,
			func(in *anypb.Any) (string, *Endpoints, error) { return decodeEndpoints(in, o) },
			func(in *anypb.Any) (string, *Endpoints, error) { return decodeEndpointsProto(in, o) })
	}
}

// TestListener_WireAndProtoPathsAgree runs every Listener table case, and
// the HttpConnectionManager of each with extra shapes, through both paths
// of the decoder.
func TestListener_WireAndProtoPathsAgree(t *testing.T) {
	for _, tc := range listenerCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			checkListenerPaths(t, mustAny(t, tc.give))
		})
	}
	// The wire path reads the route specifier by its three field numbers.
	if n := hcmDesc.Oneofs().ByName("route_specifier").Fields().Len(); n != 3 {
		t.Fatalf("route_specifier has %d members; listener_wire.go knows 3", n)
	}
	// The wire path must actually be taken for the usual shape.
	var (
		v hcmView
		w listenerWire
	)
	if !listenerFromWire(mustAny(t, listener(t, "l", hcm(t, "r"))).GetValue(), &v, &w) {
		t.Fatal("listenerFromWire() did not take the usual Listener")
	}
}
