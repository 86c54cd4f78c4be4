// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestUnwrap covers the Resource wrapper handling of.
func TestUnwrap(t *testing.T) {
	inner := mustAny(t, edsCluster("c", "s"))
	cases := []struct {
		name    string
		give    *anypb.Any
		want    *anypb.Any
		wantErr string
	}{
		{name: "not wrapped", give: inner, want: inner},
		{
			// The wrapper's name and ttl are ignored.
			name: "wrapped",
			give: mustAny(t, &v3discoverypb.Resource{Name: "other", Ttl: durationpb.New(1), Resource: inner}),
			want: inner,
		},
		{
			// A heartbeat wrapper carries no resource: top level error.
			name:    "heartbeat without resource",
			give:    mustAny(t, &v3discoverypb.Resource{Name: "c", Ttl: durationpb.New(1)}),
			wantErr: `resource wrapper "c" has no resource`,
		},
		{
			name:    "garbage wrapper",
			give:    &anypb.Any{TypeUrl: ResourceWrapperTypeURL, Value: []byte{0xff}},
			wantErr: "decoding resource wrapper",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Unwrap(tc.give)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Unwrap() = %v, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unwrap() error = %v", err)
			}
			if diff := cmp.Diff(got, tc.want, protocmp.Transform()); diff != "" {
				t.Fatalf("Unwrap() mismatch (-got, +want):\n%s", diff)
			}
			// The unwrapped resource decodes like the bare one.
			if name, _, err := ClusterType.Decode(got); name != "c" || err != nil {
				t.Fatalf("Decode(Unwrap()) = %q, %v; want \"c\", nil", name, err)
			}
		})
	}
}
