// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// The wire tests of incremental (delta) xDS, against the scripted server:
// every request is compared exactly (R-6.2; xDS protocol, "Incremental
// xDS").

const cds = resources.ClusterTypeURL

// wantNACK reads the next request and checks it is the NACK of nonce for
// typeURL: no version (delta has none), no subscription change, an
// INVALID_ARGUMENT error_detail whose message contains each of parts
// . It returns the message.
func wantNACK(t *testing.T, ms *testutil.ManagementServer, typeURL, nonce string, parts ...string) string {
	t.Helper()
	r := nextDelta(t, ms).Delta
	if r.GetTypeUrl() != typeURL || r.GetResponseNonce() != nonce || r.GetNode() != nil ||
		len(r.GetResourceNamesSubscribe())+len(r.GetResourceNamesUnsubscribe())+len(r.GetInitialResourceVersions()) > 0 {
		t.Fatalf("request = %v, want only the NACK of nonce %q", r, nonce)
	}
	if codes.Code(r.GetErrorDetail().GetCode()) != codes.InvalidArgument {
		t.Fatalf("NACK error_detail = %v, want code InvalidArgument", r.GetErrorDetail())
	}
	msg := r.GetErrorDetail().GetMessage()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Fatalf("NACK message %q does not contain %q", msg, p)
		}
	}
	return msg
}

// TestDelta_Wire_SessionExample follows the "Incremental session example"
// of the xDS protocol: the client subscribes, receives a first update and
// ACKs it; the second update fails and the client NACKs it; later the
// client spontaneously subscribes to "wc".
//
//  1. Watch foo, then bar: two requests subscribing to each, the node in
//     the first only, no nonce.
//  2. The server sends foo and bar (nonce A): the ACK carries nonce A and
//     nothing else; both watchers get their value.
//  3. The server sends an invalid bar (nonce B): the NACK carries nonce B
//     and an error_detail naming bar; bar's watcher keeps its value and
//     gets an AmbientError.
//  4. Watch wc: a request subscribing to wc alone, no nonce.
func TestDelta_Wire_SessionExample(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	wfoo, wbar, wwc := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "foo", wfoo)()
	wantDeltaRequest(t, ms, true, sub(cds, "foo"))
	defer client.Watch(c, resources.ClusterType, "bar", wbar)()
	wantDeltaRequest(t, ms, false, sub(cds, "bar"))

	nonceA := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "foo", version: "1", msg: testutil.Cluster("foo", "")},
		deltaResource{name: "bar", version: "1", msg: testutil.Cluster("bar", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonceA))
	wfoo.wantKind(ctx, t, changed, nil)
	wbar.wantKind(ctx, t, changed, nil)

	nonceB := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "bar", version: "2", msg: invalidCluster("bar")}))
	msg := wantNACK(t, ms, cds, nonceB, `error parsing "Cluster" response: resource "bar": `)
	if strings.Contains(msg, `"foo"`) {
		t.Errorf("NACK message %q names foo, which was not in the response", msg)
	}
	wbar.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)

	defer client.Watch(c, resources.ClusterType, "wc", wwc)()
	wantDeltaRequest(t, ms, false, sub(cds, "wc"))
	wfoo.wantNone(t, defaultTestShortTimeout)
}

// TestDelta_Wire_ReconnectExample follows the "Incremental reconnect
// example": on a new stream the client subscribes to every name again and
// tells, in initial_resource_versions, the version of every resource it
// has cached; the node is sent again and nonces
// start afresh.
//
//  1. foo and bar are cached at versions 1 and 2; an update of bar to 3
//     was NACKed; wc is subscribed and never received.
//  2. The stream breaks. The first request of the new stream subscribes to
//     bar, foo and wc (sorted) with initial_resource_versions {bar: 2,
//     foo: 1}: bar's NACKed version is not claimed, nor is wc.
//  3. A response on the new stream is ACKed with its nonce; no watcher is
//     told about the reconnect.
func TestDelta_Wire_ReconnectExample(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	for _, n := range []string{"foo", "bar", "wc"} {
		defer client.Watch(c, resources.ClusterType, n, w)()
		nextDelta(t, ms)
	}
	n1 := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "foo", version: "1", msg: testutil.Cluster("foo", "")},
		deltaResource{name: "bar", version: "2", msg: testutil.Cluster("bar", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, n1))
	n2 := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "bar", version: "3", msg: invalidCluster("bar")}))
	wantNACK(t, ms, cds, n2, `resource "bar"`)
	for range 3 {
		w.next(ctx, t)
	}

	ms.BreakStreams()
	r := wantDeltaRequest(t, ms, true, &v3discoverypb.DeltaDiscoveryRequest{
		TypeUrl:                 cds,
		ResourceNamesSubscribe:  []string{"bar", "foo", "wc"},
		InitialResourceVersions: map[string]string{"bar": "2", "foo": "1"},
	})
	n3 := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "wc", version: "1", msg: testutil.Cluster("wc", "")}))
	if got := wantDeltaRequest(t, ms, false, ack(cds, n3)); got.StreamID != r.StreamID {
		t.Fatalf("ACK on stream %d, want %d", got.StreamID, r.StreamID)
	}
	if e := w.wantKind(ctx, t, changed, nil); e.value.Name != "wc" {
		t.Fatalf("event = %v, want wc's value", e)
	}
	w.wantNone(t, defaultTestShortTimeout)
}

// TestDelta_Wire_Unsubscribe checks that cancelling the last watch of a
// name sends resource_names_unsubscribe with that name alone, also for
// the last name of the type while other types are watched (R-6.2;
// "Unsubscribing from Resources").
func TestDelta_Wire_Unsubscribe(t *testing.T) {
	ms, c := manualDelta(t, false)
	defer client.Watch(c, resources.ListenerType, "l", newRecorder[*resources.Listener]())()
	wantDeltaRequest(t, ms, true, sub(lds, "l"))
	cancelA := client.Watch(c, resources.ClusterType, "a", newRecorder[*resources.Cluster]())
	wantDeltaRequest(t, ms, false, sub(cds, "a"))
	cancelB := client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())
	wantDeltaRequest(t, ms, false, sub(cds, "b"))
	cancelA()
	wantDeltaRequest(t, ms, false, unsub(cds, "a"))
	cancelB()
	wantDeltaRequest(t, ms, false, unsub(cds, "b"))
}

// TestDelta_Wire_RemoveThenAddBeforeSend checks
// "remove-then-add before a send is treated as add": a cached name
// unwatched and watched again while another request is in flight keeps its
// cache entry, since the unsubscription was never written: the new watch
// gets the cached value at once and nothing about the name goes on the
// wire. A name watched and unwatched in between is never sent either.
func TestDelta_Wire_RemoveThenAddBeforeSend(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	rb := newRecordingBuilder(ms.TransportBuilder())
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithDelta(), client.WithTransportBuilder(rb))
	cancelA := client.Watch(c, resources.ClusterType, "a", newRecorder[*resources.Cluster]())
	wantDeltaRequest(t, ms, true, sub(cds, "a"))
	nonce := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))

	rb.hold()
	defer client.Watch(c, resources.ClusterType, "b", newRecorder[*resources.Cluster]())()
	<-rb.sending // "subscribe b" waits at the gate
	cancelA()
	wa := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	wa.wantKind(ctx, t, changed, nil) // the cached copy, at once
	cancelC := client.Watch(c, resources.ClusterType, "c", newRecorder[*resources.Cluster]())
	cancelC()
	rb.release()

	wantDeltaRequest(t, ms, false, sub(cds, "b"))
	nonce = sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "b", version: "1", msg: testutil.Cluster("b", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce)) // and nothing about a or c
	wa.wantNone(t, defaultTestShortTimeout)
}

// TestDelta_Response_RemovedIsDeleted checks removed_resources: a cached
// resource named there is deleted (ResourceError wrapping
// ErrResourceNotFound, status DOES_NOT_EXIST), stays subscribed (no
// unsubscribe is sent), and is delivered again when it comes back
// (R-6.2, "Deleting Resources").
func TestDelta_Response_RemovedIsDeleted(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	w.wantKind(ctx, t, changed, nil)

	nonce = sendDelta(t, ms, deltaResponse(cds, []string{"a"}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	e := w.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	var re *client.ResourceError
	if !errors.As(e.err, &re) || re.Name != "a" || re.TypeURL != cds {
		t.Fatalf("error = %v, want a ResourceError naming a", e.err)
	}
	if g := dumpEntry(c, cds, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST || g.GetXdsConfig() != nil {
		t.Fatalf("CSDS entry = %v, want DOES_NOT_EXIST without a value", g)
	}
	nonce = sendDelta(t, ms, deltaResponse(cds, []string{"a"}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	w.wantNone(t, defaultTestShortTimeout) // not reported twice

	nonce = sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "2", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	w.wantKind(ctx, t, changed, nil)
}

// TestDelta_Response_IgnoreResourceDeletion checks under delta: with
// ignore_resource_deletion, a cached resource named in removed_resources
// is kept and its watchers hear nothing; a requested resource that was
// never received is still reported as not existing.
func TestDelta_Response_IgnoreResourceDeletion(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{ServerFeatures: []string{"ignore_resource_deletion", "delta_ads"}})
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	nextDelta(t, ms)
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wa.wantKind(ctx, t, changed, nil)

	nonce = sendDelta(t, ms, deltaResponse(cds, []string{"a", "b"}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wb.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	wa.wantNone(t, defaultTestShortTimeout)
	if g := dumpEntry(c, cds, "a"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED || g.GetXdsConfig() == nil {
		t.Fatalf("CSDS entry of a = %v, want ACKED with its value", g)
	}
}

// TestDelta_NACK_DuplicateName checks: a name repeated
// among the added resources makes the response a NACK naming it; that
// resource is invalid (no cached value: ResourceError), the other one is
// applied.
func TestDelta_NACK_DuplicateName(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	nextDelta(t, ms)
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")},
		deltaResource{name: "b", version: "1", msg: testutil.Cluster("b", "")},
		deltaResource{name: "a", version: "2", msg: testutil.Cluster("a", "x")}))
	msg := wantNACK(t, ms, cds, nonce, `resource "a": duplicate resource name "a"`)
	if strings.Contains(msg, `resource "b"`) {
		t.Errorf("NACK %q names b", msg)
	}
	wa.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
	wb.wantKind(ctx, t, changed, nil)
}

// TestDelta_NACK_AddedAndRemoved checks: a name both among the
// resources and in removed_resources makes the response a NACK naming
// it; it is neither applied nor deleted (its cached value stays, with an
// AmbientError), and the rest of the response (b's removal) is applied.
func TestDelta_NACK_AddedAndRemoved(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	nextDelta(t, ms)
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")},
		deltaResource{name: "b", version: "1", msg: testutil.Cluster("b", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wa.wantKind(ctx, t, changed, nil)
	wb.wantKind(ctx, t, changed, nil)

	nonce = sendDelta(t, ms, deltaResponse(cds, []string{"a", "b"},
		deltaResource{name: "a", version: "2", msg: testutil.Cluster("a", "x")}))
	wantNACK(t, ms, cds, nonce, `resource "a": resource "a" is both in resources and in removed_resources`)
	wa.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
	wb.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	if g := dumpEntry(c, cds, "a"); g.GetVersionInfo() != "1" || g.GetClientStatus() != v3adminpb.ClientResourceStatus_NACKED {
		t.Fatalf("CSDS entry of a = %v, want NACKED keeping version 1", g)
	}
}

// TestDelta_Response_AliasDeliveredToAliasWatcher checks "Resource names":
// a resource whose name is not watched but one of whose aliases is goes to
// the watchers of the alias, and is cached under it; its value carries its
// own name. An unresolved alias (no body) is skipped, not NACKed.
func TestDelta_Response_AliasDeliveredToAliasWatcher(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "alias", w)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "other", version: "0", aliases: []string{"alias"}}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	nonce = sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "real", version: "1", msg: testutil.Cluster("real", ""), aliases: []string{"alias"}}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	if e := w.wantKind(ctx, t, changed, nil); e.value.Name != "real" {
		t.Fatalf("alias watcher got %v, want the resource named real", e)
	}
	if g := dumpEntry(c, cds, "alias"); g.GetVersionInfo() != "1" || g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED {
		t.Fatalf("CSDS entry of the alias = %v, want ACKED version 1", g)
	}
}

// TestDelta_Response_UnrequestedIgnored checks that resources nobody
// watched are ignored, not decoded, and not NACKed even when invalid ("How
// the client specifies what resources to return"); a repeated name is the
// exception.
func TestDelta_Response_UnrequestedIgnored(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, []string{"gone"},
		deltaResource{name: "z", version: "1", msg: invalidCluster("z")},
		deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
	// A repeated unsubscribed name is a NACK:
	// TestADS_Delta_DuplicateUnrequestedNameNACKed.
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	w.wantKind(ctx, t, changed, nil)
	if g := dumpEntry(c, cds, "z"); g != nil {
		t.Fatalf("unrequested resource in CSDS: %v", g)
	}
}

// TestDelta_Response_PerResourceVersions checks that each resource's own
// version is what the cache and Dump keep (system_version_info is only
// informational), and that a resource resent with the same bytes under a
// new version updates the version without a watcher call, while
// a body-less resource at the cached version is a heartbeat: no
// call, no NACK. A body-less resource at another version is NACKed.
func TestDelta_Response_PerResourceVersions(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	nextDelta(t, ms)
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "a", version: "a1", msg: testutil.Cluster("a", "")},
		deltaResource{name: "b", version: "b7", msg: testutil.Cluster("b", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wa.wantKind(ctx, t, changed, nil)
	wb.wantKind(ctx, t, changed, nil)
	if a, b := dumpEntry(c, cds, "a").GetVersionInfo(), dumpEntry(c, cds, "b").GetVersionInfo(); a != "a1" || b != "b7" {
		t.Fatalf("CSDS versions = %q, %q, want a1, b7", a, b)
	}

	nonce = sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "a2", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	nonce = sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "b", version: "b7"}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wa.wantNone(t, defaultTestShortTimeout)
	wb.wantNone(t, defaultTestShortTimeout)
	if a := dumpEntry(c, cds, "a").GetVersionInfo(); a != "a2" {
		t.Fatalf("CSDS version of a = %q, want a2", a)
	}

	nonce = sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "b", version: "b8"}))
	wantNACK(t, ms, cds, nonce, `resource "b": resource "b" has no body`)
	wb.wantKind(ctx, t, ambientError, client.ErrResourceInvalid)
}

// TestDelta_UnknownTypeIgnored checks under delta: a response of a
// type URL the client does not know is neither ACKed nor NACKed, and the
// stream keeps reading.
func TestDelta_UnknownTypeIgnored(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	nextDelta(t, ms)
	sendDelta(t, ms, &v3discoverypb.DeltaDiscoveryResponse{TypeUrl: "type.googleapis.com/unknown.Type"})
	sendDelta(t, ms, deltaResponse(resources.ListenerTypeURL, nil)) // known, never requested
	nonce := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	w.wantKind(ctx, t, changed, nil)
}

// TestDelta_FlowControl_NextResponseWaitsForDone checks under
// delta: the next response is not read, hence not ACKed, until the
// watcher of the previous one called done; the ACK of a response goes out
// before its watchers finish.
func TestDelta_FlowControl_NextResponseWaitsForDone(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	w := newRecorder[*resources.Cluster]()
	w.holdDone = true
	defer client.Watch(c, resources.ClusterType, "a", w)()
	nextDelta(t, ms)
	n1 := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, n1))
	e := w.wantKind(ctx, t, changed, nil)
	n2 := sendDelta(t, ms, deltaResponse(cds, nil, deltaResource{name: "a", version: "2", msg: testutil.Cluster("a", "x")}))
	w.wantNone(t, defaultTestShortTimeout)
	if got := len(ms.Requests()); got != 2 {
		t.Fatalf("%d requests before done, want 2 (the second response must not be read)", got)
	}
	e.done()
	wantDeltaRequest(t, ms, false, ack(cds, n2))
	w.wantKind(ctx, t, changed, nil).done()
}

// TestDelta_Ordering_ResponseOrderDeletionsLast checks under delta:
// watchers are called in the order of the response's resources, and the
// removals after them.
func TestDelta_Ordering_ResponseOrderDeletionsLast(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	log := &callLog{}
	recs := map[string]*recorder[*resources.Cluster]{}
	for _, n := range []string{"a", "b", "c"} {
		r := newRecorder[*resources.Cluster]()
		recs[n] = r
		defer client.Watch(c, resources.ClusterType, n, r)()
		nextDelta(t, ms)
	}
	nonce := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "")},
		deltaResource{name: "b", version: "1", msg: testutil.Cluster("b", "")},
		deltaResource{name: "c", version: "1", msg: testutil.Cluster("c", "")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	for _, n := range []string{"a", "b", "c"} {
		recs[n].wantKind(ctx, t, changed, nil)
		recs[n].log, recs[n].label = log, n
	}
	nonce = sendDelta(t, ms, deltaResponse(cds, []string{"a"},
		deltaResource{name: "c", version: "2", msg: testutil.Cluster("c", "x")},
		deltaResource{name: "b", version: "2", msg: testutil.Cluster("b", "x")}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	recs["a"].wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	want := []string{"c:changed", "b:changed", "a:resource_error"}
	if got := log.get(); !slices.Equal(got, want) {
		t.Fatalf("watcher calls = %v, want %v", got, want)
	}
}

// TestDelta_Stream_FailureBeforeResponse checks under delta: a
// stream that fails before any response is reported to watchers as
// ErrConnection.
func TestDelta_Stream_FailureBeforeResponse(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	ms.RejectStreams(errors.New("down for maintenance"))
	w := newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", w)()
	w.wantKind(ctx, t, resourceError, client.ErrConnection)
}

// TestDelta_Response_DecodesOnlyWhatChanged checks that decoding is
// proportional to the change: a resource resent with the bytes already
// cached is not decoded again, and a resource nobody watches is not decoded
// at all ("How the client specifies what resources to return"). It counts
// the calls of a custom type's decoder.
func TestDelta_Response_DecodesOnlyWhatChanged(t *testing.T) {
	ctx := testContext(t)
	var decodes atomic.Int64
	counted := resources.NewType(resources.TypeConfig[*v3corepb.Node]{
		TypeURL: nodeTypeURL,
		Decode: func(a *anypb.Any) (string, *v3corepb.Node, error) {
			decodes.Add(1)
			n := &v3corepb.Node{}
			if err := a.UnmarshalTo(n); err != nil {
				return "", nil, err
			}
			return n.GetId(), n, nil
		},
	})
	ms, c := manualDelta(t, false, client.WithResourceTypes(counted))
	w := newRecorder[*v3corepb.Node]()
	defer client.Watch(c, counted, "n1", w)()
	wantDeltaRequest(t, ms, true, sub(nodeTypeURL, "n1"))
	node := func(id, cluster string) deltaResource {
		return deltaResource{name: id, version: cluster, msg: &v3corepb.Node{Id: id, Cluster: cluster}}
	}
	nonce := sendDelta(t, ms, deltaResponse(nodeTypeURL, nil, node("n1", "blue"), node("other", "x")))
	wantDeltaRequest(t, ms, false, ack(nodeTypeURL, nonce))
	w.wantKind(ctx, t, changed, nil)
	if got := decodes.Load(); got != 1 {
		t.Fatalf("%d decodes for one watched and one unwatched resource, want 1", got)
	}
	n2 := node("n1", "blue")
	n2.version = "blue-again"
	nonce = sendDelta(t, ms, deltaResponse(nodeTypeURL, nil, n2))
	wantDeltaRequest(t, ms, false, ack(nodeTypeURL, nonce))
	if got := decodes.Load(); got != 1 {
		t.Fatalf("%d decodes after the same bytes were resent, want still 1", got)
	}
	nonce = sendDelta(t, ms, deltaResponse(nodeTypeURL, nil, node("n1", "green")))
	wantDeltaRequest(t, ms, false, ack(nodeTypeURL, nonce))
	w.wantKind(ctx, t, changed, nil)
	if got := decodes.Load(); got != 2 {
		t.Fatalf("%d decodes after a change, want 2", got)
	}
}

// TestDelta_Response_RemovalByEitherName checks "Resource names" for
// deletion: a resource cached under the alias its watcher asked for is
// deleted when removed_resources names it by its own name, and one cached
// under its own name is deleted when removed_resources names one of its
// aliases.
func TestDelta_Response_RemovalByEitherName(t *testing.T) {
	ctx := testContext(t)
	ms, c := manualDelta(t, false)
	wAlias, wName := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "alias", wAlias)()
	nextDelta(t, ms)
	defer client.Watch(c, resources.ClusterType, "b", wName)()
	nextDelta(t, ms)
	nonce := sendDelta(t, ms, deltaResponse(cds, nil,
		deltaResource{name: "real", version: "1", msg: testutil.Cluster("real", ""), aliases: []string{"alias"}},
		deltaResource{name: "b", version: "1", msg: testutil.Cluster("b", ""), aliases: []string{"b-alias"}}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wAlias.wantKind(ctx, t, changed, nil)
	wName.wantKind(ctx, t, changed, nil)

	nonce = sendDelta(t, ms, deltaResponse(cds, []string{"real", "b-alias"}))
	wantDeltaRequest(t, ms, false, ack(cds, nonce))
	wAlias.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	wName.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	for _, n := range []string{"alias", "b"} {
		if g := dumpEntry(c, cds, n); g.GetClientStatus() != v3adminpb.ClientResourceStatus_DOES_NOT_EXIST {
			t.Fatalf("CSDS entry of %s = %v, want DOES_NOT_EXIST", n, g)
		}
	}
}
