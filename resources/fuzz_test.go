// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
)

// fuzzDecode feeds random bytes as the value of a resource of typ and
// checks the decoding contract: no panic escapes; a
// successful decode has a name, a value whose Raw is the input, and a name
// the fast path agrees with; any reported name agrees with the fast path.
func fuzzDecode[T rawer](f *testing.F, typ Type[T], cases []decodeCase[T]) {
	for _, tc := range cases {
		f.Add(mustAny(f, tc.give).GetValue())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := &anypb.Any{TypeUrl: typ.TypeURL(), Value: b}
		name, v, err := typ.DecodeTyped(in)
		fast, ok := typ.Name(in)
		if name != "" && (!ok || fast != name) {
			t.Fatalf("DecodeTyped() name = %q (err %v), but Name() = %q, %v", name, err, fast, ok)
		}
		if err != nil {
			return
		}
		if name == "" {
			t.Fatalf("DecodeTyped() succeeded without a name")
		}
		var zero T
		if any(v) == any(zero) || v.Raw() != in {
			t.Fatalf("DecodeTyped() value %v does not carry the input as Raw", v)
		}
	})
}

func FuzzDecodeListener(f *testing.F)    { fuzzDecode(f, ListenerType, listenerCases(f)) }
func FuzzDecodeRouteConfig(f *testing.F) { fuzzDecode(f, RouteConfigType, routeConfigCases(f)) }
func FuzzDecodeCluster(f *testing.F)     { fuzzDecode(f, ClusterType, clusterCases(f)) }
func FuzzDecodeEndpoints(f *testing.F)   { fuzzDecode(f, EndpointsType, endpointsCases(f)) }
