// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3aggregateclusterpb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with the current output")

// checkGolden compares got with testdata/name, or rewrites the file with
// -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(got), string(want)); diff != "" {
		t.Errorf("output differs from %s (-got, +want; run go test -update to accept):\n%s", path, diff)
	}
}

// goldenTime is the time of every golden event.
var goldenTime = time.Date(2026, 1, 2, 12, 0, 1, 0, time.UTC)

// decode decodes m with typ, failing the test if it is invalid.
func decode[T any](t *testing.T, typ resources.Type[T], m *anypb.Any) T {
	t.Helper()
	_, v, err := typ.DecodeTyped(m)
	if err != nil {
		t.Fatalf("decoding %s: %v", typ.TypeName(), err)
	}
	return v
}

// changedEvent returns the changed event of v, decoded from m with typ.
func changedEvent[T rawResource](t *testing.T, typ resources.Type[T], name, version string, m *anypb.Any) event {
	t.Helper()
	v := decode(t, typ, m)
	return event{
		Time: goldenTime, Kind: eventChanged, TypeName: typ.TypeName(), TypeURL: typ.TypeURL(),
		Name: name, Version: version, Value: v, Raw: v.Raw(),
	}
}

// goldenRouteConfig exercises every route match and action the text
// format renders.
func goldenRouteConfig(name string) *v3routepb.RouteConfiguration {
	route := func(m *v3routepb.RouteMatch, a *v3routepb.RouteAction) *v3routepb.Route {
		return &v3routepb.Route{Match: m, Action: &v3routepb.Route_Route{Route: a}}
	}
	toCluster := func(c string) *v3routepb.RouteAction {
		return &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: c}}
	}
	return &v3routepb.RouteConfiguration{
		Name: name,
		VirtualHosts: []*v3routepb.VirtualHost{
			{
				Name:    "api",
				Domains: []string{"api.example.com", "*.api.example.com"},
				Routes: []*v3routepb.Route{
					route(&v3routepb.RouteMatch{
						PathSpecifier: &v3routepb.RouteMatch_Path{Path: "/pkg.Svc/Get"},
						Headers: []*v3routepb.HeaderMatcher{
							{Name: "X-User", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
								MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "alice"}, IgnoreCase: true,
							}}},
							{Name: "x-debug", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}, InvertMatch: true},
							{Name: "x-shard", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_RangeMatch{RangeMatch: &v3typepb.Int64Range{Start: 1, End: 10}}},
						},
					}, &v3routepb.RouteAction{
						ClusterSpecifier:  &v3routepb.RouteAction_Cluster{Cluster: "api-get"},
						MaxStreamDuration: &v3routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(3 * time.Second)},
					}),
					route(&v3routepb.RouteMatch{
						PathSpecifier: &v3routepb.RouteMatch_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "/pkg.Svc/List.*"}},
						CaseSensitive: wrapperspb.Bool(false),
						RuntimeFraction: &v3corepb.RuntimeFractionalPercent{DefaultValue: &v3typepb.FractionalPercent{
							Numerator: 125, Denominator: v3typepb.FractionalPercent_TEN_THOUSAND,
						}},
					}, toCluster("api-list")),
					route(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/pkg.Svc/"}},
						&v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_WeightedClusters{WeightedClusters: &v3routepb.WeightedCluster{
							Clusters: []*v3routepb.WeightedCluster_ClusterWeight{
								{Name: "api-v1", Weight: wrapperspb.UInt32(75)},
								{Name: "api-v2", Weight: wrapperspb.UInt32(25)},
							},
						}}}),
					{
						Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/old/"}},
						Action: &v3routepb.Route_Redirect{Redirect: &v3routepb.RedirectAction{}},
					},
				},
			},
			{Name: "empty", Domains: []string{"*"}},
		},
	}
}

// goldenServerListener is a server-side Listener with matching chains,
// plaintext and TLS, over RDS, and a default chain.
func goldenServerListener() *v3listenerpb.Listener {
	return testutil.ServerListener("server", "[::]:8080",
		testutil.ServerFilterChain(testutil.FilterChainOptions{
			Name: "internal",
			Match: &v3listenerpb.FilterChainMatch{
				PrefixRanges:       []*v3corepb.CidrRange{{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)}},
				SourceType:         v3listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK,
				SourcePrefixRanges: []*v3corepb.CidrRange{{AddressPrefix: "10.1.0.0", PrefixLen: wrapperspb.UInt32(16)}},
				SourcePorts:        []uint32{443},
				TransportProtocol:  "raw_buffer",
			},
			RouteConfigName: "server-routes",
		}),
		testutil.ServerFilterChain(testutil.FilterChainOptions{
			Name:  "sni",
			Match: &v3listenerpb.FilterChainMatch{ServerNames: []string{"a.example"}},
			TLS:   testutil.DownstreamTLS(testutil.DownstreamTLSOptions{IdentityInstance: "id"}),
		}),
	)
}

// goldenEvents returns events of every kind and resource shape.
func goldenEvents(t *testing.T) []event {
	t.Helper()
	pack := testutil.MarshalAny
	ringHash := testutil.Cluster("ring", "")
	ringHash.LbPolicy = v3clusterpb.Cluster_RING_HASH
	ringHash.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{
		MinimumRingSize: wrapperspb.UInt64(64),
	}}
	ringHash.LrsServer = &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Self{Self: &v3corepb.SelfConfigSource{}}}
	leastRequest := testutil.Cluster("least", "eds-least")
	leastRequest.LbPolicy = v3clusterpb.Cluster_LEAST_REQUEST
	leastRequest.CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(100)}}}
	dns := &v3clusterpb.Cluster{
		Name:                 "dns",
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_LOGICAL_DNS},
		LoadAssignment:       testutil.Endpoints("dns", "dns.example.com", 443),
	}
	aggregate := &v3clusterpb.Cluster{
		Name: "agg",
		ClusterDiscoveryType: &v3clusterpb.Cluster_ClusterType{ClusterType: &v3clusterpb.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: pack(&v3aggregateclusterpb.ClusterConfig{Clusters: []string{"primary", "dns"}}),
		}},
	}
	eps := testutil.Endpoints("eds-svc", "10.0.0.1", 8080, 8081)
	eps.Endpoints[0].Locality = &v3corepb.Locality{Region: "eu-west1", Zone: "eu-west1-b", SubZone: "rack7"}
	eps.Endpoints[0].LbEndpoints[1].HealthStatus = v3corepb.HealthStatus_DRAINING
	eps.Endpoints[0].LbEndpoints[1].LoadBalancingWeight = wrapperspb.UInt32(3)
	eps.Endpoints[0].LbEndpoints[1].GetEndpoint().Hostname = "b.example.com"
	eps.Endpoints[0].LbEndpoints[1].GetEndpoint().AdditionalAddresses = []*v3endpointpb.Endpoint_AdditionalAddress{{
		Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
			Address: "fd00::1", PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: 8081},
		}}},
	}}
	backup := testutil.Endpoints("", "10.1.0.1", 9090).Endpoints[0]
	backup.Priority = 1
	backup.LoadBalancingWeight = wrapperspb.UInt32(2)
	eps.Endpoints = append(eps.Endpoints, backup)
	eps.Policy = &v3endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "throttle", DropPercentage: &v3typepb.FractionalPercent{Numerator: 5, Denominator: v3typepb.FractionalPercent_HUNDRED},
	}}}
	empty := testutil.Endpoints("eds-empty", "")
	empty.Endpoints = nil

	notFound := &client.ResourceError{TypeURL: resources.ClusterTypeURL, TypeName: "Cluster", Name: "missing", NodeID: "n1",
		Err: errors.Join(client.ErrResourceNotFound, errors.New("not received within 15s"))}
	invalid := &client.ResourceError{TypeURL: resources.ListenerTypeURL, TypeName: "Listener", Name: "svc", NodeID: "n1",
		Err: errors.New("resource invalid: version \"3\" rejected:\napi_listener: missing")}
	evs := []event{
		changedEvent(t, resources.ListenerType, "svc", "1", pack(testutil.Listener("svc", "route-svc"))),
		changedEvent(t, resources.ListenerType, "inline", "", pack(testutil.ListenerInline("inline", testutil.RouteConfig("inline-routes", "*", "c")))),
		changedEvent(t, resources.ListenerType, testutil.IstioInboundListenerPrefix+"10.0.0.7:8080", "3", pack(testutil.IstioInboundListener("10.0.0.7:8080", testutil.IstioInboundOptions{Allow: []string{"spiffe://cluster.local/ns/default/sa/client"}}))),
		changedEvent(t, resources.ListenerType, "server", "1", pack(goldenServerListener())),
		changedEvent(t, resources.RouteConfigType, "routes", "7", pack(goldenRouteConfig("routes"))),
		changedEvent(t, resources.ClusterType, "cluster-svc", "1", pack(testutil.Cluster("cluster-svc", "eds-svc"))),
		changedEvent(t, resources.ClusterType, "ring", "1", pack(ringHash)),
		changedEvent(t, resources.ClusterType, "least", "1", pack(leastRequest)),
		changedEvent(t, resources.ClusterType, "dns", "1", pack(dns)),
		changedEvent(t, resources.ClusterType, "agg", "1", pack(aggregate)),
		changedEvent(t, resources.EndpointsType, "eds-svc", "2", pack(eps)),
		changedEvent(t, resources.EndpointsType, "eds-empty", "2", pack(empty)),
		{Time: goldenTime, Kind: eventResourceError, TypeName: "Cluster", TypeURL: resources.ClusterTypeURL, Name: "missing", Err: notFound},
		{Time: goldenTime, Kind: eventAmbientError, TypeName: "Listener", TypeURL: resources.ListenerTypeURL, Name: "svc", Version: "2", Err: invalid},
	}
	// The origins: from the primary server, and stale from a fallback.
	evs[0].Server = "xds.example.com:443"
	evs[5].Server, evs[5].Stale = "backup.example.com:443", true
	return evs
}

// TestFormatEventText checks the text rendering of events against
// testdata/events.txt.
func TestFormatEventText(t *testing.T) {
	var b strings.Builder
	for _, ev := range goldenEvents(t) {
		b.WriteString(formatEventText(ev))
	}
	checkGolden(t, "events.txt", []byte(b.String()))
}

// TestFormatEventJSON checks the JSON rendering of events against
// testdata/events.jsonl: one object per line, with the resource as
// protojson (nested Anys included).
func TestFormatEventJSON(t *testing.T) {
	var b bytes.Buffer
	for _, ev := range goldenEvents(t) {
		line, err := formatEventRecord(outputJSON, ev)
		if err != nil {
			t.Fatalf("formatEventJSON(%s %s) = %v", ev.TypeName, ev.Name, err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || !json.Valid(line) {
			t.Errorf("formatEventJSON(%s %s) = %q, want one line of JSON", ev.TypeName, ev.Name, line)
		}
		b.Write(line)
	}
	checkGolden(t, "events.jsonl", b.Bytes())
}

// TestMarshalResource_UnknownType checks that a resource holding an Any of
// a type nobody registered is rendered as @type plus base64 bytes instead
// of failing.
func TestMarshalResource_UnknownType(t *testing.T) {
	a := &anypb.Any{TypeUrl: "type.googleapis.com/example.Unknown", Value: []byte{1, 2, 3}}
	got, err := marshalResource(a)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"@type":"type.googleapis.com/example.Unknown","value":"AQID"}`; string(got) != want {
		t.Fatalf("marshalResource() = %s, want %s", got, want)
	}
}

// goldenDump is a CSDS dump with a resource in every status.
func goldenDump() *v3statuspb.ClientConfig {
	ts := timestamppb.New(goldenTime)
	return &v3statuspb.ClientConfig{
		Node: &v3corepb.Node{Id: "n1", UserAgentName: "proxyless-xds"},
		GenericXdsConfigs: []*v3statuspb.ClientConfig_GenericXdsConfig{
			{
				TypeUrl: resources.ListenerTypeURL, Name: "svc", VersionInfo: "2",
				XdsConfig: testutil.MarshalAny(testutil.Listener("svc", "route-svc")), LastUpdated: ts,
				ClientStatus: v3adminpb.ClientResourceStatus_ACKED,
			},
			{
				TypeUrl: resources.RouteConfigTypeURL, Name: "route-svc", VersionInfo: "1",
				XdsConfig: testutil.MarshalAny(testutil.RouteConfig("route-svc", "svc", "cluster-svc")), LastUpdated: ts,
				ClientStatus: v3adminpb.ClientResourceStatus_NACKED,
				ErrorState: &v3adminpb.UpdateFailureState{
					LastUpdateAttempt: ts, VersionInfo: "2",
					Details: "virtual_hosts[0].routes[0].route.cluster:\tempty\nsecond line",
				},
			},
			{TypeUrl: resources.ClusterTypeURL, Name: "missing", ClientStatus: v3adminpb.ClientResourceStatus_DOES_NOT_EXIST},
			{TypeUrl: resources.EndpointsTypeURL, Name: "eds-svc", ClientStatus: v3adminpb.ClientResourceStatus_REQUESTED},
			{TypeUrl: "type.googleapis.com/example.v1.Custom", Name: "xdstp://auth/example.v1.Custom/c1", ClientStatus: v3adminpb.ClientResourceStatus_REQUESTED},
		},
	}
}

// goldenOrigins is the origin function of goldenDump: the Listener stale,
// persisted from a fallback server, the RouteConfiguration from the
// primary server, nothing cached for the others.
func goldenOrigins(typeURL, name string) (client.ResourceOrigin, bool) {
	switch {
	case typeURL == resources.ListenerTypeURL && name == "svc":
		return client.ResourceOrigin{ServerURI: "backup.example.com:443", Stale: true}, true
	case typeURL == resources.RouteConfigTypeURL && name == "route-svc":
		return client.ResourceOrigin{ServerURI: "xds.example.com:443"}, true
	}
	return client.ResourceOrigin{}, false
}

// TestFormatStatusTable checks the status table against
// testdata/status.txt: every status, a multi-line NACK error, a note for
// a REQUESTED resource, a custom type, and the SERVER column with a stale
// value.
func TestFormatStatusTable(t *testing.T) {
	var b bytes.Buffer
	notes := map[resourceKey]string{
		{resources.EndpointsTypeURL, "eds-svc"}: `xds: ClusterLoadAssignment "eds-svc": connection error: unavailable (node "n1")`,
		{resources.ClusterTypeURL, "missing"}:   "not shown: the resource has a status of its own",
	}
	if err := formatStatusTable(&b, goldenDump(), notes, goldenOrigins); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status.txt", b.Bytes())
}

// TestFormatStatusJSON checks the JSON dump against testdata/status.jsonl
// (one line, proto field names),
// with the "origins" field after the ClientConfig's, and that the output
// still reads as the ClientConfig when unknown fields are ignored.
func TestFormatStatusJSON(t *testing.T) {
	got, err := formatStatusStructured(outputJSON, goldenDump(), goldenOrigins)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status.jsonl", got)
	cc := &v3statuspb.ClientConfig{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(got, cc); err != nil {
		t.Fatalf("the output does not read as a ClientConfig: %v", err)
	}
	if !proto.Equal(cc, goldenDump()) {
		t.Errorf("the output reads as\n%v\nwant\n%v", cc, goldenDump())
	}
}

// TestFormatStatusJSON_NoOrigins checks that without origins (status
// --csds) the JSON output is exactly the ClientConfig's protojson.
func TestFormatStatusJSON_NoOrigins(t *testing.T) {
	got, err := formatStatusStructured(outputJSON, goldenDump(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(got, &v3statuspb.ClientConfig{}); err != nil {
		t.Fatalf("the output is not a ClientConfig: %v\n%s", err, got)
	}
}

// TestVersionFromDump checks that a version is attached to an event only
// when the dump holds the same resource.
func TestVersionFromDump(t *testing.T) {
	cc := goldenDump()
	lis := cc.GetGenericXdsConfigs()[0].GetXdsConfig()
	other := testutil.MarshalAny(testutil.Listener("svc", "other-route"))
	tests := []struct {
		name, typeURL, resName string
		raw                    *anypb.Any
		want                   string
	}{
		{"same resource", resources.ListenerTypeURL, "svc", lis, "2"},
		{"dump moved on", resources.ListenerTypeURL, "svc", other, ""},
		{"error event", resources.RouteConfigTypeURL, "route-svc", nil, "1"},
		{"not in dump", resources.ClusterTypeURL, "nope", nil, ""},
	}
	for _, tt := range tests {
		if got := versionFromDump(cc, tt.typeURL, tt.resName, tt.raw); got != tt.want {
			t.Errorf("%s: versionFromDump() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
