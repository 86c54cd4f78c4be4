// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/testutil"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestSotW_WildcardAndNamed checks the response content: a wildcard
// subscription (legacy empty list, or "*") gets every resource of the type
// in snapshot order; a named one gets the requested names the snapshot
// has, in snapshot order.
//  1. Snapshot with clusters c, a, b.
//  2. A named request [b, missing, c] gets [c, b].
//  3. On another stream, an empty first request gets [c, a, b].
//  4. On a third stream, ["*"] gets [c, a, b].
func TestSotW_WildcardAndNamed(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "c", "a", "b"))

		s1 := newRawStream(t, ms, true)
		s1.request(cdsURL, "", "", "b", "missing", "c")
		wantResponse(t, s1.recv(ctx), cdsURL, "v1", "c", "b")

		s2 := newRawStream(t, ms, true)
		s2.request(cdsURL, "", "")
		wantResponse(t, s2.recv(ctx), cdsURL, "v1", "c", "a", "b")

		s3 := newRawStream(t, ms, true)
		s3.request(cdsURL, "", "", "*")
		wantResponse(t, s3.recv(ctx), cdsURL, "v1", "c", "a", "b")
	})
}

// TestSotW_LegacyWildcardOnlyFirst checks the wildcard rules of the xDS
// protocol ("How the client specifies what resources to return"):
//  1. [] as the first request: wildcard, all clusters; its ACK, with [],
//     keeps the wildcard (Update pushes).
//  2. ["*", "a"]: wildcard plus a; the subscription changed, so a response
//     with everything comes.
//  3. ["a"]: only a.
//  4. []: no names any more, not a wildcard: no response, and Update
//     pushes nothing for the type.
//  5. ["b"]: b.
func TestSotW_LegacyWildcardOnlyFirst(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "b"))
		s := newRawStream(t, ms, true)

		s.request(cdsURL, "", "")
		r := s.recv(ctx)
		wantResponse(t, r, cdsURL, "v1", "a", "b")
		s.ack(r)
		s.wantNone(defaultTestShortTimeout)
		ms.Update("", clusters("v2", "a", "b", "c"))
		r = s.recv(ctx)
		wantResponse(t, r, cdsURL, "v2", "a", "b", "c")
		s.ack(r)

		s.request(cdsURL, "v2", r.GetNonce(), "*", "a")
		r = s.recv(ctx)
		wantResponse(t, r, cdsURL, "v2", "a", "b", "c")

		s.request(cdsURL, "v2", r.GetNonce(), "a")
		r = s.recv(ctx)
		wantResponse(t, r, cdsURL, "v2", "a")

		s.request(cdsURL, "v2", r.GetNonce())
		s.wantNone(defaultTestShortTimeout)
		ms.Update("", clusters("v3", "a", "b"))
		s.wantNone(defaultTestShortTimeout)

		s.request(cdsURL, "v2", r.GetNonce(), "b")
		wantResponse(t, s.recv(ctx), cdsURL, "v3", "b")
	})
}

// TestSotW_ACKAndNACKGetNoResponse checks that an ACK of the current
// version with unchanged names, and a NACK, get no response, while a NACK
// is followed by the next version when Update changes it.
func TestSotW_ACKAndNACKGetNoResponse(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		s := newRawStream(t, ms, true)

		s.request(cdsURL, "", "", "a")
		r := s.recv(ctx)
		wantResponse(t, r, cdsURL, "v1", "a")
		s.ack(r, "a")
		s.wantNone(defaultTestShortTimeout)

		ms.Update("", clusters("v2", "a"))
		r = s.recv(ctx)
		wantResponse(t, r, cdsURL, "v2", "a")
		s.requestWith(&v3discoverypb.DiscoveryRequest{
			TypeUrl: cdsURL, VersionInfo: "v1", ResponseNonce: r.GetNonce(), ResourceNames: []string{"a"},
			ErrorDetail: status.New(codes.InvalidArgument, "bad").Proto(),
		})
		s.wantNone(defaultTestShortTimeout)

		ms.Update("", clusters("v3", "a"))
		wantResponse(t, s.recv(ctx), cdsURL, "v3", "a")
	})
}

// TestSotW_NewNameTriggersResponse checks that a request adding a name
// gets the current version again with the new name, even though that
// version was ACKed.
func TestSotW_NewNameTriggersResponse(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "b"))
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "a")
		r := s.recv(ctx)
		wantResponse(t, r, cdsURL, "v1", "a")
		s.ack(r, "a", "b")
		wantResponse(t, s.recv(ctx), cdsURL, "v1", "a", "b")
	})
}

// TestSotW_NewStreamAlwaysAnswered checks that the first request of a
// stream gets a response even when its version_info is the current one
// (the client reconnects after having ACKed it).
func TestSotW_NewStreamAlwaysAnswered(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "v1", "", "a")
		wantResponse(t, s.recv(ctx), cdsURL, "v1", "a")
	})
}

// TestSotW_UpdatePushesInTypeOrder checks that Update pushes the types a
// stream subscribes to in the order LDS, RDS, CDS, EDS, then custom types
// by first appearance, whatever the order of the subscriptions, and only
// types whose version changed.
func TestSotW_UpdatePushesInTypeOrder(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		const (
			nodeURL     = "type.googleapis.com/envoy.config.core.v3.Node"
			localityURL = "type.googleapis.com/envoy.config.core.v3.Locality"
		)
		snap := testutil.Chain(testutil.ChainOptions{})
		snap.Other = []testutil.NamedResource{
			{Name: "l1", Resource: &v3corepb.Locality{Region: "r"}},
			{Name: "n1", Resource: &v3corepb.Node{Id: "n1"}},
		}
		ms.Update("", snap)
		s := newRawStream(t, ms, true)
		subs := []struct{ typeURL, name string }{
			{nodeURL, "n1"}, {edsURL, "eds-svc"}, {cdsURL, "cluster-svc"}, {localityURL, "l1"}, {rdsURL, "route-svc"}, {ldsURL, "svc"},
		}
		for _, sub := range subs {
			s.request(sub.typeURL, "", "", sub.name)
			r := s.recv(ctx)
			if r.GetTypeUrl() != sub.typeURL || r.GetVersionInfo() != "1" || len(r.GetResources()) != 1 {
				t.Fatalf("response to the %s request = %v, want version 1 with one resource", sub.typeURL, r)
			}
			s.ack(r, sub.name)
		}
		s.wantNone(defaultTestShortTimeout)

		ms.Update("", snap)
		var got []string
		for range subs {
			r := s.recv(ctx)
			if r.GetVersionInfo() != "2" {
				t.Fatalf("pushed version %q, want 2", r.GetVersionInfo())
			}
			got = append(got, r.GetTypeUrl())
		}
		want := []string{ldsURL, rdsURL, cdsURL, edsURL, localityURL, nodeURL}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("push order = %v, want %v", got, want)
			}
		}
		s.wantNone(defaultTestShortTimeout)

		// The same explicit version again pushes nothing.
		snap.Version = "2"
		ms.Update("", snap)
		s.wantNone(defaultTestShortTimeout)
	})
}

// TestSotW_EmptyTypeStillAnswered checks that a subscribed type the
// snapshot has no resource of gets a response with an empty list.
func TestSotW_EmptyTypeStillAnswered(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		s := newRawStream(t, ms, true)
		s.request(ldsURL, "", "", "svc")
		wantResponse(t, s.recv(ctx), ldsURL, "v1")
	})
}

// TestSotW_PerNodeSnapshots checks that a node with its own snapshot is
// served from it, other nodes from the default one, that a stream's node
// is the one of its first request, and that Update pushes only to the
// streams whose snapshot it changed.
func TestSotW_PerNodeSnapshots(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("default-1", "d"))
		ms.Update("node-a", clusters("a-1", "a"))

		sa, sb := newRawStream(t, ms, true), newRawStream(t, ms, true)
		sa.requestWith(&v3discoverypb.DiscoveryRequest{TypeUrl: cdsURL, Node: &v3corepb.Node{Id: "node-a"}})
		ra := sa.recv(ctx)
		wantResponse(t, ra, cdsURL, "a-1", "a")
		sb.requestWith(&v3discoverypb.DiscoveryRequest{TypeUrl: cdsURL, Node: &v3corepb.Node{Id: "node-b"}})
		rb := sb.recv(ctx)
		wantResponse(t, rb, cdsURL, "default-1", "d")
		// Later requests need not carry the node.
		sa.ack(ra)
		sb.ack(rb)

		ms.Update("", clusters("default-2", "d", "e"))
		wantResponse(t, sb.recv(ctx), cdsURL, "default-2", "d", "e")
		sa.wantNone(defaultTestShortTimeout)

		ms.Update("node-a", clusters("a-2", "a", "b"))
		wantResponse(t, sa.recv(ctx), cdsURL, "a-2", "a", "b")
		sb.wantNone(defaultTestShortTimeout)

		for _, r := range ms.Requests() {
			if r.Node.GetId() == "" {
				t.Fatalf("request %v recorded without the stream's node", r.Req)
			}
		}
	})
}

// TestSotW_NoSnapshotNoResponse checks that a node without a snapshot
// (and no default) gets nothing until Update gives it one.
func TestSotW_NoSnapshotNoResponse(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("other-node", clusters("x", "x"))
		s := newRawStream(t, ms, true)
		s.requestWith(&v3discoverypb.DiscoveryRequest{TypeUrl: cdsURL, Node: &v3corepb.Node{Id: "n"}, ResourceNames: []string{"a"}})
		s.wantNone(defaultTestShortTimeout)
		ms.Update("n", clusters("v1", "a"))
		wantResponse(t, s.recv(ctx), cdsURL, "v1", "a")
	})
}

// TestSotW_AutoVersions checks that Update with Version "" uses the
// server-wide Update counter.
func TestSotW_AutoVersions(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "a")

		ms.Update("", clusters("", "a"))
		r := s.recv(ctx)
		wantResponse(t, r, cdsURL, "1", "a")
		s.ack(r, "a")
		ms.Update("other", clusters("explicit", "a")) // counts, though another node's
		ms.Update("", clusters("", "a"))
		wantResponse(t, s.recv(ctx), cdsURL, "3", "a")
	})
}

// TestSotW_WrapResources checks that WrapResources wraps each resource in
// a discovery Resource carrying its name and the snapshot version.
func TestSotW_WrapResources(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{WrapResources: true}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "b"))
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "b")
		r := s.recv(ctx)
		if len(r.GetResources()) != 1 {
			t.Fatalf("response = %v, want one resource", r)
		}
		w := &v3discoverypb.Resource{}
		if err := r.GetResources()[0].UnmarshalTo(w); err != nil {
			t.Fatalf("resource is not a discovery Resource: %v", err)
		}
		if w.GetName() != "b" || w.GetVersion() != "v1" || !proto.Equal(w.GetResource(), testutil.MarshalAny(testutil.Cluster("b", ""))) {
			t.Fatalf("wrapped resource = %v, want b at v1 holding Cluster(b)", w)
		}
	})
}

// TestSotW_ManualNeverAnswers checks that a Manual server records requests
// but answers only with SendResponse.
func TestSotW_ManualNeverAnswers(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{Manual: true}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		s := newRawStream(t, ms, true)
		s.request(cdsURL, "", "", "a")
		if _, err := ms.NextRequest(ctx); err != nil {
			t.Fatal(err)
		}
		ms.Update("", clusters("v2", "a"))
		s.wantNone(defaultTestShortTimeout)
		nonce, err := ms.SendResponse(ctx, &v3discoverypb.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: "scripted"})
		if err != nil {
			t.Fatal(err)
		}
		if r := s.recv(ctx); r.GetVersionInfo() != "scripted" || r.GetNonce() != nonce {
			t.Fatalf("response = %v, want the scripted one with nonce %q", r, nonce)
		}
	})
}

// TestSotW_StaleNonceIgnored checks the xDS protocol, "Resource updates":
// a request whose response_nonce is not the latest response's of its type
// on the stream gets no response and changes nothing, while the same
// request with the latest nonce is answered.
//  1. [a] gets v1 (nonce N1); [b] with N1 gets b (nonce N2).
//  2. [a, b] with N1 (stale): no response.
//  3. [a, b] with N2: a response with a and b.
func TestSotW_StaleNonceIgnored(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "b"))
		s := newRawStream(t, ms, true)

		s.request(cdsURL, "", "", "a")
		r1 := s.recv(ctx)
		wantResponse(t, r1, cdsURL, "v1", "a")
		s.request(cdsURL, "v1", r1.GetNonce(), "b")
		r2 := s.recv(ctx)
		wantResponse(t, r2, cdsURL, "v1", "b")

		s.request(cdsURL, "v1", r1.GetNonce(), "a", "b")
		s.wantNone(defaultTestShortTimeout)

		s.request(cdsURL, "v1", r2.GetNonce(), "a", "b")
		wantResponse(t, s.recv(ctx), cdsURL, "v1", "a", "b")
	})
}
