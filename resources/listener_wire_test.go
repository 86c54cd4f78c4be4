// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
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

// TestListener_WireAnyTypeURLs checks the fast path's reading of the type
// URL of an Any, which scans for UTF-8 only the type URLs it does not
// know: a type URL replaced by a later one is still checked, as
// proto.Unmarshal checks it, and a Listener whose filter config or
// api_listener has an invalid one is rejected by both paths alike.
func TestListener_WireAnyTypeURLs(t *testing.T) {
	anyBytes := func(typeURLs ...string) []byte {
		var b []byte
		for _, u := range typeURLs {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendString(b, u)
		}
		return b
	}
	withRouterConfig := func(cfg []byte) []byte {
		var f []byte
		f = protowire.AppendTag(f, filterNameField, protowire.BytesType)
		f = protowire.AppendString(f, "router")
		f = protowire.AppendTag(f, filterTypedConfField, protowire.BytesType)
		f = protowire.AppendBytes(f, cfg)
		h, err := proto.Marshal(hcm(t, "r", withFilters()))
		if err != nil {
			t.Fatal(err)
		}
		h = protowire.AppendTag(h, hcmFiltersField, protowire.BytesType)
		return protowire.AppendBytes(h, f)
	}
	listenerWith := func(apiListener []byte) *anypb.Any {
		var b []byte
		b = protowire.AppendTag(b, listenerNameField, protowire.BytesType)
		b = protowire.AppendString(b, "l")
		b = protowire.AppendTag(b, listenerAPIListenerField, protowire.BytesType)
		b = protowire.AppendBytes(b, protowire.AppendBytes(protowire.AppendTag(nil, apiListenerAnyField, protowire.BytesType), apiListener))
		return &anypb.Any{TypeUrl: ListenerTypeURL, Value: b}
	}
	hcmAny := func(typeURLs ...string) []byte {
		h, err := proto.Marshal(hcm(t, "r"))
		if err != nil {
			t.Fatal(err)
		}
		return protowire.AppendBytes(protowire.AppendTag(anyBytes(typeURLs...), 2, protowire.BytesType), h)
	}
	for _, tc := range []struct {
		name    string
		in      *anypb.Any
		wantErr bool
	}{
		{"router", listenerWith(hcmAny(hcmTypeURL)), false},
		{"router config type URL twice", listenerWith(append(anyBytes(hcmTypeURL), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), withRouterConfig(anyBytes(faultTypeURL, routerTypeURL)))...)), false},
		{"invalid router config type URL, replaced", listenerWith(append(anyBytes(hcmTypeURL), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), withRouterConfig(anyBytes("\xff", routerTypeURL)))...)), true},
		{"invalid router config type URL", listenerWith(append(anyBytes(hcmTypeURL), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), withRouterConfig(anyBytes("type.googleapis.com/\xff")))...)), true},
		{"invalid api_listener type URL, replaced", listenerWith(hcmAny("\xff", hcmTypeURL)), true},
		{"invalid api_listener type URL", listenerWith(hcmAny("\xff")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkListenerPaths(t, tc.in)
			if _, _, err := decodeListener(tc.in); (err != nil) != tc.wantErr {
				t.Fatalf("decodeListener() error = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

// TestListener_WireFilterChainLengths checks chains of one to six HTTP
// filters: the fast path takes up to maxWireFilters of them, in one block
// for one or two, and longer ones go through the proto path; the result
// is the same either way.
func TestListener_WireFilterChainLengths(t *testing.T) {
	for n := 1; n <= maxWireFilters+2; n++ {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			var fs []*v3httppb.HttpFilter
			for i := range n - 1 {
				fs = append(fs, httpFilter(t, "fault"+strconv.Itoa(i), &v3faultpb.HTTPFault{}))
			}
			in := mustAny(t, listener(t, "l", hcm(t, "r", withFilters(append(fs, routerFilter(t))...))))
			checkListenerPaths(t, in)
			var (
				v hcmView
				w listenerWire
			)
			if got, want := listenerFromWire(in.GetValue(), &v, &w), n <= maxWireFilters; got != want {
				t.Fatalf("listenerFromWire() = %v, want %v", got, want)
			}
			_, l, err := decodeListener(in)
			if err != nil {
				t.Fatalf("decodeListener() error = %v", err)
			}
			if len(l.HTTPFilters) != n || l.HTTPFilters[n-1].Name != "router" || l.HTTPFilters[0].Config.GetTypeUrl() == "" {
				t.Fatalf("decodeListener() filters = %+v, want %d ending with the router", l.HTTPFilters, n)
			}
		})
	}
}
