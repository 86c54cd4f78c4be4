// SPDX-License-Identifier: Apache-2.0

package client

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resources"
)

// TestRegistry covers the fixed, ordered type registry.
func TestRegistry(t *testing.T) {
	widget := resources.NewType(resources.TypeConfig[string]{
		TypeURL: "type.googleapis.com/example.v1.Widget",
		Decode:  func(*anypb.Any) (string, string, error) { return "", "", nil },
	})
	cases := []struct {
		name     string
		give     []resources.ResourceType
		wantURLs []string
		wantErr  string
	}{
		{
			name:     "builtin order",
			give:     resources.BuiltinTypes(),
			wantURLs: []string{resources.ListenerTypeURL, resources.RouteConfigTypeURL, resources.ClusterTypeURL, resources.EndpointsTypeURL},
		},
		{
			name:     "custom after builtin",
			give:     append(resources.BuiltinTypes(), widget),
			wantURLs: []string{resources.ListenerTypeURL, resources.RouteConfigTypeURL, resources.ClusterTypeURL, resources.EndpointsTypeURL, widget.TypeURL()},
		},
		{name: "empty", give: nil, wantURLs: nil},
		{name: "duplicate URL", give: []resources.ResourceType{resources.ClusterType, widget, resources.ClusterType}, wantErr: "registered twice"},
		{name: "nil type", give: []resources.ResourceType{resources.ClusterType, nil}, wantErr: "type 1 is nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newRegistry(tc.give...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("newRegistry() = %v, %v; want error containing %q", r, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("newRegistry() error = %v", err)
			}
			var urls []string
			for _, typ := range r.Types() {
				urls = append(urls, typ.TypeURL())
			}
			if diff := cmp.Diff(urls, tc.wantURLs); diff != "" {
				t.Errorf("Types() URLs mismatch (-got, +want):\n%s", diff)
			}
			for _, u := range tc.wantURLs {
				if typ, ok := r.Lookup(u); !ok || typ.TypeURL() != u {
					t.Errorf("Lookup(%q) = %v, %v; want the type", u, typ, ok)
				}
			}
			if typ, ok := r.Lookup("type.googleapis.com/unknown.Type"); ok {
				t.Errorf("Lookup(unknown) = %v, true; want false", typ)
			}
		})
	}
}
