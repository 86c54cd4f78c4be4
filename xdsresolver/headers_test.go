// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyless/xds/resources"
)

// TestGRPCHeaderMutations checks the adaptation of a level of header
// mutations to gRPC: a level gRPC applies as it is is not copied; one of
// response mutations only is left out; refused keys are dropped and
// "-bin" values decoded.
func TestGRPCHeaderMutations(t *testing.T) {
	opt := func(name, value string) resources.HeaderValueOption {
		return resources.HeaderValueOption{Name: name, Value: value}
	}
	plain := &resources.HeaderMutations{RequestHeadersToAdd: []resources.HeaderValueOption{opt("x-a", "1")}, RequestHeadersToRemove: []string{"x-b"}}
	if got := grpcHeaderMutations(plain); got != plain {
		t.Errorf("a level gRPC applies as it is: got %+v, want the same level", got)
	}
	if got := grpcHeaderMutations(&resources.HeaderMutations{ResponseHeadersToAdd: []resources.HeaderValueOption{opt("x-a", "1")}}); got != nil {
		t.Errorf("response mutations only: got %+v, want nil", got)
	}
	if got := grpcHeaderMutations(&resources.HeaderMutations{RequestHeadersToRemove: []string{"grpc-timeout", "te"}}); got != nil {
		t.Errorf("refused removals only: got %+v, want nil", got)
	}
	mixed := &resources.HeaderMutations{
		RequestHeadersToAdd: []resources.HeaderValueOption{
			opt("x-a", "1"), opt("grpc-x", "1"), opt("content-type", "text/plain"), opt("user-agent", "me"), opt("x-a@b", "1"),
			opt("x-latin", "caf\u00e9"), opt("x-tab", "a\tb"), opt("x-d-bin", "AAEC"), opt("x-e-bin", "AAE="), opt("x-f-bin", "AAE"), opt("x-g-bin", "%%"),
		},
		RequestHeadersToRemove: []string{"x-b", "grpc-trace-bin", "user-agent"},
		ResponseHeadersToAdd:   []resources.HeaderValueOption{opt("x-r", "1")},
	}
	want := &resources.HeaderMutations{
		RequestHeadersToAdd:    []resources.HeaderValueOption{opt("x-a", "1"), opt("x-d-bin", "\x00\x01\x02"), opt("x-e-bin", "\x00\x01"), opt("x-f-bin", "\x00\x01")},
		RequestHeadersToRemove: []string{"x-b"},
	}
	if diff := cmp.Diff(want, grpcHeaderMutations(mixed)); diff != "" {
		t.Errorf("adapted level (-want +got):\n%s", diff)
	}
	if mixed.RequestHeadersToAdd[7].Value != "AAEC" {
		t.Errorf("the level was changed: x-d-bin %q", mixed.RequestHeadersToAdd[7].Value)
	}
}
