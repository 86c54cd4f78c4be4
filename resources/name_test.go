// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestName_Parse covers xdstp name parsing and canonical form (gRFC A47,
//
func TestName_Parse(t *testing.T) {
	cases := []struct {
		name       string
		give       string
		want       *Name
		wantString string
		wantErr    string
	}{
		{
			name:       "authority, type and id",
			give:       "xdstp://auth.example.com/envoy.config.listener.v3.Listener/svc",
			want:       &Name{Scheme: "xdstp", Authority: "auth.example.com", Type: "envoy.config.listener.v3.Listener", ID: "svc"},
			wantString: "xdstp://auth.example.com/envoy.config.listener.v3.Listener/svc",
		},
		{
			// empty authority is allowed and selects the "" key.
			name:       "empty authority",
			give:       "xdstp:///t/id",
			want:       &Name{Scheme: "xdstp", Type: "t", ID: "id"},
			wantString: "xdstp:///t/id",
		},
		{
			name:       "id with slashes",
			give:       "xdstp://a/t/x/y/*",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "x/y/*"},
			wantString: "xdstp://a/t/x/y/*",
		},
		{
			// context parameters sorted by key.
			name:       "context params sorted",
			give:       "xdstp://a/t/id?z=1&b=2&a=3",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "id", ContextParams: map[string]string{"z": "1", "b": "2", "a": "3"}},
			wantString: "xdstp://a/t/id?a=3&b=2&z=1",
		},
		{
			// gRFC A47: duplicate keys, the last value wins.
			name:       "duplicate key last wins",
			give:       "xdstp://a/t/id?k=1&j=0&k=2",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "id", ContextParams: map[string]string{"k": "2", "j": "0"}},
			wantString: "xdstp://a/t/id?j=0&k=2",
		},
		{
			name:       "param without value, empty segments, value with '='",
			give:       "xdstp://a/t/id?&k&&v=a=b&",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "id", ContextParams: map[string]string{"k": "", "v": "a=b"}},
			wantString: "xdstp://a/t/id?k=&v=a=b",
		},
		{
			name:       "empty query dropped",
			give:       "xdstp://a/t/id?",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "id"},
			wantString: "xdstp://a/t/id",
		},
		{
			// Percent-encoding is kept as is, neither decoded nor added.
			name:       "percent-encoding kept",
			give:       "xdstp://a/t/a%3Bb%2Cc?k=%20x",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "a%3Bb%2Cc", ContextParams: map[string]string{"k": "%20x"}},
			wantString: "xdstp://a/t/a%3Bb%2Cc?k=%20x",
		},
		{
			name:       "processing directive kept",
			give:       "xdstp://a/t/id?b=1&a=2#alt=x?y",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "id", ContextParams: map[string]string{"a": "2", "b": "1"}},
			wantString: "xdstp://a/t/id?a=2&b=1#alt=x?y",
		},
		{
			name:       "empty processing directive kept",
			give:       "xdstp://a/t/id#",
			want:       &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "id"},
			wantString: "xdstp://a/t/id#",
		},
		{name: "old-style name", give: "listener.example.com", wantErr: "not an xdstp name"},
		{name: "empty", give: "", wantErr: "not an xdstp name"},
		{
			// only xdstp: selects an authority; other URIs are opaque.
			name: "other scheme", give: "foo://auth/t/id", wantErr: "not an xdstp name",
		},
		{name: "scheme is case sensitive", give: "XDSTP://a/t/id", wantErr: "not an xdstp name"},
		{name: "no slashes", give: "xdstp:a/t/id", wantErr: `without "//"`},
		{name: "no path", give: "xdstp://auth", wantErr: "without a path"},
		{name: "query before path", give: "xdstp://auth?x=/t/id", wantErr: "without a path"},
		{name: "no id", give: "xdstp://auth/t", wantErr: "empty id"},
		{name: "empty id", give: "xdstp://auth/t/", wantErr: "empty id"},
		{name: "empty type", give: "xdstp://auth//id", wantErr: "empty type segment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseName(tc.give)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseName(%q) = %+v, %v; want error containing %q", tc.give, got, err, tc.wantErr)
				}
				if c := CanonicalName(tc.give); c != tc.give {
					t.Errorf("CanonicalName(%q) = %q, want it unchanged", tc.give, c)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseName(%q) error = %v", tc.give, err)
			}
			if diff := cmp.Diff(got, tc.want, cmpopts.IgnoreUnexported(Name{})); diff != "" {
				t.Errorf("ParseName(%q) mismatch (-got, +want):\n%s", tc.give, diff)
			}
			if s := got.String(); s != tc.wantString {
				t.Errorf("String() = %q, want %q", s, tc.wantString)
			}
			if c := CanonicalName(tc.give); c != tc.wantString {
				t.Errorf("CanonicalName(%q) = %q, want %q", tc.give, c, tc.wantString)
			}
		})
	}
}

// TestName_StringEscapesDelimiters checks that a hand-built Name whose
// fields contain delimiters still yields a name that parses into the same
// structure.
func TestName_StringEscapesDelimiters(t *testing.T) {
	cases := []struct {
		name string
		give *Name
		want string
	}{
		{
			name: "plain",
			give: &Name{Scheme: "xdstp", Authority: "a", Type: "t", ID: "i", ContextParams: map[string]string{"k": "v"}},
			want: "xdstp://a/t/i?k=v",
		},
		{
			name: "delimiters escaped",
			give: &Name{Scheme: "xdstp", Authority: "a/b?", Type: "t/#", ID: "x/y?z#", ContextParams: map[string]string{"k&=#": "v=&#"}},
			want: "xdstp://a%2Fb%3F/t%2F%23/x/y%3Fz%23?k%26%3D%23=v=%26%23",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.give.String()
			if got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
			n, err := ParseName(got)
			if err != nil {
				t.Fatalf("ParseName(%q) error = %v", got, err)
			}
			if n.String() != got {
				t.Errorf("ParseName(%q).String() = %q, want it unchanged", got, n.String())
			}
		})
	}
}

// TestCanonicalName_NoAllocWithoutQuery checks the fast path used on every
// resource of every response.
func TestCanonicalName_NoAllocWithoutQuery(t *testing.T) {
	cases := []struct {
		name string
		give string
	}{
		{name: "old-style", give: "cluster-a"},
		{name: "xdstp without query", give: "xdstp://auth/envoy.config.cluster.v3.Cluster/c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			allocs := testing.AllocsPerRun(100, func() { got = CanonicalName(tc.give) })
			if got != tc.give || allocs != 0 {
				t.Fatalf("CanonicalName(%q) = %q with %v allocs, want it unchanged with 0", tc.give, got, allocs)
			}
		})
	}
}

// FuzzParseName checks that the canonical form is a fixed point:
// ParseName(n.String()).String() == n.String(), and that CanonicalName
// agrees with ParseName.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		"xdstp://a/t/id", "xdstp:///t/id", "xdstp://a/t/x/y?b=1&a=2", "xdstp://a/t/id?a=1&a=2",
		"xdstp://a/t/id?&k&&v=a=b&", "xdstp://a/t/id#frag", "xdstp://a/t/id#", "xdstp://a/t/%2F?k=%26",
		"foo://a/t/id", "plain", "xdstp://a/t", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseName(s)
		if err != nil {
			if c := CanonicalName(s); c != s {
				t.Fatalf("CanonicalName(%q) = %q for an invalid name, want it unchanged", s, c)
			}
			return
		}
		c := n.String()
		n2, err := ParseName(c)
		if err != nil {
			t.Fatalf("ParseName(%q) (canonical form of %q) error = %v", c, s, err)
		}
		if c2 := n2.String(); c2 != c {
			t.Fatalf("ParseName(%q).String() = %q, want %q", c, c2, c)
		}
		if got := CanonicalName(s); got != c {
			t.Fatalf("CanonicalName(%q) = %q, want %q", s, got, c)
		}
		if got := CanonicalName(c); got != c {
			t.Fatalf("CanonicalName(%q) = %q, want it unchanged", c, got)
		}
	})
}

// FuzzNameString checks that String of any hand-built Name with a
// non-empty type and id parses back and is canonical.
func FuzzNameString(f *testing.F) {
	f.Add("auth", "t", "id", "k", "v")
	f.Add("a/b", "t?", "x#y", "k&=", "v&#=")
	f.Fuzz(func(t *testing.T, authority, typ, id, k, v string) {
		if typ == "" || id == "" {
			return
		}
		n := &Name{Scheme: "xdstp", Authority: authority, Type: typ, ID: id, ContextParams: map[string]string{k: v}}
		s := n.String()
		n2, err := ParseName(s)
		if err != nil {
			t.Fatalf("ParseName(%q) error = %v", s, err)
		}
		if s2 := n2.String(); s2 != s {
			t.Fatalf("ParseName(%q).String() = %q, want it unchanged", s, s2)
		}
	})
}
