// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestADS_TopLevelError_NACKedRestAppliedNothingDeleted checks and
// for a resource that cannot be attributed to a name (its bytes do
// not decode): the response is NACKed with a "top level errors" detail, the
// valid resources in it are applied, and, since the undecodable one
// might be any cached Cluster, no Cluster is deleted by omission.
//
//  1. Watch clusters a and b; version 1 carries both.
//  2. Version 2 carries a changed and an undecodable Cluster.
//  3. Expect a NACK naming no resource, a changed, b untouched and ACKED.
func TestADS_TopLevelError_NACKedRestAppliedNothingDeleted(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{})
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	waitForNames(t, ms, resources.ClusterTypeURL, "a", "b")
	sendAndWait(t, ms, discoveryResponse(resources.ClusterTypeURL, "1", testutil.Cluster("a", ""), testutil.Cluster("b", "")))
	wa.wantKind(ctx, t, changed, nil)
	wb.wantKind(ctx, t, changed, nil)

	resp := discoveryResponse(resources.ClusterTypeURL, "2", testutil.Cluster("a", "a2"))
	resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: resources.ClusterTypeURL, Value: []byte{0xff, 0xff, 0xff}})
	nonce, err := ms.SendResponse(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	nack := waitForNonce(t, ms, nonce).Req
	msg := nack.GetErrorDetail().GetMessage()
	if nack.GetVersionInfo() != "1" || !strings.Contains(msg, "top level errors: resource 1:") || strings.Contains(msg, `resource "`) {
		t.Fatalf("answer = %v, want a NACK of version 1 with one top-level error for resource index 1", nack)
	}
	if got := wa.wantKind(ctx, t, changed, nil).value; got.EDSServiceName != "a2" {
		t.Fatalf("a = %+v, want the valid update of the NACKed response", got)
	}
	wb.wantNone(t, defaultTestShortTimeout)
	if g := dumpEntry(c, resources.ClusterTypeURL, "b"); g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED || g.GetVersionInfo() != "1" {
		t.Fatalf("CSDS entry of b = %v, want ACKED at version 1 (not deleted)", g)
	}
}

// TestADS_UndecodableResponseIgnored checks for a message that is not
// a DiscoveryResponse: it gets neither ACK nor NACK, and the stream keeps
// reading: the next response is delivered and answered.
func TestADS_UndecodableResponseIgnored(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{Manual: true})
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(garblingBuilder{ms.Dialer()}))
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	waitForNames(t, ms, resources.ListenerTypeURL, "svc")

	garbled := discoveryResponse(resources.ListenerTypeURL, "1", testutil.Listener("svc", "r"))
	garbled.Nonce = garbleNonce
	if _, err := ms.SendResponse(ctx, garbled); err != nil {
		t.Fatal(err)
	}
	nonce, err := ms.SendResponse(ctx, discoveryResponse(resources.ListenerTypeURL, "2", testutil.Listener("svc", "r")))
	if err != nil {
		t.Fatal(err)
	}
	w.wantKind(ctx, t, changed, nil)
	next, err := ms.NextRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next.Req.GetResponseNonce() != nonce || next.Req.GetVersionInfo() != "2" {
		t.Fatalf("first request after the undecodable message = %v, want the ACK of nonce %q", next.Req, nonce)
	}
}

// garbleNonce marks a response that garblingBuilder's streams replace with
// bytes that are not a DiscoveryResponse.
const garbleNonce = "garble-me"

// garblingBuilder speaks ADS over the Transports of a transport.Dialer;
// its streams deliver responses with nonce garbleNonce as undecodable
// bytes.
type garblingBuilder struct{ inner transport.Dialer }

func (b garblingBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	tr, err := b.inner.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return transport.ADS(garblingTransport{tr}), nil
}

type garblingTransport struct{ transport.Transport }

func (tr garblingTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	s, err := tr.Transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return garblingStream{s}, nil
}

type garblingStream struct{ transport.Stream }

func (s garblingStream) Recv() ([]byte, error) {
	b, err := s.Stream.Recv()
	if err != nil {
		return nil, err
	}
	resp := &v3discoverypb.DiscoveryResponse{}
	if proto.Unmarshal(b, resp) == nil && resp.GetNonce() == garbleNonce {
		return []byte{0xff, 0xff, 0xff}, nil // field 31, wire type 7: invalid
	}
	return b, nil
}
