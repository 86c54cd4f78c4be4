// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// kind is what the cells need of one built-in resource type: valid
// resources whose content depends on a generation (so that an update is
// seen as one), an invalid one, an oversize one, and a watch through the
// public API that reports each value as its name and tag.
type kind struct {
	name    string // subtest name: the type's short name
	typeURL string
	// deletesInSotW: a SotW response that leaves out a resource deletes
	// it (Listener, Cluster; ).
	deletesInSotW bool
	// legacyWildcard: the legacy wildcard (an empty first request) is
	// defined for the type (Listener, Cluster; xDS protocol, "How the
	// client specifies what resources to return").
	legacyWildcard bool

	valid    func(name string, gen int) proto.Message // a valid resource; tag(gen) tells generations apart
	invalid  func(name string) proto.Message          // a resource the client rejects (NACKs)
	oversize func(name string, bytes int) proto.Message
	add      func(r *testutil.Resources, m proto.Message)
	tag      func(gen int) string
	watch    func(c *client.Client, name string, r *recorder) (cancel func())
	watchAll func(c *client.Client, r *recorder) (cancel func())
}

// kinds are the four built-in types, in the order of the xDS protocol.
var kinds = []*kind{listenerKind, routeKind, clusterKind, endpointsKind}

// resourcesOf returns a snapshot of version holding ms, all of type k.
func (k *kind) resourcesOf(version string, ms ...proto.Message) testutil.Resources {
	r := testutil.Resources{Version: version}
	for _, m := range ms {
		k.add(&r, m)
	}
	return r
}

// bigMetadata returns metadata whose serialized size exceeds bytes.
func bigMetadata(bytes int) *v3corepb.Metadata {
	return &v3corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{
		"transporttest": {Fields: map[string]*structpb.Value{"padding": structpb.NewStringValue(strings.Repeat("x", bytes))}},
	}}
}

var listenerKind = &kind{
	name:           "Listener",
	typeURL:        resources.ListenerTypeURL,
	deletesInSotW:  true,
	legacyWildcard: true,
	valid: func(name string, gen int) proto.Message {
		return testutil.Listener(name, fmt.Sprintf("route-g%d", gen))
	},
	invalid: func(name string) proto.Message {
		// api_listener must hold an HttpConnectionManager.
		l := testutil.Listener(name, "route")
		l.ApiListener.ApiListener = testutil.MarshalAny(testutil.Cluster("not-an-hcm", ""))
		return l
	},
	oversize: func(name string, bytes int) proto.Message {
		l := testutil.Listener(name, "route-big")
		l.Metadata = bigMetadata(bytes)
		return l
	},
	add: func(r *testutil.Resources, m proto.Message) {
		r.Listeners = append(r.Listeners, m.(*v3listenerpb.Listener))
	},
	tag: func(gen int) string { return fmt.Sprintf("route-g%d", gen) },
	watch: func(c *client.Client, name string, r *recorder) func() {
		return client.Watch(c, resources.ListenerType, name, typed(r, describeListener))
	},
	watchAll: func(c *client.Client, r *recorder) func() {
		return client.WatchAll(c, resources.ListenerType, typed(r, describeListener))
	},
}

func describeListener(l *resources.Listener) (string, string) { return l.Name, l.RouteConfigName }

var routeKind = &kind{
	name:    "RouteConfiguration",
	typeURL: resources.RouteConfigTypeURL,
	valid: func(name string, gen int) proto.Message {
		return testutil.RouteConfig(name, fmt.Sprintf("svc-g%d", gen), "cluster")
	},
	invalid: func(name string) proto.Message {
		// A route must name a cluster.
		return testutil.RouteConfig(name, "svc", "")
	},
	oversize: func(name string, bytes int) proto.Message {
		rc := testutil.RouteConfig(name, "svc-big", "cluster")
		rc.Metadata = bigMetadata(bytes)
		return rc
	},
	add: func(r *testutil.Resources, m proto.Message) {
		r.Routes = append(r.Routes, m.(*v3routepb.RouteConfiguration))
	},
	tag: func(gen int) string { return fmt.Sprintf("svc-g%d", gen) },
	watch: func(c *client.Client, name string, r *recorder) func() {
		return client.Watch(c, resources.RouteConfigType, name, typed(r, describeRoute))
	},
	watchAll: func(c *client.Client, r *recorder) func() {
		return client.WatchAll(c, resources.RouteConfigType, typed(r, describeRoute))
	},
}

func describeRoute(rc *resources.RouteConfig) (string, string) {
	if len(rc.VirtualHosts) == 0 || len(rc.VirtualHosts[0].Domains) == 0 {
		return rc.Name, ""
	}
	return rc.Name, rc.VirtualHosts[0].Domains[0]
}

var clusterKind = &kind{
	name:           "Cluster",
	typeURL:        resources.ClusterTypeURL,
	deletesInSotW:  true,
	legacyWildcard: true,
	valid:          func(name string, gen int) proto.Message { return testutil.Cluster(name, fmt.Sprintf("eds-g%d", gen)) },
	invalid: func(name string) proto.Message {
		// STATIC is not a discovery type gRPC supports.
		c := testutil.Cluster(name, "")
		c.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC}
		return c
	},
	oversize: func(name string, bytes int) proto.Message {
		c := testutil.Cluster(name, "eds-big")
		c.Metadata = bigMetadata(bytes)
		return c
	},
	add: func(r *testutil.Resources, m proto.Message) {
		r.Clusters = append(r.Clusters, m.(*v3clusterpb.Cluster))
	},
	tag: func(gen int) string { return fmt.Sprintf("eds-g%d", gen) },
	watch: func(c *client.Client, name string, r *recorder) func() {
		return client.Watch(c, resources.ClusterType, name, typed(r, describeCluster))
	},
	watchAll: func(c *client.Client, r *recorder) func() {
		return client.WatchAll(c, resources.ClusterType, typed(r, describeCluster))
	},
}

func describeCluster(c *resources.Cluster) (string, string) { return c.Name, c.EDSServiceName }

var endpointsKind = &kind{
	name:    "ClusterLoadAssignment",
	typeURL: resources.EndpointsTypeURL,
	valid: func(name string, gen int) proto.Message {
		return testutil.Endpoints(name, "127.0.0.1", uint32(10000+gen))
	},
	invalid: func(name string) proto.Message {
		// Priorities must be 0..N-1 without gaps.
		e := testutil.Endpoints(name, "127.0.0.1", 10000)
		e.Endpoints[0].Priority = 1
		return e
	},
	oversize: func(name string, bytes int) proto.Message {
		e := testutil.Endpoints(name, "127.0.0.1", 10999)
		e.Endpoints[0].LbEndpoints[0].Metadata = bigMetadata(bytes)
		e.Endpoints[0].LoadBalancingWeight = wrapperspb.UInt32(1)
		return e
	},
	add: func(r *testutil.Resources, m proto.Message) {
		r.Endpoints = append(r.Endpoints, m.(*v3endpointpb.ClusterLoadAssignment))
	},
	tag: func(gen int) string { return fmt.Sprintf("127.0.0.1:%d", 10000+gen) },
	watch: func(c *client.Client, name string, r *recorder) func() {
		return client.Watch(c, resources.EndpointsType, name, typed(r, describeEndpoints))
	},
	watchAll: func(c *client.Client, r *recorder) func() {
		return client.WatchAll(c, resources.EndpointsType, typed(r, describeEndpoints))
	},
}

func describeEndpoints(e *resources.Endpoints) (string, string) {
	l := e.Localities
	if len(l) == 0 || len(l[0].Endpoints) == 0 || len(l[0].Endpoints[0].Addresses) == 0 {
		return e.ClusterName, ""
	}
	return e.ClusterName, l[0].Endpoints[0].Addresses[0]
}
