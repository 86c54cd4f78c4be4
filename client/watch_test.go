// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestWatch_ChainArrives checks that a Listener → RouteConfiguration →
// Cluster → ClusterLoadAssignment chain served by a management server over
// gRPC on loopback reaches four typed watchers.
func TestWatch_ChainArrives(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080, 8081}}))
	c := newClient(t, ms, testutil.BootstrapOptions{})

	lw := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", lw)()
	l := lw.wantKind(ctx, t, changed, nil).value
	if l.Name != "svc" || l.RouteConfigName != "route-svc" {
		t.Fatalf("Listener = {Name: %q, RouteConfigName: %q}, want {svc, route-svc}", l.Name, l.RouteConfigName)
	}

	rw := newRecorder[*resources.RouteConfig]()
	defer client.Watch(c, resources.RouteConfigType, l.RouteConfigName, rw)()
	rc := rw.wantKind(ctx, t, changed, nil).value
	if len(rc.VirtualHosts) != 1 || len(rc.VirtualHosts[0].Routes) != 1 || rc.VirtualHosts[0].Routes[0].Action.Cluster != "cluster-svc" {
		t.Fatalf("RouteConfig = %+v, want one virtual host routing to cluster-svc", rc)
	}

	cw := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", cw)()
	cl := cw.wantKind(ctx, t, changed, nil).value
	if cl.Kind != resources.ClusterKindEDS || cl.EDSServiceName != "eds-svc" {
		t.Fatalf("Cluster = %+v, want EDS with service name eds-svc", cl)
	}

	ew := newRecorder[*resources.Endpoints]()
	defer client.Watch(c, resources.EndpointsType, cl.EDSServiceName, ew)()
	e := ew.wantKind(ctx, t, changed, nil).value
	var addrs []string
	for _, loc := range e.Localities {
		for _, ep := range loc.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
	}
	if strings.Join(addrs, ",") != "127.0.0.1:8080,127.0.0.1:8081" {
		t.Fatalf("endpoint addresses = %v, want [127.0.0.1:8080 127.0.0.1:8081]", addrs)
	}
	if !proto.Equal(e.Raw(), testutil.MarshalAny(testutil.Endpoints("eds-svc", "127.0.0.1", 8080, 8081))) {
		t.Fatalf("Endpoints.Raw() = %v, want the resource as served", e.Raw())
	}
}

// TestWatch_NewWatcherGetsCachedValue checks that a second watcher of a
// cached resource gets the value at once, without a new request.
func TestWatch_NewWatcherGetsCachedValue(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, ms, testutil.BootstrapOptions{})

	w1 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", w1)()
	w1.wantKind(ctx, t, changed, nil)
	// The ACK of the response.
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Req.GetVersionInfo() != "" }); err != nil {
		t.Fatalf("waiting for the ACK: %v", err)
	}

	w2 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", w2)()
	if got := w2.wantKind(ctx, t, changed, nil).value; got.Name != "cluster-svc" {
		t.Fatalf("second watcher got %q, want cluster-svc", got.Name)
	}
	shortCtx, cancel := contextWithTimeout(t, defaultTestShortTimeout)
	defer cancel()
	if r, err := ms.NextRequest(shortCtx); err == nil {
		t.Fatalf("a second watcher of a cached resource caused a request: %v", r.Req)
	}
}

// TestWatch_NotifiedOnlyOnChange checks that a response repeating a cached
// resource (new version, same bytes) is ACKed but not delivered.
func TestWatch_NotifiedOnlyOnChange(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	chain.Version = "1"
	ms.Update("", chain)
	c := newClient(t, ms, testutil.BootstrapOptions{})

	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", w)()
	w.wantKind(ctx, t, changed, nil)

	chain.Version = "2"
	ms.Update("", chain)
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Req.GetTypeUrl() == resources.ClusterTypeURL && r.Req.GetVersionInfo() == "2"
	}); err != nil {
		t.Fatalf("waiting for the ACK of version 2: %v", err)
	}
	w.wantNone(t, defaultTestShortTimeout)

	chain.Version = "3"
	chain.Clusters[0] = testutil.Cluster("cluster-svc", "other-eds")
	ms.Update("", chain)
	if got := w.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "other-eds" {
		t.Fatalf("after a change, EDSServiceName = %q, want other-eds", got.EDSServiceName)
	}
}

// TestWatch_UnregisteredType checks that watching a type the client does
// not know fails at once and names the type URL asked for.
func TestWatch_UnregisteredType(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	c := newClient(t, ms, testutil.BootstrapOptions{})

	w := newRecorder[*v3corepb.Node]()
	defer client.Watch(c, nodeType, "n", w)()
	e := w.wantKind(ctx, t, resourceError, client.ErrUnsupported)
	if !strings.Contains(e.err.Error(), nodeTypeURL) {
		t.Fatalf("error %q does not name the type URL %q", e.err, nodeTypeURL)
	}
	var re *client.ResourceError
	if !errors.As(e.err, &re) || re.Name != "n" || re.TypeURL != nodeTypeURL {
		t.Fatalf("error = %#v, want a *ResourceError for %q of %q", e.err, "n", nodeTypeURL)
	}
}

// TestWatch_UnknownAuthority checks that an xdstp name of an authority that
// is not in the bootstrap fails at once.
func TestWatch_UnknownAuthority(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	c := newClient(t, ms, testutil.BootstrapOptions{})

	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "xdstp://nowhere/envoy.config.cluster.v3.Cluster/c1", w)()
	e := w.wantKind(ctx, t, resourceError, client.ErrUnsupported)
	if !strings.Contains(e.err.Error(), "nowhere") {
		t.Fatalf("error %q does not name the authority", e.err)
	}
}

// TestWatch_CustomType checks that a resource type registered by the user
// is requested and delivered like the built-in ones.
func TestWatch_CustomType(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{Other: []testutil.NamedResource{
		{Name: "n1", Resource: &v3corepb.Node{Id: "n1", Cluster: "blue"}},
		{Name: "n2", Resource: &v3corepb.Node{Id: "n2", Cluster: "green"}},
	}})
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithResourceTypes(nodeType))

	w := newRecorder[*v3corepb.Node]()
	defer client.Watch(c, nodeType, "n2", w)()
	if got := w.wantKind(ctx, t, changed, nil).value; got.GetCluster() != "green" {
		t.Fatalf("custom resource = %v, want cluster green", got)
	}
}

// nodeType is a custom resource type for tests: envoy's Node message, whose
// field 1 (id) is its name.
var nodeType = resources.NewType(resources.TypeConfig[*v3corepb.Node]{
	TypeURL:   nodeTypeURL,
	NameField: 1,
	Decode: func(a *anypb.Any) (string, *v3corepb.Node, error) {
		n := &v3corepb.Node{}
		if err := a.UnmarshalTo(n); err != nil {
			return "", nil, err
		}
		if n.GetCluster() == "invalid" {
			return n.GetId(), nil, errors.New("cluster: invalid")
		}
		return n.GetId(), n, nil
	},
})

const nodeTypeURL = "type.googleapis.com/envoy.config.core.v3.Node"

// TestWatch_WatchAndCancelFromCallback checks that a watcher method may
// cancel its own watch and start another without deadlock.
func TestWatch_WatchAndCancelFromCallback(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, ms, testutil.BootstrapOptions{})

	inner := newRecorder[*resources.Cluster]()
	var cancelInner func()
	cancelled := make(chan struct{})
	assigned := make(chan struct{}) // cancelOuter is set
	var cancelOuter func()
	cancelOuter = client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{
		OnChanged: func(*resources.Listener) {
			<-assigned
			cancelInner = client.Watch(c, resources.ClusterType, "cluster-svc", inner)
			cancelOuter()
			close(cancelled)
		},
	})
	close(assigned)
	<-cancelled
	inner.wantKind(ctx, t, changed, nil)
	cancelInner()
}

// TestWatch_WrappedResources checks that resources wrapped in the
// discovery Resource message are unwrapped.
func TestWatch_WrappedResources(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{WrapResources: true})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, ms, testutil.BootstrapOptions{})

	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	if got := w.wantKind(ctx, t, changed, nil).value; got.RouteConfigName != "route-svc" {
		t.Fatalf("wrapped Listener = %+v, want route-svc", got)
	}
	req, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Req.GetResponseNonce() != "" })
	if err != nil {
		t.Fatal(err)
	}
	if req.Req.GetErrorDetail() != nil {
		t.Fatalf("wrapped resources were NACKed: %v", req.Req.GetErrorDetail())
	}
}

// discoveryResponse builds a raw SotW response for scripted tests.
func discoveryResponse(typeURL, version string, msgs ...proto.Message) *v3discoverypb.DiscoveryResponse {
	resp := &v3discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version}
	for _, m := range msgs {
		resp.Resources = append(resp.Resources, testutil.MarshalAny(m))
	}
	return resp
}
