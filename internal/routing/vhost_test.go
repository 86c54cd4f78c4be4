// SPDX-License-Identifier: Apache-2.0

package routing

import (
	"errors"
	"testing"

	"github.com/proxyless/xds/resources"
)

// TestSelectVirtualHost checks the virtual host selection of
// exact > suffix wildcard > prefix wildcard > "*", the longest
// pattern within a kind, the first of equals, ASCII case (only) ignored,
// patterns with several '*' read as gRPC and Envoy read them (a leading
// '*' a suffix wildcard, else a trailing one a prefix wildcard), and a
// virtual host with an invalid pattern never matching, without failing
// the others.
func TestSelectVirtualHost(t *testing.T) {
	vhs := func(domains ...[]string) *resources.RouteConfig {
		rc := &resources.RouteConfig{Name: "rc"}
		for i, d := range domains {
			rc.VirtualHosts = append(rc.VirtualHosts, resources.VirtualHost{Name: string(rune('a' + i)), Domains: d})
		}
		return rc
	}
	tests := []struct {
		name      string
		authority string
		rc        *resources.RouteConfig
		want      string // virtual host name; "" for an error
	}{
		{"exact beats suffix", "api.example.com", vhs([]string{"*.example.com"}, []string{"api.example.com"}), "b"},
		{"suffix beats prefix", "api.example.com", vhs([]string{"api.*"}, []string{"*.com"}), "b"},
		{"prefix beats universal", "api.example.com", vhs([]string{"*"}, []string{"api.*"}), "b"},
		{"universal", "anything", vhs([]string{"other"}, []string{"*"}), "b"},
		{"longest suffix", "a.b.example.com", vhs([]string{"*.com"}, []string{"*.example.com"}, []string{"*.b.example.com"}), "c"},
		{"longest prefix", "api.v1.example", vhs([]string{"api.v1.*"}, []string{"api.*"}), "a"},
		{"first of equals", "x.foo", vhs([]string{"*.foo"}, []string{"*.foo"}), "a"},
		{"several domains", "b.example.com", vhs([]string{"a.example.com", "b.example.com"}), "a"},
		{"case ignored", "API.Example.COM", vhs([]string{"*"}, []string{"api.example.com"}), "b"},
		{"case ignored in wildcards", "Api.Example.com", vhs([]string{"*.EXAMPLE.com"}), "a"},
		{"suffix needs the whole suffix", "example.com", vhs([]string{"*.example.com"}), ""},
		{"no match", "svc", vhs([]string{"other"}), ""},
		{"no virtual hosts", "svc", vhs(), ""},
		{"Kelvin sign is not k", "\u212aube", vhs([]string{"kube"}), ""},
		{"Kelvin sign in a suffix", "a.\u212a", vhs([]string{"*.k"}), ""},
		{"invalid pattern elsewhere", "svc", vhs([]string{"svc"}, []string{"a*b"}), "a"},
		{"invalid pattern: its virtual host never matches", "svc", vhs([]string{"*", "a*b"}, []string{"other"}), ""},
		{"invalid pattern, another virtual host matches", "svc", vhs([]string{"svc", "a*b"}, []string{"*"}), "b"},
		{"empty pattern", "svc", vhs([]string{"svc", ""}), ""},
		{"*s*: the suffix s*", "abs*", vhs([]string{"*s*"}), "a"},
		{"*s*: not a substring", "xsx", vhs([]string{"*s*"}), ""},
		{"**: the suffix *", "x*", vhs([]string{"**"}), "a"},
		{"**: not everything", "x", vhs([]string{"**"}), ""},
		{"*.svc*: the suffix .svc*", "a.SVC*", vhs([]string{"*.svc*"}), "a"},
		{"*.svc*: not a prefix", "a.svc.cluster.local", vhs([]string{"*.svc*"}), ""},
		{"s*v*: the prefix s*v", "s*vc", vhs([]string{"s*v*"}), "a"},
		{"s*v*: not a glob", "sav", vhs([]string{"s*v*"}), ""},
		{"suffix with a star beats a prefix", "s*v", vhs([]string{"s*v*"}, []string{"*v"}), "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SelectVirtualHost(tt.authority, tt.rc)
			if tt.want == "" {
				if !errors.Is(err, ErrNoVirtualHost) {
					t.Fatalf("SelectVirtualHost = %v, %v; want an error wrapping ErrNoVirtualHost", got, err)
				}
				return
			}
			if err != nil || got.Name != tt.want {
				t.Fatalf("SelectVirtualHost = %+v, %v; want virtual host %q", got, err, tt.want)
			}
		})
	}
}
