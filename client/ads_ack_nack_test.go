// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// invalidCluster returns a cluster gRPC rejects: STATIC is not a supported
// discovery type.
func invalidCluster(name string) *v3clusterpb.Cluster {
	cl := testutil.Cluster(name, "")
	cl.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC}
	return cl
}

// waitForNames waits for a request of typeURL whose resource_names are
// exactly names (sorted).
func waitForNames(t *testing.T, ms *testutil.ManagementServer, typeURL string, names ...string) *testutil.Request {
	t.Helper()
	return waitForStreamNames(t, ms, 0, typeURL, names...)
}

// waitForStreamNames is waitForNames for requests of stream streamID only
// (any stream when 0). After a stream breaks, earlier streams' requests may
// still be queued in the server's FIFO; this skips them.
func waitForStreamNames(t *testing.T, ms *testutil.ManagementServer, streamID int64, typeURL string, names ...string) *testutil.Request {
	t.Helper()
	ctx := testContext(t)
	r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return (streamID == 0 || r.StreamID == streamID) &&
			r.Req.GetTypeUrl() == typeURL && slices.Equal(r.Req.GetResourceNames(), names)
	})
	if err != nil {
		t.Fatalf("waiting for a %s request for %v on stream %d: %v", typeURL, names, streamID, err)
	}
	return r
}

// waitForNonce waits for the request that answers the response with nonce.
func waitForNonce(t *testing.T, ms *testutil.ManagementServer, nonce string) *testutil.Request {
	t.Helper()
	ctx := testContext(t)
	r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Req.GetResponseNonce() == nonce })
	if err != nil {
		t.Fatalf("waiting for the answer to nonce %q: %v", nonce, err)
	}
	return r
}

// TestADS_ACK_CarriesFullSubscriptionList checks that an ACK carries the
// version and nonce of the response and every subscribed name, not just the
// names in the response.
func TestADS_ACK_CarriesFullSubscriptionList(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")

	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", "")))
	if err != nil {
		t.Fatal(err)
	}
	ack := waitForNonce(t, ms, nonce).Req
	if ack.GetVersionInfo() != "1" || ack.GetErrorDetail() != nil || !slices.Equal(ack.GetResourceNames(), []string{"a", "b"}) {
		t.Fatalf("ACK = %v, want version 1, no error_detail, names [a b]", ack)
	}
	wa.wantKind(ctx, t, changed, nil)
}

// TestADS_NACK_PreviousVersionAndSortedDetail checks a NACK: it carries the
// last ACKed version and an INVALID_ARGUMENT error_detail listing the
// invalid resources in name order; the valid resource of the
// same response is applied, and watchers of the invalid cached ones
// get AmbientError.
func TestADS_NACK_PreviousVersionAndSortedDetail(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := map[string]*recorder[*resources.Cluster]{}
	for _, n := range []string{"a", "b", "c"} {
		w[n] = newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, n, w[n])()
	}
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b", "c")
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1",
		testutil.Cluster("a", ""), testutil.Cluster("b", ""), testutil.Cluster("c", "")))
	if err != nil {
		t.Fatal(err)
	}
	if ack := waitForNonce(t, ms, nonce).Req; ack.GetVersionInfo() != "1" || ack.GetErrorDetail() != nil {
		t.Fatalf("answer to version 1 = %v, want an ACK of version 1", ack)
	}
	for _, n := range []string{"a", "b", "c"} {
		w[n].wantKind(ctx, t, changed, nil)
	}

	// Version 2: c and b invalid (in that order), a changed and valid.
	nonce, err = ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "2",
		invalidCluster("c"), testutil.Cluster("a", "a-eds"), invalidCluster("b")))
	if err != nil {
		t.Fatal(err)
	}
	nack := waitForNonce(t, ms, nonce).Req
	if nack.GetVersionInfo() != "1" {
		t.Errorf("NACK version_info = %q, want the previous version %q", nack.GetVersionInfo(), "1")
	}
	if got := codes.Code(nack.GetErrorDetail().GetCode()); got != codes.InvalidArgument {
		t.Errorf("NACK error_detail.code = %v, want InvalidArgument", got)
	}
	msg := nack.GetErrorDetail().GetMessage()
	ib, ic := strings.Index(msg, `resource "b"`), strings.Index(msg, `resource "c"`)
	if ib < 0 || ic < 0 || ib > ic || strings.Contains(msg, `resource "a"`) {
		t.Errorf("NACK message = %q, want errors for b then c, none for a", msg)
	}
	if !slices.Equal(nack.GetResourceNames(), []string{"a", "b", "c"}) {
		t.Errorf("NACK resource_names = %v, want [a b c]", nack.GetResourceNames())
	}
	if got := w["a"].wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "a-eds" {
		t.Errorf("a = %+v, want the valid update of the NACKed response", got)
	}
	w["b"].wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
	w["c"].wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
}

// TestADS_NACK_InvalidFirstResponse checks that a NACK of the first
// response carries an empty version, and that watchers without a cached
// value get ResourceError.
func TestADS_NACK_InvalidFirstResponse(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")

	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", invalidCluster("a")))
	if err != nil {
		t.Fatal(err)
	}
	nack := waitForNonce(t, ms, nonce).Req
	if nack.GetVersionInfo() != "" || nack.GetErrorDetail() == nil {
		t.Fatalf("answer = %v, want a NACK with an empty version", nack)
	}
	e := w.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
	if !strings.Contains(e.err.Error(), `"a"`) || !strings.Contains(e.err.Error(), `"1"`) {
		t.Fatalf("error %q should name the resource and the rejected version", e.err)
	}
}

// TestADS_NACK_SameErrorNotRepeatedToWatchers checks that the same error
// for the same resource is NACKed each time but reported to watchers once
//
func TestADS_NACK_SameErrorNotRepeatedToWatchers(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")

	for _, v := range []string{"1", "2"} {
		nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, v, invalidCluster("a")))
		if err != nil {
			t.Fatal(err)
		}
		if nack := waitForNonce(t, ms, nonce).Req; nack.GetErrorDetail() == nil {
			t.Fatalf("answer to version %s = %v, want a NACK", v, nack)
		}
	}
	w.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
	w.wantNone(t, defaultTestShortTimeout)
}

// TestADS_DuplicateNames checks: a name that appears twice in one
// response is NACKed with `duplicate resource name "<n>"` and treated as
// invalid, whichever copy is valid, while the other resources are applied.
func TestADS_DuplicateNames(t *testing.T) {
	tests := []struct {
		name  string
		order []*v3clusterpb.Cluster
	}{
		{"valid copy first", []*v3clusterpb.Cluster{testutil.Cluster("a", "x"), testutil.Cluster("b", ""), invalidCluster("a")}},
		{"invalid copy first", []*v3clusterpb.Cluster{invalidCluster("a"), testutil.Cluster("b", ""), testutil.Cluster("a", "x")}},
		{"both copies valid", []*v3clusterpb.Cluster{testutil.Cluster("a", "x"), testutil.Cluster("a", "y"), testutil.Cluster("b", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
			c := newClient(t, ms, testutil.BootstrapOptions{})
			wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
			defer client.Watch(c, resources.ClusterType, "a", wa)()
			defer client.Watch(c, resources.ClusterType, "b", wb)()
			waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")

			resp := discoveryResponse(resources.ClusterTypeURL, "1")
			for _, cl := range tt.order {
				resp.Resources = append(resp.Resources, testutil.MarshalAny(cl))
			}
			nonce, err := ms.SendResponse(ctx, resp)
			if err != nil {
				t.Fatal(err)
			}
			nack := waitForNonce(t, ms, nonce).Req
			want := `error parsing "Cluster" response: resource "a": duplicate resource name "a"`
			if got := nack.GetErrorDetail().GetMessage(); got != want || nack.GetVersionInfo() != "" {
				t.Fatalf("answer = %v, want a NACK with message %q", nack, want)
			}
			wa.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
			wb.wantKind(ctx, t, changed, nil)
		})
	}
}

// TestADS_UnknownTypeURLIgnored checks that a response of a type URL the
// client does not know gets neither ACK nor NACK and does not stall the
// stream: the next response is delivered.
func TestADS_UnknownTypeURLIgnored(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	waitForNames(t, ms, resources.ListenerTypeURL, "svc")

	unknown := discoveryResponse("type.googleapis.com/unknown.Type", "1", testutil.Cluster("a", ""))
	unknown.TypeUrl = "type.googleapis.com/unknown.Type"
	if _, err := ms.SendResponse(ctx, unknown); err != nil {
		t.Fatal(err)
	}
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ListenerTypeURL, "1", testutil.Listener("svc", "r")))
	if err != nil {
		t.Fatal(err)
	}
	w.wantKind(ctx, t, changed, nil)
	next, err := ms.NextRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next.Req.GetResponseNonce() != nonce || next.Req.GetTypeUrl() != resources.ListenerTypeURL {
		t.Fatalf("first request after the unknown type = %v, want the ACK of nonce %q", next.Req, nonce)
	}
}

// TestADS_NodeOnlyInFirstRequestOfStream checks that the node is sent in
// the first request of every stream and in no other, and that it
// carries the library's user agent and client features.
func TestADS_NodeOnlyInFirstRequestOfStream(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	c := newClient(t, ms, testutil.BootstrapOptions{NodeID: "node-1"})
	wl, wc := newRecorder[*resources.Listener](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ListenerType, "svc", wl)()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", wc)()
	wl.wantKind(ctx, t, changed, nil)
	wc.wantKind(ctx, t, changed, nil)
	waitForAllACKed(t, ms, 1)
	ms.BreakStreams()
	waitForStreamNames(t, ms, 2, resources.ClusterTypeURL, "cluster-svc")

	first := map[int64]bool{}
	for _, r := range ms.Requests() {
		hasNode := r.Req.GetNode() != nil
		if !first[r.StreamID] {
			first[r.StreamID] = true
			n := r.Req.GetNode()
			if !hasNode || n.GetId() != "node-1" || n.GetUserAgentName() == "" ||
				!slices.Contains(n.GetClientFeatures(), "xds.config.resource-in-sotw") {
				t.Errorf("first request of stream %d has node %v, want node-1 with user agent and client features", r.StreamID, n)
			}
			continue
		}
		if hasNode {
			t.Errorf("request %v of stream %d carries the node; only the first may", r.Req, r.StreamID)
		}
	}
	if len(first) < 2 {
		t.Fatalf("saw %d streams, want 2", len(first))
	}
}

// waitForAllACKed waits until the newest request of every type seen on
// stream streamID answers a response (has a nonce) without error_detail.
func waitForAllACKed(t *testing.T, ms *testutil.ManagementServer, streamID int64) {
	t.Helper()
	ctx := testContext(t)
	for {
		last := map[string]*testutil.Request{}
		for _, r := range ms.Requests() {
			if r.StreamID == streamID {
				last[r.Req.GetTypeUrl()] = r
			}
		}
		acked := len(last) > 0
		for _, r := range last {
			if r.Req.GetResponseNonce() == "" || r.Req.GetErrorDetail() != nil {
				acked = false
			}
		}
		if acked {
			return
		}
		if _, err := ms.NextRequest(ctx); err != nil {
			t.Fatalf("waiting for every type to be ACKed: %v", err)
		}
	}
}

// TestADS_Reconnect_ResendsEverythingWithVersions checks that after a
// stream breaks, the new stream requests every subscribed type, in registry
// order (LDS, RDS, CDS, EDS), with full name lists, the last ACKed version
// and an empty nonce, and that watchers hear nothing
// and keep their cached values.
func TestADS_Reconnect_ResendsEverythingWithVersions(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	chain.Version = "7"
	ms.Update("", chain)
	c := newClient(t, ms, testutil.BootstrapOptions{})
	we := newRecorder[*resources.Endpoints]()
	defer client.Watch(c, resources.EndpointsType, "eds-svc", we)()
	wc := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", wc)()
	wr := newRecorder[*resources.RouteConfig]()
	defer client.Watch(c, resources.RouteConfigType, "route-svc", wr)()
	wl := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", wl)()
	we.wantKind(ctx, t, changed, nil)
	wc.wantKind(ctx, t, changed, nil)
	wr.wantKind(ctx, t, changed, nil)
	wl.wantKind(ctx, t, changed, nil)
	waitForAllACKed(t, ms, 1)
	before := len(ms.Requests())

	ms.BreakStreams()
	waitForStreamNames(t, ms, 2, resources.EndpointsTypeURL, "eds-svc")
	// The first request of each type on the new stream, in arrival order.
	// The ACK of a response to an early one may come in between (ACKs go
	// first, R-7.9), so requests of a type already seen are skipped.
	var got []string
	seen := map[string]bool{}
	for _, r := range ms.Requests()[before:] {
		if r.StreamID == 1 || seen[r.Req.GetTypeUrl()] {
			continue
		}
		seen[r.Req.GetTypeUrl()] = true
		got = append(got, r.Req.GetTypeUrl()+" "+strings.Join(r.Req.GetResourceNames(), ",")+" v="+r.Req.GetVersionInfo()+" n="+r.Req.GetResponseNonce())
	}
	want := []string{
		resources.ListenerTypeURL + " svc v=7 n=",
		resources.RouteConfigTypeURL + " route-svc v=7 n=",
		resources.ClusterTypeURL + " cluster-svc v=7 n=",
		resources.EndpointsTypeURL + " eds-svc v=7 n=",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Fatalf("first requests of the new stream (-got, +want):\n%s", diff)
	}
	for _, r := range []interface {
		wantNone(*testing.T, time.Duration)
	}{wl, wr, wc, we} {
		r.wantNone(t, defaultTestShortTimeout)
	}
	// The cache survived: a new watcher gets the value at once.
	w2 := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "cluster-svc", w2)()
	w2.wantKind(ctx, t, changed, nil)
}

// waitForNamesAnyOrder waits until a request of typeURL names exactly
// names; unlike waitForNames it does not consume other types' requests
// that come in between from the FIFO beyond the match.
func waitForNamesAnyOrder(t *testing.T, ms *testutil.ManagementServer, typeURL string, names ...string) {
	t.Helper()
	ctx := testContext(t)
	for {
		for _, r := range ms.Requests() {
			if r.Req.GetTypeUrl() == typeURL && slices.Equal(r.Req.GetResourceNames(), names) {
				return
			}
		}
		if _, err := ms.NextRequest(ctx); err != nil {
			t.Fatalf("waiting for a %s request for %v: %v", typeURL, names, err)
		}
	}
}

// TestADS_UnrequestedResourcesIgnored checks that resources the client did
// not subscribe to are ignored, as the xDS protocol says ("How the client
// specifies what resources to return"): not decoded, and an invalid one
// does not make the response a NACK. (grpc-go NACKs it.) A duplicated
// name does: see TestADS_DuplicateUnrequestedNameNACKed.
//
//  1. Watch custom resource "n1" (a type whose decoder counts its calls).
//  2. Send n1 valid, "n2" invalid, "n3" once.
//  3. Expect an ACK of the response, n1 delivered, and one decode (n1).
func TestADS_UnrequestedResourcesIgnored(t *testing.T) {
	ctx := testContext(t)
	var decodes atomic.Int32
	counting := resources.NewType(resources.TypeConfig[*v3corepb.Node]{
		TypeURL:   nodeTypeURL,
		NameField: 1,
		Decode: func(a *anypb.Any) (string, *v3corepb.Node, error) {
			decodes.Add(1)
			return nodeType.DecodeTyped(a)
		},
	})
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithResourceTypes(counting))
	w := newRecorder[*v3corepb.Node]()
	defer client.Watch(c, counting, "n1", w)()
	waitForNames(t, ms, nodeTypeURL, "n1")

	nonce, err := ms.SendResponse(ctx, discoveryResponse(nodeTypeURL, "1",
		&v3corepb.Node{Id: "n1", Cluster: "blue"},
		&v3corepb.Node{Id: "n2", Cluster: "invalid"},
		&v3corepb.Node{Id: "n3"}))
	if err != nil {
		t.Fatal(err)
	}
	if ack := waitForNonce(t, ms, nonce).Req; ack.GetVersionInfo() != "1" || ack.GetErrorDetail() != nil {
		t.Fatalf("answer = %v, want an ACK of version 1", ack)
	}
	if got := w.wantKind(ctx, t, changed, nil).value; got.GetCluster() != "blue" {
		t.Fatalf("n1 = %v, want cluster blue", got)
	}
	if n := decodes.Load(); n != 1 {
		t.Fatalf("decoder ran %d times, want once (unrequested resources are not decoded)", n)
	}
}

// TestADS_DuplicateUnrequestedNameNACKed checks for names the client
// did not subscribe to: a SotW response with two copies of "z", which
// nobody watches, is NACKed naming z (old code: ACKed), while the watched
// "a" of the same response is applied. The NACK carries the
// previous version.
func TestADS_DuplicateUnrequestedNameNACKed(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wa := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a")
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1",
		testutil.Cluster("z", ""), testutil.Cluster("a", ""), testutil.Cluster("z", "other")))
	if err != nil {
		t.Fatal(err)
	}
	nack := waitForNonce(t, ms, nonce).Req
	want := `error parsing "Cluster" response: resource "z": duplicate resource name "z"`
	if got := nack.GetErrorDetail().GetMessage(); got != want || nack.GetVersionInfo() != "" {
		t.Fatalf("answer = %v, want a NACK at version \"\" with message %q", nack, want)
	}
	wa.wantKind(ctx, t, changed, nil)
}

// TestADS_ResponseOfTypeNotRequestedIgnored checks: a response of a
// known type that was not requested on the current stream (here Clusters:
// watched and cancelled on the previous stream, so the client knows the
// type, but the new stream asks for a Listener only) is ignored: no ACK or
// NACK (which would subscribe to that type: with an empty list, to its
// legacy wildcard), no cache entry; the next Listener response is ACKed at
// once. SotW and delta.
func TestADS_ResponseOfTypeNotRequestedIgnored(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
		synctestTest(t, func(t *testing.T) { testResponseOfTypeNotRequested(t, delta, opts...) })
	})
}

func testResponseOfTypeNotRequested(t *testing.T, delta bool, opts ...client.Option) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true, InMemory: true})
	c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	if _, err := ms.NextRequest(ctx); err != nil {
		t.Fatal(err)
	}
	cancelA := client.Watch(c, resources.ClusterType, "a", newRecorder[*resources.Cluster]())
	if _, err := ms.NextRequest(ctx); err != nil { // subscribes to a
		t.Fatal(err)
	}
	cancelA()
	if _, err := ms.NextRequest(ctx); err != nil { // unsubscribes from a
		t.Fatal(err)
	}
	ms.BreakStreams()
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 }); err != nil {
		t.Fatal(err)
	}
	var nonce string
	var err error
	if delta {
		sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
		nonce = sendDelta(t, ms, deltaResponse(lds, nil, deltaResource{name: "svc", version: "1", msg: testutil.Listener("svc", "r")}))
	} else {
		if _, err = ms.SendResponse(ctx, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""))); err != nil {
			t.Fatal(err)
		}
		if nonce, err = ms.SendResponse(ctx, discoveryResponse(resources.ListenerTypeURL, "1", testutil.Listener("svc", "r"))); err != nil {
			t.Fatal(err)
		}
	}
	if e := skipConnectionErrors(t, w); e.kind != changed {
		t.Fatalf("watcher event = %v, want the Listener", e)
	}
	next, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.StreamID == 2 })
	if err != nil {
		t.Fatal(err)
	}
	gotType, gotNonce := next.Req.GetTypeUrl(), next.Req.GetResponseNonce()
	if delta {
		gotType, gotNonce = next.Delta.GetTypeUrl(), next.Delta.GetResponseNonce()
	}
	if gotType != lds || gotNonce != nonce {
		t.Fatalf("first request after the Cluster response = %v %v, want the Listener ACK of nonce %q", next.Req, next.Delta, nonce)
	}
	if g := dumpEntry(c, cds, "a"); g != nil {
		t.Fatalf("CSDS entry of the unrequested cluster = %v, want none", g)
	}
}

// TestADS_Delta_DuplicateUnrequestedNameNACKed checks in
// delta: a name repeated among a response's resources makes it a NACK even
// when the client did not subscribe to that name; the rest is applied.
func TestADS_Delta_DuplicateUnrequestedNameNACKed(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithDelta())
	wa := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return slices.Contains(r.Delta.GetResourceNamesSubscribe(), "a")
	}); err != nil {
		t.Fatal(err)
	}
	nonce, err := ms.SendDeltaResponse(ctx, deltaResponse(resources.ClusterTypeURL, nil,
		deltaResource{name: "z", version: "1", msg: testutil.Cluster("z", "")},
		deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")},
		deltaResource{name: "z", version: "1", msg: testutil.Cluster("z", "other")}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Delta.GetResponseNonce() == nonce })
	if err != nil {
		t.Fatal(err)
	}
	want := `error parsing "Cluster" response: resource "z": duplicate resource name "z"`
	if got := r.Delta.GetErrorDetail().GetMessage(); got != want {
		t.Fatalf("answer = %v, want a NACK with message %q", r.Delta, want)
	}
	wa.wantKind(ctx, t, changed, nil)
}
