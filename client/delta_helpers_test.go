// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// The helpers of the delta tests: a manual (scripted) server, reading the
// client's DeltaDiscoveryRequests in order, and building responses.

// manualDelta starts a manual management server (in memory when inMemory,
// for synctest bubbles) and a client that speaks delta to it.
func manualDelta(t *testing.T, inMemory bool, opts ...client.Option) (*testutil.ManagementServer, *client.Client) {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true, InMemory: inMemory})
	return ms, newClient(t, ms, testutil.BootstrapOptions{}, append([]client.Option{client.WithDelta()}, opts...)...)
}

// nextDelta returns the next request the server received, which must be a
// delta one.
func nextDelta(t *testing.T, ms *testutil.ManagementServer) *testutil.Request {
	t.Helper()
	r, err := ms.NextRequest(testContext(t))
	if err != nil {
		t.Fatalf("waiting for a delta request: %v", err)
	}
	if r.Delta == nil {
		t.Fatalf("request %v is not a delta request", r.Req)
	}
	return r
}

// wantDeltaRequest reads the next request and compares it with want,
// exactly, except for the node: the first request of a stream (first)
// must carry the client's node, and no other may carry one.
func wantDeltaRequest(t *testing.T, ms *testutil.ManagementServer, first bool, want *v3discoverypb.DeltaDiscoveryRequest) *testutil.Request {
	t.Helper()
	r := nextDelta(t, ms)
	got := proto.Clone(r.Delta).(*v3discoverypb.DeltaDiscoveryRequest)
	switch {
	case first && got.GetNode().GetId() != "test-node":
		t.Fatalf("first request of the stream has node %v, want the client's node (R-4.3)", got.GetNode())
	case !first && got.GetNode() != nil:
		t.Fatalf("request %v carries the node; only the first of a stream may (R-4.3)", got)
	}
	got.Node = nil
	if diff := cmp.Diff(got, want, protocmp.Transform()); diff != "" {
		t.Fatalf("delta request (-got, +want):\n%s", diff)
	}
	return r
}

// sendDelta scripts resp and returns its nonce.
func sendDelta(t *testing.T, ms *testutil.ManagementServer, resp *v3discoverypb.DeltaDiscoveryResponse) string {
	t.Helper()
	nonce, err := ms.SendDeltaResponse(testContext(t), resp)
	if err != nil {
		t.Fatal(err)
	}
	return nonce
}

// deltaResource is one resource of a scripted delta response.
type deltaResource struct {
	name    string
	version string
	msg     proto.Message // nil: no body
	aliases []string
}

// deltaResponse builds a scripted DeltaDiscoveryResponse.
func deltaResponse(typeURL string, removed []string, rs ...deltaResource) *v3discoverypb.DeltaDiscoveryResponse {
	resp := &v3discoverypb.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: "informational", RemovedResources: removed}
	for _, r := range rs {
		res := &v3discoverypb.Resource{Name: r.name, Version: r.version, Aliases: r.aliases}
		if r.msg != nil {
			res.Resource = testutil.MarshalAny(r.msg)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

// ack is the expected ACK of nonce for typeURL.
func ack(typeURL, nonce string) *v3discoverypb.DeltaDiscoveryRequest {
	return &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: nonce}
}

// sub is the expected request of typeURL that subscribes to names.
func sub(typeURL string, names ...string) *v3discoverypb.DeltaDiscoveryRequest {
	return &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names}
}

// unsub is the expected request of typeURL that unsubscribes from names.
func unsub(typeURL string, names ...string) *v3discoverypb.DeltaDiscoveryRequest {
	return &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesUnsubscribe: names}
}
