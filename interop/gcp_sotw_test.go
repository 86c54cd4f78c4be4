// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// The names of testutil.Chain(testutil.ChainOptions{Listener: "svc"}).
const (
	listenerName = "svc"
	routeName    = "route-svc"
	clusterName  = "cluster-svc"
	edsName      = "eds-svc"
)

// chain returns the Listener → RouteConfiguration → Cluster →
// ClusterLoadAssignment chain for "svc", with the endpoints host:ports.
func chain(host string, ports ...uint32) testutil.Resources {
	res := testutil.Chain(testutil.ChainOptions{Listener: listenerName})
	res.Endpoints = []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints(edsName, host, ports...)}
	return res
}

// TestGoControlPlane_SotW_ChainArrives checks that a whole chain served by
// go-control-plane reaches typed watchers, each resource naming the next:
//  1. Set snapshot "1": svc → route-svc → cluster-svc → eds-svc with two
//     endpoints.
//  2. Watch the Listener; watch the RouteConfiguration it names, the
//     Cluster its route names, and the ClusterLoadAssignment of the
//     Cluster's EDS service name.
//  3. Check each decoded value, and that the server got an ACK of version
//     "1" for each of the four types.
func TestGoControlPlane_SotW_ChainArrives(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", chain("127.0.0.1", 50051, 50052))
	c := s.newClient(t)

	lw := newRecordingWatcher[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, listenerName, lw)()
	lis := waitForValue(ctx, t, lw)
	if lis.Name != listenerName || lis.RouteConfigName != routeName {
		t.Fatalf("Listener: got name %q, route_config_name %q; want %q, %q", lis.Name, lis.RouteConfigName, listenerName, routeName)
	}

	rw := newRecordingWatcher[*resources.RouteConfig]()
	defer client.Watch(c, resources.RouteConfigType, lis.RouteConfigName, rw)()
	rc := waitForValue(ctx, t, rw)
	if rc.Name != routeName {
		t.Fatalf("RouteConfig: got name %q, want %q", rc.Name, routeName)
	}
	if got := routeClusters(rc); !cmp.Equal(got, []string{clusterName}) {
		t.Fatalf("RouteConfig %q: got route clusters %q, want [%q]", rc.Name, got, clusterName)
	}

	cw := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, clusterName, cw)()
	cl := waitForValue(ctx, t, cw)
	if cl.Name != clusterName || cl.Kind != resources.ClusterKindEDS || cl.EDSServiceName != edsName {
		t.Fatalf("Cluster: got name %q, kind %v, EDS service name %q; want %q, EDS, %q", cl.Name, cl.Kind, cl.EDSServiceName, clusterName, edsName)
	}

	ew := newRecordingWatcher[*resources.Endpoints]()
	defer client.Watch(c, resources.EndpointsType, cl.EDSServiceName, ew)()
	eps := waitForValue(ctx, t, ew)
	if eps.ClusterName != edsName {
		t.Fatalf("Endpoints: got cluster_name %q, want %q", eps.ClusterName, edsName)
	}
	if diff := cmp.Diff(endpointAddrs(eps), []string{"127.0.0.1:50051", "127.0.0.1:50052"}); diff != "" {
		t.Fatalf("Endpoints %q: addresses (-got, +want):\n%s", eps.ClusterName, diff)
	}

	for _, typeURL := range []string{
		resources.ListenerType.TypeURL(),
		resources.RouteConfigType.TypeURL(),
		resources.ClusterType.TypeURL(),
		resources.EndpointsType.TypeURL(),
	} {
		if _, _, err := s.waitForRequest(ctx, 0, "ACK of "+typeURL+` version "1"`, isACK(typeURL, "1")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoControlPlane_SotW_NodeOnlyOnFirstRequest checks against
// go-control-plane: the client sends its node in the first request of the
// stream only. go-control-plane copies the stream's node into every later
// request before its callbacks see it, so the check reads the requests as
// they came off the wire.
//  1. Set snapshot "1" with the chain; watch all four resources.
//  2. Wait for the ACKs of all four types.
//  3. On the wire: the first request has node.id "interop-node", no other
//     has a node. Log what the callbacks saw.
func TestGoControlPlane_SotW_NodeOnlyOnFirstRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", chain("127.0.0.1", 50051))
	c := s.newClient(t)

	defer client.Watch(c, resources.ListenerType, listenerName, newRecordingWatcher[*resources.Listener]())()
	defer client.Watch(c, resources.RouteConfigType, routeName, newRecordingWatcher[*resources.RouteConfig]())()
	defer client.Watch(c, resources.ClusterType, clusterName, newRecordingWatcher[*resources.Cluster]())()
	defer client.Watch(c, resources.EndpointsType, edsName, newRecordingWatcher[*resources.Endpoints]())()
	for _, typeURL := range []string{
		resources.ListenerType.TypeURL(),
		resources.RouteConfigType.TypeURL(),
		resources.ClusterType.TypeURL(),
		resources.EndpointsType.TypeURL(),
	} {
		if _, _, err := s.WireRequests.waitFor(ctx, 0, isACK(typeURL, "1")); err != nil {
			t.Fatalf("waiting for the ACK of %s on the wire: %v; requests:\n%s", typeURL, err, formatRequests(s.WireRequests.all()))
		}
	}

	wire := s.WireRequests.all()
	if got := wire[0].GetNode().GetId(); got != nodeID {
		t.Errorf("first request on the wire: node.id %q, want %q", got, nodeID)
	}
	for i, r := range wire[1:] {
		if r.GetNode() != nil {
			t.Errorf("request %d on the wire (%s, version_info %q) has a node; want it only in the first request", i+1, r.GetTypeUrl(), r.GetVersionInfo())
		}
	}
	withNode := 0
	seen := s.Requests.all()
	for _, r := range seen {
		if r.GetNode().GetId() == nodeID {
			withNode++
		}
	}
	t.Logf("go-control-plane's OnStreamRequest saw a node in %d of %d requests (the wire had it in 1)", withNode, len(seen))
}

// TestGoControlPlane_SotW_SnapshotUpdateReachesWatchers checks that a new
// snapshot version reaches the watchers of what changed, and only them:
//  1. Set snapshot "1" with endpoint 127.0.0.1:50051; watch the Listener
//     and the ClusterLoadAssignment, wait for both values.
//  2. Set snapshot "2" with endpoint 127.0.0.2:50052 and nothing else
//     changed.
//  3. The Endpoints watcher gets the new address.
//  4. go-control-plane resends the Listener too, under version "2" (a
//     snapshot has one version for all types). Once the client has ACKed
//     it, a second watch of the Listener serves as a barrier (watcher calls
//     are serial and FIFO): the first Listener watcher must have had no
//     call for the unchanged Listener.
func TestGoControlPlane_SotW_SnapshotUpdateReachesWatchers(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", chain("127.0.0.1", 50051))
	c := s.newClient(t)

	lw := newRecordingWatcher[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, listenerName, lw)()
	ew := newRecordingWatcher[*resources.Endpoints]()
	defer client.Watch(c, resources.EndpointsType, edsName, ew)()
	waitForValue(ctx, t, lw)
	eps := waitForValue(ctx, t, ew)
	if diff := cmp.Diff(endpointAddrs(eps), []string{"127.0.0.1:50051"}); diff != "" {
		t.Fatalf("Endpoints %q, version 1: addresses (-got, +want):\n%s", edsName, diff)
	}

	s.setSnapshot(ctx, t, "2", chain("127.0.0.2", 50052))
	ev, _, err := ew.next(ctx, 1)
	if err != nil {
		t.Fatalf("waiting for the Endpoints update: %v", err)
	}
	if ev.kind != changed {
		t.Fatalf("Endpoints watcher: got %v, want ResourceChanged", ev)
	}
	if diff := cmp.Diff(endpointAddrs(ev.value), []string{"127.0.0.2:50052"}); diff != "" {
		t.Fatalf("Endpoints %q, version 2: addresses (-got, +want):\n%s", edsName, diff)
	}

	if _, _, err := s.waitForRequest(ctx, 0, `ACK of Listener version "2"`, isACK(resources.ListenerType.TypeURL(), "2")); err != nil {
		t.Fatal(err)
	}
	barrier := newRecordingWatcher[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, listenerName, barrier)()
	waitForValue(ctx, t, barrier)
	if got := lw.events.all(); len(got) != 1 {
		t.Fatalf("Listener watcher: got %d events %s, want only the first ResourceChanged (version 2 resent it unchanged)", len(got), lw)
	}
}

// TestGoControlPlane_SotW_RemovedClusterIsDeleted checks against
// go-control-plane:
//  1. Set snapshot "1" with the chain; watch the Cluster, wait for it.
//  2. Set snapshot "2" without the Cluster. go-control-plane answers the
//     Cluster subscription with an empty response of version "2".
//  3. The watcher gets a ResourceError wrapping ErrResourceNotFound, and
//     the client ACKs version "2".
//  4. Set snapshot "3" with the Cluster again: the watcher gets it back.
func TestGoControlPlane_SotW_RemovedClusterIsDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", chain("127.0.0.1", 50051))
	c := s.newClient(t)

	cw := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, clusterName, cw)()
	waitForValue(ctx, t, cw)

	res := chain("127.0.0.1", 50051)
	res.Clusters = nil
	s.setSnapshot(ctx, t, "2", res)
	ev, _, err := cw.next(ctx, 1)
	if err != nil {
		t.Fatalf("waiting for the Cluster's deletion: %v", err)
	}
	if ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceNotFound) {
		t.Fatalf("Cluster watcher: got %v, want ResourceError wrapping ErrResourceNotFound", ev)
	}
	checkResourceError(t, ev.err, resources.ClusterType.TypeURL(), clusterName)
	if _, _, err := s.waitForRequest(ctx, 0, `ACK of Cluster version "2"`, isACK(resources.ClusterType.TypeURL(), "2")); err != nil {
		t.Fatal(err)
	}

	s.setSnapshot(ctx, t, "3", chain("127.0.0.1", 50051))
	ev, _, err = cw.next(ctx, 2)
	if err != nil {
		t.Fatalf("waiting for the Cluster to come back: %v", err)
	}
	if ev.kind != changed || ev.value.Name != clusterName {
		t.Fatalf("Cluster watcher: got %v, want ResourceChanged of %q", ev, clusterName)
	}
}

// TestGoControlPlane_SotW_InvalidResourceIsNACKed checks the client's NACK
// as go-control-plane's callbacks see it, and what watchers get.
//
// go-control-plane does not read error_detail. A NACK carries the last
// ACKed version_info, which is not the snapshot's, so the snapshot cache
// answers it at once with the same rejected resources under a new nonce,
// and client and server exchange NACK and resend until the snapshot
// changes (left running in a trial, a thousand NACKs in under a second
// under -race, while the watcher got one AmbientError: ). The test
// does not depend on that (a server that stays silent after a NACK would
// pass too); it logs how many NACKs it saw, and each case ends the
// exchange at once with a valid snapshot, as an operator would.
func TestGoControlPlane_SotW_InvalidResourceIsNACKed(t *testing.T) {
	clusterURL := resources.ClusterType.TypeURL()

	// 1. Set snapshot "1" whose Cluster is STATIC, which gRPC does not
	//    support; watch it.
	// 2. The server sees a NACK of the Cluster type with version_info ""
	//    (nothing ACKed yet), code INVALID_ARGUMENT and a message naming
	//    the Cluster. The watcher, which had no value, gets ResourceError
	//    wrapping ErrResourceInvalid.
	// 3. Set snapshot "2" with a valid Cluster: it is ACKed and delivered.
	t.Run("NoPreviousValue_ResourceError", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
		defer cancel()
		s := startGCPServer(t)
		s.setSnapshot(ctx, t, "1", withStaticCluster(chain("127.0.0.1", 50051)))
		c := s.newClient(t)

		cw := newRecordingWatcher[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, clusterName, cw)()

		nack, _, err := s.waitForRequest(ctx, 0, "NACK of Cluster", isNACK(clusterURL))
		if err != nil {
			t.Fatal(err)
		}
		checkNACK(t, nack, "")
		ev, _, err := cw.next(ctx, 0)
		if err != nil {
			t.Fatalf("waiting for the Cluster watcher: %v", err)
		}
		if ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceInvalid) {
			t.Fatalf("Cluster watcher: got %v, want ResourceError wrapping ErrResourceInvalid", ev)
		}
		checkResourceError(t, ev.err, clusterURL, clusterName)

		s.setSnapshot(ctx, t, "2", chain("127.0.0.1", 50051))
		if _, _, err := s.waitForRequest(ctx, 0, `ACK of Cluster version "2"`, isACK(clusterURL, "2")); err != nil {
			t.Fatal(err)
		}
		ev, _, err = cw.waitFor(ctx, 1, func(e watchEvent[*resources.Cluster]) bool { return e.kind == changed })
		if err != nil {
			t.Fatalf("waiting for the valid Cluster: %v", err)
		}
		if ev.value.EDSServiceName != edsName {
			t.Fatalf("Cluster: got EDS service name %q, want %q", ev.value.EDSServiceName, edsName)
		}
		logNACKs(t, s)
	})

	// 1. Set snapshot "1" with a valid Cluster; watch it; wait for the value
	//    and the ACK of "1".
	// 2. Set snapshot "2" whose Cluster is STATIC.
	// 3. The server sees a NACK of the Cluster type with version_info "1"
	//    (the previous ACKed version). The watcher, which has a value, gets
	//    AmbientError wrapping ErrResourceInvalid, and nothing else.
	// 4. Set snapshot "3" with the valid Cluster again: it is ACKed, and
	//    the watcher gets ResourceChanged (same value, error cleared).
	t.Run("PreviousValue_AmbientError", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
		defer cancel()
		s := startGCPServer(t)
		s.setSnapshot(ctx, t, "1", chain("127.0.0.1", 50051))
		c := s.newClient(t)

		cw := newRecordingWatcher[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, clusterName, cw)()
		waitForValue(ctx, t, cw)
		_, acked, err := s.waitForRequest(ctx, 0, `ACK of Cluster version "1"`, isACK(clusterURL, "1"))
		if err != nil {
			t.Fatal(err)
		}

		s.setSnapshot(ctx, t, "2", withStaticCluster(chain("127.0.0.1", 50051)))
		nack, _, err := s.waitForRequest(ctx, acked+1, "NACK of Cluster", isNACK(clusterURL))
		if err != nil {
			t.Fatal(err)
		}
		checkNACK(t, nack, "1")
		ev, _, err := cw.next(ctx, 1)
		if err != nil {
			t.Fatalf("waiting for the Cluster watcher: %v", err)
		}
		if ev.kind != ambientError || !errors.Is(ev.err, client.ErrResourceInvalid) {
			t.Fatalf("Cluster watcher: got %v, want AmbientError wrapping ErrResourceInvalid", ev)
		}
		checkResourceError(t, ev.err, clusterURL, clusterName)

		s.setSnapshot(ctx, t, "3", chain("127.0.0.1", 50051))
		if _, _, err := s.waitForRequest(ctx, acked+1, `ACK of Cluster version "3"`, isACK(clusterURL, "3")); err != nil {
			t.Fatal(err)
		}
		ev, _, err = cw.next(ctx, 2)
		if err != nil {
			t.Fatalf("waiting for the Cluster watcher: %v", err)
		}
		if ev.kind != changed || ev.value.EDSServiceName != edsName {
			t.Fatalf("Cluster watcher: got %v, want ResourceChanged with EDS service name %q (R-7.6: one AmbientError however many NACKs)", ev, edsName)
		}
		logNACKs(t, s)
	})
}

// withStaticCluster replaces the chain's Cluster by one of discovery type
// STATIC, which gRPC clients reject.
func withStaticCluster(res testutil.Resources) testutil.Resources {
	cl := testutil.Cluster(clusterName, edsName)
	cl.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC}
	cl.EdsClusterConfig = nil
	res.Clusters = []*v3clusterpb.Cluster{cl}
	return res
}

// checkNACK checks that req NACKs the Cluster with version_info
// wantVersion and an error_detail of code INVALID_ARGUMENT naming it
//
func checkNACK(t *testing.T, req *v3discoverypb.DiscoveryRequest, wantVersion string) {
	t.Helper()
	if req.GetVersionInfo() != wantVersion {
		t.Errorf("NACK: version_info %q, want the last ACKed version %q", req.GetVersionInfo(), wantVersion)
	}
	if req.GetResponseNonce() == "" {
		t.Errorf("NACK: empty response_nonce")
	}
	if !cmp.Equal(req.GetResourceNames(), []string{clusterName}) {
		t.Errorf("NACK: resource_names %q, want [%q]", req.GetResourceNames(), clusterName)
	}
	d := req.GetErrorDetail()
	if codes.Code(d.GetCode()) != codes.InvalidArgument {
		t.Errorf("NACK: error_detail.code %v, want InvalidArgument", codes.Code(d.GetCode()))
	}
	if !strings.Contains(d.GetMessage(), `"`+clusterName+`"`) {
		t.Errorf("NACK: error_detail.message %q does not name %q", d.GetMessage(), clusterName)
	}
}

// logNACKs logs how many Cluster NACKs the server saw: more than one means
// go-control-plane answered a NACK by resending the rejected version.
func logNACKs(t *testing.T, s *gcpServer) {
	t.Helper()
	n := 0
	for _, r := range s.Requests.all() {
		if isNACK(resources.ClusterType.TypeURL())(r) {
			n++
		}
	}
	t.Logf("go-control-plane received %d Cluster NACKs for one rejected snapshot version", n)
}

// checkResourceError checks that err is a *client.ResourceError for the
// resource typeURL/name with the bootstrap's node ID.
func checkResourceError(t *testing.T, err error, typeURL, name string) {
	t.Helper()
	var re *client.ResourceError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *client.ResourceError", err, err)
	}
	if re.TypeURL != typeURL || re.Name != name || re.NodeID != nodeID {
		t.Fatalf("ResourceError: got type URL %q, name %q, node %q; want %q, %q, %q", re.TypeURL, re.Name, re.NodeID, typeURL, name, nodeID)
	}
}

// waitForValue waits for w's first event, which must be ResourceChanged,
// and returns its value.
func waitForValue[T any](ctx context.Context, t *testing.T, w *recordingWatcher[T]) T {
	t.Helper()
	ev, _, err := w.next(ctx, 0)
	if err != nil {
		t.Fatalf("waiting for the first %T: %v", *new(T), err)
	}
	if ev.kind != changed {
		t.Fatalf("first event: got %v, want ResourceChanged", ev)
	}
	return ev.value
}

// routeClusters returns the clusters of the cluster routes of rc, in order.
func routeClusters(rc *resources.RouteConfig) []string {
	var out []string
	for _, vh := range rc.VirtualHosts {
		for _, r := range vh.Routes {
			if r.Action.Kind == resources.RouteActionCluster {
				out = append(out, r.Action.Cluster)
			}
		}
	}
	return out
}

// endpointAddrs returns the first address of every endpoint of e, in order.
func endpointAddrs(e *resources.Endpoints) []string {
	var out []string
	for _, l := range e.Localities {
		for _, ep := range l.Endpoints {
			out = append(out, ep.Addresses[0])
		}
	}
	return out
}
