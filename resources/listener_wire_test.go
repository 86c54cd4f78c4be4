// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// TestListener_WireRepeatedOneof checks that the Listener wire fast path
// never accepts a oneof field sent more than once, which proto.Unmarshal
// merges (the same member) or replaces (another member): such Listeners
// must decode as the proto path decodes them. Each case is valid, so that
// a fast path that keeps only the last occurrence (and loses the merged
// config_source) disagrees visibly.
func TestListener_WireRepeatedOneof(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		t.Helper()
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// rds twice: the first carries config_source, the second only the
	// name; merged, the RDS config has both.
	rdsWithSource := &v3httppb.HttpConnectionManager{RouteSpecifier: &v3httppb.HttpConnectionManager_Rds{Rds: &v3httppb.Rds{
		ConfigSource: adsSource(), RouteConfigName: "first",
	}}, HttpFilters: []*v3httppb.HttpFilter{routerFilter(t)}}
	rdsNameOnly := &v3httppb.HttpConnectionManager{RouteSpecifier: &v3httppb.HttpConnectionManager_Rds{Rds: &v3httppb.Rds{
		RouteConfigName: "second",
	}}}
	// route_config, then rds: the last member wins.
	inline := &v3httppb.HttpConnectionManager{RouteSpecifier: &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: &v3routepb.RouteConfiguration{Name: "inline"}}}
	rds := hcm(t, "after-inline")

	for _, tc := range []struct {
		name     string
		hcm      []byte
		wantName string
	}{
		{"rds twice, merged", append(marshal(rdsWithSource), marshal(rdsNameOnly)...), "second"},
		{"route_config then rds", append(marshal(inline), marshal(rds)...), "after-inline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis := marshal(&v3listenerpb.Listener{Name: "l", ApiListener: &v3listenerpb.ApiListener{
				ApiListener: &anypb.Any{TypeUrl: hcmTypeURL, Value: tc.hcm},
			}})
			in := &anypb.Any{TypeUrl: ListenerTypeURL, Value: lis}
			checkListenerPaths(t, in)
			_, v, err := decodeListener(in)
			if err != nil {
				t.Fatalf("decodeListener: %v, want the merged Listener", err)
			}
			if got := v.RouteConfigName; got != tc.wantName {
				t.Fatalf("RouteConfigName = %q, want %q", got, tc.wantName)
			}
		})
	}
}
