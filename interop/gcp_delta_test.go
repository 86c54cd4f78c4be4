// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	gcptypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	gcpresource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// The client speaking incremental (delta) xDS to go-control-plane's
// DeltaAggregatedResources, selected by the "delta_ads" server feature of
// the bootstrap.

var builtinTypeURLs = []string{
	resources.ListenerTypeURL,
	resources.RouteConfigTypeURL,
	resources.ClusterTypeURL,
	resources.EndpointsTypeURL,
}

// watchChain watches the four resources of the chain and returns their
// watchers once each has its first value.
func watchChain(ctx context.Context, t *testing.T, c *client.Client) (*recordingWatcher[*resources.Listener], *recordingWatcher[*resources.RouteConfig], *recordingWatcher[*resources.Cluster], *recordingWatcher[*resources.Endpoints]) {
	t.Helper()
	lw, rw := newRecordingWatcher[*resources.Listener](), newRecordingWatcher[*resources.RouteConfig]()
	cw, ew := newRecordingWatcher[*resources.Cluster](), newRecordingWatcher[*resources.Endpoints]()
	t.Cleanup(client.Watch(c, resources.ListenerType, listenerName, lw))
	t.Cleanup(client.Watch(c, resources.RouteConfigType, routeName, rw))
	t.Cleanup(client.Watch(c, resources.ClusterType, clusterName, cw))
	t.Cleanup(client.Watch(c, resources.EndpointsType, edsName, ew))
	if l := waitForValue(ctx, t, lw); l.RouteConfigName != routeName {
		t.Fatalf("Listener routes via %q, want %q", l.RouteConfigName, routeName)
	}
	if got := routeClusters(waitForValue(ctx, t, rw)); !cmp.Equal(got, []string{clusterName}) {
		t.Fatalf("RouteConfig clusters %q, want [%q]", got, clusterName)
	}
	if cl := waitForValue(ctx, t, cw); cl.EDSServiceName != edsName {
		t.Fatalf("Cluster EDS service name %q, want %q", cl.EDSServiceName, edsName)
	}
	waitForValue(ctx, t, ew)
	return lw, rw, cw, ew
}

// TestGoControlPlane_Delta_Snapshot_ChainArrives runs the chain over delta
// against the snapshot cache and checks the wire:
//  1. Snapshot "1" with the chain; watch its four resources.
//  2. Every value arrives; the endpoints are those served.
//  3. On the wire: only the first request has the node; each type's first
//     request subscribes to exactly its one name, with no nonce; each type
//     is ACKed (a nonce, no error_detail); nothing is unsubscribed.
func TestGoControlPlane_Delta_Snapshot_ChainArrives(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	s := startGCPDeltaServer(t, newDeltaSnapshotCache(ctx, t, "1", chain("127.0.0.1", 50051, 50052)))
	c := s.newClient(t)
	_, _, _, ew := watchChain(ctx, t, c)
	if got := endpointAddrs(ew.events.all()[0].value); !cmp.Equal(got, []string{"127.0.0.1:50051", "127.0.0.1:50052"}) {
		t.Fatalf("endpoint addresses %q", got)
	}
	for _, typeURL := range builtinTypeURLs {
		if _, _, err := s.waitForRequest(ctx, 0, "ACK of "+typeURL, isDeltaACK(typeURL)); err != nil {
			t.Fatal(err)
		}
	}
	wantName := map[string]string{
		resources.ListenerTypeURL: listenerName, resources.RouteConfigTypeURL: routeName,
		resources.ClusterTypeURL: clusterName, resources.EndpointsTypeURL: edsName,
	}
	firstOfType := map[string]bool{}
	for i, r := range s.WireRequests.all() {
		if (i == 0) != (r.GetNode() != nil) {
			t.Errorf("request %d: node %v; want the node in the first request only", i, r.GetNode())
		}
		if len(r.GetResourceNamesUnsubscribe()) > 0 || r.GetErrorDetail() != nil {
			t.Errorf("request %d unsubscribes or NACKs:\n%s", i, formatDeltaRequests([]*v3discoverypb.DeltaDiscoveryRequest{r}))
		}
		if !firstOfType[r.GetTypeUrl()] {
			firstOfType[r.GetTypeUrl()] = true
			if !slices.Equal(r.GetResourceNamesSubscribe(), []string{wantName[r.GetTypeUrl()]}) || r.GetResponseNonce() != "" {
				t.Errorf("first %s request: subscribe %q nonce %q; want [%q] and no nonce", r.GetTypeUrl(), r.GetResourceNamesSubscribe(), r.GetResponseNonce(), wantName[r.GetTypeUrl()])
			}
		}
	}
}

// TestGoControlPlane_Delta_Snapshot_OnlyChangedResourceSent checks
// "Incremental xDS" against the snapshot cache: a new snapshot version
// that changes only the endpoints sends only them, with a per-resource
// version; only the Endpoints watcher hears of it, and Dump shows the
// per-resource versions the server sent.
func TestGoControlPlane_Delta_Snapshot_OnlyChangedResourceSent(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	cache := newDeltaSnapshotCache(ctx, t, "1", chain("127.0.0.1", 50051))
	s := startGCPDeltaServer(t, cache)
	c := s.newClient(t)
	lw, _, cw, ew := watchChain(ctx, t, c)
	for _, typeURL := range builtinTypeURLs {
		if _, _, err := s.waitForRequest(ctx, 0, "ACK of "+typeURL, isDeltaACK(typeURL)); err != nil {
			t.Fatal(err)
		}
	}
	before := len(s.Responses.all())

	setDeltaSnapshot(ctx, t, cache, "2", chain("127.0.0.2", 50052))
	ev, _, err := ew.next(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ev.kind != changed || !cmp.Equal(endpointAddrs(ev.value), []string{"127.0.0.2:50052"}) {
		t.Fatalf("Endpoints watcher: %v, want the new address", ev)
	}
	if _, _, err := s.waitForRequest(ctx, 0, "ACK of the new endpoints", func(r *v3discoverypb.DeltaDiscoveryRequest) bool {
		return isDeltaACK(resources.EndpointsTypeURL)(r) && r.GetResponseNonce() != "" && len(s.Responses.all()) > before
	}); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, resp := range s.Responses.all()[before:] {
		for _, r := range resp.GetResources() {
			sent = append(sent, resp.GetTypeUrl()+"/"+r.GetName()+"@"+r.GetVersion())
		}
	}
	if len(sent) != 1 || !strings.Contains(sent[0], resources.EndpointsTypeURL+"/"+edsName+"@") {
		t.Fatalf("after the new snapshot the server sent %q, want only the endpoints", sent)
	}
	if got := lw.events.all(); len(got) != 1 {
		t.Errorf("Listener watcher: %d events, want 1", len(got))
	}
	if got := cw.events.all(); len(got) != 1 {
		t.Errorf("Cluster watcher: %d events, want 1", len(got))
	}
	for _, g := range c.Dump().GetGenericXdsConfigs() {
		if g.GetTypeUrl() == resources.EndpointsTypeURL && "@"+g.GetVersionInfo() != sent[0][strings.LastIndex(sent[0], "@"):] {
			t.Errorf("CSDS version_info of the endpoints %q, want the per-resource version in %q", g.GetVersionInfo(), sent[0])
		}
	}
}

// TestGoControlPlane_Delta_Snapshot_RemovedClusterIsDeleted checks
// removed_resources against the snapshot cache: a snapshot without the
// Cluster names it in removed_resources; the watcher gets ResourceError
// wrapping ErrResourceNotFound; a later snapshot brings it back.
func TestGoControlPlane_Delta_Snapshot_RemovedClusterIsDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	cache := newDeltaSnapshotCache(ctx, t, "1", chain("127.0.0.1", 50051))
	s := startGCPDeltaServer(t, cache)
	c := s.newClient(t)
	cw := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, clusterName, cw)()
	waitForValue(ctx, t, cw)

	res := chain("127.0.0.1", 50051)
	res.Clusters = nil
	setDeltaSnapshot(ctx, t, cache, "2", res)
	ev, _, err := cw.next(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceNotFound) {
		t.Fatalf("Cluster watcher: %v, want ResourceError wrapping ErrResourceNotFound", ev)
	}
	checkResourceError(t, ev.err, resources.ClusterTypeURL, clusterName)

	setDeltaSnapshot(ctx, t, cache, "3", chain("127.0.0.1", 50051))
	if ev, _, err = cw.next(ctx, 2); err != nil || ev.kind != changed {
		t.Fatalf("Cluster watcher: %v, %v; want the Cluster back", ev, err)
	}
}

// TestGoControlPlane_Delta_Snapshot_ReconnectWithInitialVersions checks
// the "Incremental reconnect example" against the snapshot cache: after
// the stream breaks, the client subscribes to every name again with
// initial_resource_versions equal to what the server had sent, and
// go-control-plane, seeing nothing changed, sends nothing; watchers hear
// nothing. A later change still arrives on the new stream.
func TestGoControlPlane_Delta_Snapshot_ReconnectWithInitialVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	cache := newDeltaSnapshotCache(ctx, t, "1", chain("127.0.0.1", 50051))
	s := startGCPDeltaServer(t, cache)
	c := s.newClient(t)
	_, _, cw, _ := watchChain(ctx, t, c)
	for _, typeURL := range builtinTypeURLs {
		if _, _, err := s.waitForRequest(ctx, 0, "ACK of "+typeURL, isDeltaACK(typeURL)); err != nil {
			t.Fatal(err)
		}
	}
	sentVersions := map[string]string{}
	for _, resp := range s.Responses.all() {
		for _, r := range resp.GetResources() {
			sentVersions[r.GetName()] = r.GetVersion()
		}
	}
	responses := len(s.Responses.all())
	from := len(s.WireRequests.all())

	s.BreakStreams()
	for _, typeURL := range builtinTypeURLs {
		r, _, err := s.waitForRequest(ctx, from, "the first "+typeURL+" request of the new stream", func(r *v3discoverypb.DeltaDiscoveryRequest) bool {
			return r.GetTypeUrl() == typeURL
		})
		if err != nil {
			t.Fatal(err)
		}
		names := r.GetResourceNamesSubscribe()
		if len(names) != 1 || r.GetInitialResourceVersions()[names[0]] != sentVersions[names[0]] || len(r.GetInitialResourceVersions()) != 1 {
			t.Fatalf("first %s request of the new stream: subscribe %q, initial_resource_versions %v; want the name and the version the server sent (%v)",
				typeURL, names, r.GetInitialResourceVersions(), sentVersions)
		}
	}
	time.Sleep(100 * time.Millisecond) // nothing is expected to arrive; give it the chance to
	if n := len(s.Responses.all()); n != responses {
		t.Fatalf("the server sent %d responses after the reconnect, want none: every version was current", n-responses)
	}
	res := chain("127.0.0.1", 50051)
	res.Clusters[0] = testutil.Cluster(clusterName, "other-eds")
	setDeltaSnapshot(ctx, t, cache, "2", res)
	if ev, _, err := cw.next(ctx, 1); err != nil || ev.kind != changed || ev.value.EDSServiceName != "other-eds" {
		t.Fatalf("Cluster watcher after the reconnect: %v, %v; want the change", ev, err)
	}
}

// TestGoControlPlane_Delta_Snapshot_InvalidResourceIsNACKed checks the
// delta NACK: error_detail with INVALID_ARGUMENT naming the
// Cluster, the response's nonce, no version field in delta. Unlike its
// SotW server, go-control-plane's delta server does not resend the
// rejected resource: it remembers what it sent, whatever the answer.
func TestGoControlPlane_Delta_Snapshot_InvalidResourceIsNACKed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	cache := newDeltaSnapshotCache(ctx, t, "1", withStaticCluster(chain("127.0.0.1", 50051)))
	s := startGCPDeltaServer(t, cache)
	c := s.newClient(t)
	cw := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, clusterName, cw)()
	nack, _, err := s.waitForRequest(ctx, 0, "NACK of the Cluster", func(r *v3discoverypb.DeltaDiscoveryRequest) bool { return r.GetErrorDetail() != nil })
	if err != nil {
		t.Fatal(err)
	}
	if codes.Code(nack.GetErrorDetail().GetCode()) != codes.InvalidArgument || !strings.Contains(nack.GetErrorDetail().GetMessage(), `"`+clusterName+`"`) || nack.GetResponseNonce() == "" {
		t.Fatalf("NACK %v, want INVALID_ARGUMENT naming %q with the response's nonce", nack, clusterName)
	}
	ev, _, err := cw.next(ctx, 0)
	if err != nil || ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceInvalid) {
		t.Fatalf("Cluster watcher: %v, %v; want ResourceError wrapping ErrResourceInvalid", ev, err)
	}
	time.Sleep(100 * time.Millisecond)
	n := 0
	for _, r := range s.WireRequests.all() {
		if r.GetErrorDetail() != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("saw %d NACKs, want 1: go-control-plane's delta server does not resend on NACK", n)
	}
	setDeltaSnapshot(ctx, t, cache, "2", chain("127.0.0.1", 50051))
	if ev, _, err = cw.next(ctx, 1); err != nil || ev.kind != changed {
		t.Fatalf("Cluster watcher: %v, %v; want the valid Cluster", ev, err)
	}
}

// TestGoControlPlane_Delta_Snapshot_MissingNameTimesOut documents that
// go-control-plane never lists a subscribed name it does not have in
// removed_resources (only names it had sent): the does-not-exist timer
// (R-9) is what tells the watcher, as the protocol recommends ("clients
// are still encouraged to use a timeout").
func TestGoControlPlane_Delta_Snapshot_MissingNameTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	s := startGCPDeltaServer(t, newDeltaSnapshotCache(ctx, t, "1", chain("127.0.0.1", 50051)))
	c := s.newClient(t, client.WithWatchExpiryTimeout(300*time.Millisecond))
	w := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "missing", w)()
	ev, _, err := w.next(ctx, 0)
	if err != nil || ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceNotFound) || !strings.Contains(ev.err.Error(), "not received within") {
		t.Fatalf("watcher: %v, %v; want the watch expiry's not-found", ev, err)
	}
	for _, resp := range s.Responses.all() {
		if len(resp.GetRemovedResources()) > 0 {
			t.Fatalf("go-control-plane sent removed_resources %q; the test documents that it does not", resp.GetRemovedResources())
		}
	}
}

// TestGoControlPlane_Delta_Linear_UpdatesAndDeletes runs the client
// against linear caches (one per type, behind a mux): the chain arrives;
// UpdateResource of one Cluster among several sends that one only;
// DeleteResource sends it in removed_resources and the watcher gets
// ResourceError wrapping ErrResourceNotFound.
func TestGoControlPlane_Delta_Linear_UpdatesAndDeletes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lc := newLinearCaches(t)
	res := chain("127.0.0.1", 50051)
	lc.byType[gcpresource.ListenerType].SetResources(map[string]gcptypes.Resource{listenerName: res.Listeners[0]})
	lc.byType[gcpresource.RouteType].SetResources(map[string]gcptypes.Resource{routeName: res.Routes[0]})
	lc.byType[gcpresource.ClusterType].SetResources(map[string]gcptypes.Resource{
		clusterName: res.Clusters[0], "other": testutil.Cluster("other", ""),
	})
	lc.byType[gcpresource.EndpointType].SetResources(map[string]gcptypes.Resource{edsName: res.Endpoints[0]})
	s := startGCPDeltaServer(t, lc.mux)
	c := s.newClient(t)
	_, _, cw, _ := watchChain(ctx, t, c)
	ow := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "other", ow)()
	waitForValue(ctx, t, ow)
	before := len(s.Responses.all())

	if err := lc.byType[gcpresource.ClusterType].UpdateResource("other", testutil.Cluster("other", "other-eds")); err != nil {
		t.Fatal(err)
	}
	if ev, _, err := ow.next(ctx, 1); err != nil || ev.kind != changed || ev.value.EDSServiceName != "other-eds" {
		t.Fatalf("other's watcher: %v, %v; want the update", ev, err)
	}
	for _, resp := range s.Responses.all()[before:] {
		if len(resp.GetResources()) != 1 || resp.GetResources()[0].GetName() != "other" {
			t.Fatalf("after UpdateResource(other) the server sent %v, want only other", resp)
		}
	}
	if err := lc.byType[gcpresource.ClusterType].DeleteResource("other"); err != nil {
		t.Fatal(err)
	}
	ev, _, err := ow.next(ctx, 2)
	if err != nil || ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceNotFound) {
		t.Fatalf("other's watcher: %v, %v; want ResourceError wrapping ErrResourceNotFound", ev, err)
	}
	if got := cw.events.all(); len(got) != 1 {
		t.Fatalf("cluster-svc's watcher: %d events, want 1", len(got))
	}
}

// TestGoControlPlane_Delta_Linear_Wildcard checks WatchAll against a
// linear cache: the client subscribes to "*" explicitly, receives every
// Cluster, then a new one, and a deletion as a ResourceError naming it.
func TestGoControlPlane_Delta_Linear_Wildcard(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	lc := newLinearCaches(t)
	clusters := lc.byType[gcpresource.ClusterType]
	clusters.SetResources(map[string]gcptypes.Resource{"a": testutil.Cluster("a", ""), "b": testutil.Cluster("b", "")})
	s := startGCPDeltaServer(t, lc.mux)
	c := s.newClient(t)
	w := newRecordingWatcher[*resources.Cluster]()
	defer client.WatchAll(c, resources.ClusterType, w)()
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		ev, _, err := w.next(ctx, i)
		if err != nil || ev.kind != changed {
			t.Fatalf("WatchAll watcher: %v, %v", ev, err)
		}
		got[ev.value.Name] = true
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("WatchAll received %v, want a and b", got)
	}
	if r := s.WireRequests.all()[0]; len(r.GetResourceNamesSubscribe()) != 0 {
		t.Fatalf("first request subscribes to %q, want the legacy wildcard [] (R-6.2)", r.GetResourceNamesSubscribe())
	}
	if err := clusters.UpdateResource("c", testutil.Cluster("c", "")); err != nil {
		t.Fatal(err)
	}
	if ev, _, err := w.next(ctx, 2); err != nil || ev.kind != changed || ev.value.Name != "c" {
		t.Fatalf("WatchAll watcher: %v, %v; want c", ev, err)
	}
	if err := clusters.DeleteResource("a"); err != nil {
		t.Fatal(err)
	}
	ev, _, err := w.next(ctx, 3)
	if err != nil || ev.kind != resourceError || !errors.Is(ev.err, client.ErrResourceNotFound) {
		t.Fatalf("WatchAll watcher: %v, %v; want the deletion of a", ev, err)
	}
	checkResourceError(t, ev.err, resources.ClusterTypeURL, "a")
}
