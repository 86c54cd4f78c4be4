// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"bytes"
	"errors"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
)

// mustAny marshals m into an Any, failing the test on error.
func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatalf("anypb.New(%T): %v", m, err)
	}
	return a
}

// cmpOpts compare decoded values: raw is checked separately (Raw() must
// return a copy of the input's bytes), protos inside values by content.
var cmpOpts = cmp.Options{
	cmpopts.IgnoreUnexported(Listener{}, RouteConfig{}, Cluster{}, Endpoints{}, FilterChain{}),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	protocmp.Transform(),
	cmpopts.EquateEmpty(),
	cmp.AllowUnexported(RegexRewrite{}),
	// Errors (VirtualHost.HTTPRouteErrors) are compared by message.
	cmp.Comparer(func(a, b error) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Error() == b.Error()
	}),
	// Compiled regexes are compared by pattern; the tests of the regex
	// helper check their full-match semantics.
	cmp.Comparer(func(a, b *regexp.Regexp) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.String() == b.String()
	}),
}

// rawer is implemented by every decoded value.
type rawer interface{ Raw() *anypb.Any }

// decodeCase is one row of a decoder table test.
type decodeCase[T any] struct {
	rule    string // the rule of docs/protocol.md the case checks, for example "R-17.3"
	name    string
	give    proto.Message // the resource, marshalled into an Any by the runner
	want    T             // ignored when wantErr is set
	wantErr string        // substring of the error (field path and reason); "" means valid
}

// runDecodeCases runs a decoder table test for typ. wantName returns the
// name Decode must report for give when the resource has a name: every
// case of these tables is either valid or a per-resource error.
func runDecodeCases[T rawer](t *testing.T, typ Type[T], wantName func(proto.Message) string, cases []decodeCase[T]) {
	t.Helper()
	for _, tc := range cases {
		if tc.rule == "" {
			t.Errorf("case %q cites no rule", tc.name)
		}
		t.Run(tc.name, func(t *testing.T) {
			in := mustAny(t, tc.give)
			name, got, err := typ.DecodeTyped(in)
			if n := wantName(tc.give); name != CanonicalName(n) {
				t.Errorf("DecodeTyped() name = %q, want %q", name, CanonicalName(n))
			}
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("DecodeTyped() = %+v, want error containing %q", got, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeTyped() error = %q, want it to contain %q", err, tc.wantErr)
				}
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("DecodeTyped() error %q (%T) is not a *ValidationError", err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeTyped() error = %v, want nil", err)
			}
			if diff := cmp.Diff(got, tc.want, cmpOpts); diff != "" {
				t.Errorf("DecodeTyped() value mismatch (-got, +want):\n%s", diff)
			}
			if r := got.Raw(); r.GetTypeUrl() != typ.TypeURL() || !bytes.Equal(r.GetValue(), in.GetValue()) {
				t.Errorf("Raw() = %v, want the decoded Any's bytes with type URL %q", r, typ.TypeURL())
			} else if r.Value[0]++; bytes.Equal(got.Raw().GetValue(), r.GetValue()) {
				t.Errorf("Raw() returned the cached bytes, not a copy: changing them changed the value")
			}
			if fast, ok := typ.Name(in); !ok || fast != name {
				t.Errorf("Name() = %q, %v; want %q, true (the name Decode returned)", fast, ok, name)
			}
		})
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
