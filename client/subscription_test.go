// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"slices"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestSubscription_CoalescedAndOrdered checks: subscription changes
// made while a request is in flight are sent together, in one request per
// type carrying the full list, and types go in registry order (LDS, RDS,
// CDS, EDS) whatever the order of the watches.
func TestSubscription_CoalescedAndOrdered(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	rb := newRecordingBuilder(ms.TransportBuilder())
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))

	rb.hold()
	defer client.Watch(c, resources.EndpointsType, "e0", newRecorder[*resources.Endpoints]())()
	<-rb.sending // the first request (EDS e0) waits at the gate
	var names []string
	for i := range 50 {
		n := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		names = append(names, n)
		defer client.Watch(c, resources.ClusterType, n, newRecorder[*resources.Cluster]())()
	}
	defer client.Watch(c, resources.EndpointsType, "e1", newRecorder[*resources.Endpoints]())()
	defer client.Watch(c, resources.RouteConfigType, "r0", newRecorder[*resources.RouteConfig]())()
	defer client.Watch(c, resources.ListenerType, "l0", newRecorder[*resources.Listener]())()
	rb.release()

	var got []string
	for len(got) < 5 {
		r, err := ms.NextRequest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Req.GetTypeUrl())
		switch r.Req.GetTypeUrl() {
		case resources.ClusterTypeURL:
			slices.Sort(names)
			if !slices.Equal(r.Req.GetResourceNames(), names) {
				t.Fatalf("CDS request names = %v, want all 50 in one sorted list", r.Req.GetResourceNames())
			}
		case resources.EndpointsTypeURL:
			if len(got) > 1 && !slices.Equal(r.Req.GetResourceNames(), []string{"e0", "e1"}) {
				t.Fatalf("second EDS request names = %v, want [e0 e1]", r.Req.GetResourceNames())
			}
		}
	}
	want := []string{resources.EndpointsTypeURL, resources.ListenerTypeURL, resources.RouteConfigTypeURL, resources.ClusterTypeURL, resources.EndpointsTypeURL}
	if !slices.Equal(got, want) {
		t.Fatalf("request types = %v, want %v", got, want)
	}
	shortCtx, cancel := contextWithTimeout(t, defaultTestShortTimeout)
	defer cancel()
	if r, err := ms.NextRequest(shortCtx); err == nil {
		t.Fatalf("extra request %v: changes were not coalesced", r.Req)
	}
}

// TestSubscription_EmptyListNeverFirst checks: a type whose last
// name was unsubscribed while the stream was down is not requested on the
// new stream (an empty list would be a wildcard), while on a live stream the
// empty list is sent to unsubscribe.
func TestSubscription_EmptyListNeverFirst(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	rb := newRecordingBuilder(ms.TransportBuilder())
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(rb))

	defer client.Watch(c, resources.ListenerType, "l", newRecorder[*resources.Listener]())()
	cancelC := client.Watch(c, resources.ClusterType, "c", newRecorder[*resources.Cluster]())
	waitForNames(t, ms, resources.ClusterTypeURL, "c")
	cancelC()
	// On the live stream, unsubscribing the last name sends an empty list.
	waitForNames(t, ms, resources.ClusterTypeURL)

	cancelE := client.Watch(c, resources.EndpointsType, "e", newRecorder[*resources.Endpoints]())
	waitForNames(t, ms, resources.EndpointsTypeURL, "e")
	// Break the stream, and unsubscribe e while the new stream's first
	// request is held at the gate.
	rb.hold()
	ms.BreakStreams()
	<-rb.sending
	cancelE()
	rb.release()
	first := waitForNames(t, ms, resources.ListenerTypeURL, "l")
	shortCtx, cancel := contextWithTimeout(t, defaultTestShortTimeout)
	defer cancel()
	for {
		r, err := ms.NextRequest(shortCtx)
		if err != nil {
			break
		}
		if r.StreamID == first.StreamID && len(r.Req.GetResourceNames()) == 0 {
			t.Fatalf("new stream sent an empty %s request: %v", r.Req.GetTypeUrl(), r.Req)
		}
	}
}

// TestSubscription_AuthoritiesShareOneStream checks: two
// authorities that name the same management server share one ADS stream
// with the old-style names, and xdstp names that differ only in the order
// of their context parameters are one subscription.
func TestSubscription_AuthoritiesShareOneStream(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	const (
		a1          = "xdstp://a1/envoy.config.cluster.v3.Cluster/c?x=1&y=2"
		a1Reordered = "xdstp://a1/envoy.config.cluster.v3.Cluster/c?y=2&x=1"
		a2          = "xdstp://a2/envoy.config.cluster.v3.Cluster/c"
	)
	ms.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{
		testutil.Cluster("old", ""), testutil.Cluster(a1, "eds-a1"), testutil.Cluster(a2, "eds-a2"),
	}})
	c := newClient(t, ms, testutil.BootstrapOptions{Authorities: map[string]string{"a1": "", "a2": ""}})
	w1, w1r, w2, wo := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, a1, w1)()
	defer client.Watch(c, resources.ClusterType, a1Reordered, w1r)()
	defer client.Watch(c, resources.ClusterType, a2, w2)()
	defer client.Watch(c, resources.ClusterType, "old", wo)()
	for _, w := range []*recorder[*resources.Cluster]{w1, w1r, w2, wo} {
		w.wantKind(ctx, t, changed, nil)
	}
	if n := ms.OpenStreams(); n != 1 {
		t.Fatalf("open streams = %d, want 1 shared stream", n)
	}
	for _, r := range ms.Requests() {
		if r.StreamID != 1 {
			t.Fatalf("request on stream %d, want every request on stream 1", r.StreamID)
		}
		if r.Req.GetTypeUrl() == resources.ClusterTypeURL && slices.Contains(r.Req.GetResourceNames(), a1Reordered) {
			t.Fatalf("request %v names the non-canonical form %q", r.Req, a1Reordered)
		}
	}
	if n := len(c.Dump().GetGenericXdsConfigs()); n != 3 {
		t.Fatalf("Dump has %d entries, want 3 (one per canonical name)", n)
	}
}
