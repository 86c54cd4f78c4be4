// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// rawDeltaStream is a raw delta ADS client stream to a ManagementServer,
// over gRPC or the in-memory transport; a goroutine reads responses into
// resps until the stream ends, stopped and waited for at cleanup.
type rawDeltaStream struct {
	t     *testing.T
	send  func(*v3discoverypb.DeltaDiscoveryRequest) error
	resps chan *v3discoverypb.DeltaDiscoveryResponse
	ended chan struct{}
	err   error
}

func newRawDeltaStream(t *testing.T, ms *testutil.ManagementServer) *rawDeltaStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &rawDeltaStream{t: t, resps: make(chan *v3discoverypb.DeltaDiscoveryResponse, 1000), ended: make(chan struct{})}
	var recv func() (*v3discoverypb.DeltaDiscoveryResponse, error)
	var closeConn func()
	if ms.Address() == testutil.InMemoryAddress {
		tr, err := ms.Dialer().Dial(&bootstrap.ServerConfig{ServerURI: ms.Address()}, transport.BuildOptions{})
		if err != nil {
			t.Fatalf("Build() = %v", err)
		}
		st, err := tr.NewStream(ctx, transport.DeltaADSMethod)
		if err != nil {
			t.Fatalf("NewStream() = %v", err)
		}
		s.send = func(req *v3discoverypb.DeltaDiscoveryRequest) error {
			b, err := proto.Marshal(req)
			if err != nil {
				return err
			}
			return st.Send(b)
		}
		recv = func() (*v3discoverypb.DeltaDiscoveryResponse, error) {
			b, err := st.Recv()
			if err != nil {
				return nil, err
			}
			resp := &v3discoverypb.DeltaDiscoveryResponse{}
			return resp, proto.Unmarshal(b, resp)
		}
		closeConn = tr.Close
	} else {
		cc, err := grpc.NewClient(ms.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatalf("grpc.NewClient() = %v", err)
		}
		st, err := v3discoverypb.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
		if err != nil {
			t.Fatalf("DeltaAggregatedResources() = %v", err)
		}
		s.send, recv = st.Send, st.Recv
		closeConn = func() { cc.Close() }
	}
	go func() {
		defer close(s.ended)
		for {
			resp, err := recv()
			if err != nil {
				s.err = err
				return
			}
			s.resps <- resp
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-s.ended
		closeConn()
	})
	return s
}

func (s *rawDeltaStream) request(req *v3discoverypb.DeltaDiscoveryRequest) {
	s.t.Helper()
	if err := s.send(req); err != nil {
		s.t.Fatalf("Send(%v) = %v", req, err)
	}
}

// subscribe sends a request of typeURL subscribing to sub and
// unsubscribing from unsub.
func (s *rawDeltaStream) subscribe(typeURL string, sub, unsub []string) {
	s.t.Helper()
	s.request(&v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub})
}

// subscribed is subscribe, then waits until ms has handled the request, so
// that a later Update is seen after it.
func (s *rawDeltaStream) subscribed(ms *testutil.ManagementServer, typeURL string, sub, unsub []string) {
	s.t.Helper()
	s.subscribe(typeURL, sub, unsub)
	_, err := ms.WaitForRequest(testContext(s.t), func(r *testutil.Request) bool {
		return r.Delta.GetTypeUrl() == typeURL && slices.Equal(r.Delta.GetResourceNamesSubscribe(), sub) &&
			slices.Equal(r.Delta.GetResourceNamesUnsubscribe(), unsub)
	})
	if err != nil {
		s.t.Fatal(err)
	}
	// The request is recorded before the server acts on it; the next one
	// is handled after it, on the same goroutine.
	s.request(&v3discoverypb.DeltaDiscoveryRequest{TypeUrl: "type.googleapis.com/sync.Barrier"})
	if _, err := ms.WaitForRequest(testContext(s.t), func(r *testutil.Request) bool {
		return r.Delta.GetTypeUrl() == "type.googleapis.com/sync.Barrier"
	}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *rawDeltaStream) recv(ctx context.Context) *v3discoverypb.DeltaDiscoveryResponse {
	s.t.Helper()
	select {
	case resp := <-s.resps:
		return resp
	case <-s.ended:
		s.t.Fatalf("stream ended while waiting for a response: %v", s.err)
	case <-ctx.Done():
		s.t.Fatalf("timed out waiting for a response: %v", ctx.Err())
	}
	return nil
}

func (s *rawDeltaStream) wantNone() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), defaultTestShortTimeout)
	defer cancel()
	select {
	case resp := <-s.resps:
		s.t.Fatalf("unexpected response %v", resp)
	case <-ctx.Done():
	}
}

// wantDelta checks a response's type, its resources' names (in order) and
// its removed_resources, and returns the resources' versions by name.
func wantDelta(t *testing.T, resp *v3discoverypb.DeltaDiscoveryResponse, typeURL string, names, removed []string) map[string]string {
	t.Helper()
	var got []string
	versions := map[string]string{}
	for _, r := range resp.GetResources() {
		got = append(got, r.GetName())
		if r.GetVersion() == "" || r.GetResource().GetTypeUrl() != typeURL {
			t.Fatalf("resource %q: version %q, body type %q; want a version and a %s", r.GetName(), r.GetVersion(), r.GetResource().GetTypeUrl(), typeURL)
		}
		versions[r.GetName()] = r.GetVersion()
	}
	if resp.GetTypeUrl() != typeURL || resp.GetNonce() == "" {
		t.Fatalf("response type %q nonce %q, want %s and a nonce", resp.GetTypeUrl(), resp.GetNonce(), typeURL)
	}
	if !slices.Equal(got, names) || !slices.Equal(resp.GetRemovedResources(), removed) {
		t.Fatalf("response resources %v removed %v, want %v and %v", got, resp.GetRemovedResources(), names, removed)
	}
	return versions
}

func listeners(version string, ns ...string) testutil.Resources {
	r := testutil.Resources{Version: version}
	for _, n := range ns {
		r.Listeners = append(r.Listeners, testutil.Listener(n, "route-"+n))
	}
	return r
}

// TestDelta_Server_SubscribeAnswersAndRecords checks a first delta request:
// the subscribed names the snapshot has come back with per-resource
// versions, those it lacks in removed_resources ("Knowing When a Requested
// Resource Does Not Exist", incremental), and the request is recorded
// with Delta set, Req nil, and the stream's node.
func TestDelta_Server_SubscribeAnswersAndRecords(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "c"))
		s := newRawDeltaStream(t, ms)
		s.request(&v3discoverypb.DeltaDiscoveryRequest{Node: &v3corepb.Node{Id: "n1"}, TypeUrl: cdsURL, ResourceNamesSubscribe: []string{"a", "b"}})
		resp := s.recv(ctx)
		wantDelta(t, resp, cdsURL, []string{"a"}, []string{"b"})
		if resp.GetSystemVersionInfo() != "v1" {
			t.Errorf("system_version_info = %q, want the snapshot version v1", resp.GetSystemVersionInfo())
		}
		r, err := ms.NextRequest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Req != nil || r.Delta.GetTypeUrl() != cdsURL || r.Node.GetId() != "n1" || r.StreamID == 0 {
			t.Fatalf("recorded request = %+v, want Delta set, Req nil, node n1", r)
		}
		// An ACK changes nothing: no response.
		s.request(&v3discoverypb.DeltaDiscoveryRequest{TypeUrl: cdsURL, ResponseNonce: resp.GetNonce()})
		s.wantNone()
	})
}

// TestDelta_Server_OnlyChangesPushed checks that Update sends only the
// resources whose bytes changed (the per-resource version is a hash of
// them), and the subscribed ones that left the snapshot as removed
// ("Incremental xDS": "only the single cluster that changed").
func TestDelta_Server_OnlyChangesPushed(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "b"))
		s := newRawDeltaStream(t, ms)
		s.subscribe(cdsURL, []string{"a", "b"}, nil)
		v1 := wantDelta(t, s.recv(ctx), cdsURL, []string{"a", "b"}, nil)

		r := clusters("v2", "a", "b")
		r.Clusters[1] = testutil.Cluster("b", "b-eds")
		ms.Update("", r)
		v2 := wantDelta(t, s.recv(ctx), cdsURL, []string{"b"}, nil)
		if v2["b"] == v1["b"] {
			t.Errorf("changed resource kept version %q", v1["b"])
		}
		r = clusters("v3", "b")
		r.Clusters[0] = testutil.Cluster("b", "b-eds")
		ms.Update("", r)
		wantDelta(t, s.recv(ctx), cdsURL, nil, []string{"a"})
		ms.Update("", clusters("v4", "b")) // b's bytes differ from v3's: pushed
		wantDelta(t, s.recv(ctx), cdsURL, []string{"b"}, nil)
		ms.Update("", clusters("v5", "b")) // same bytes: nothing to send
		s.wantNone()
	})
}

// TestDelta_Server_IncrementalWildcardSequence follows the incremental
// example of "How the client specifies what resources to return" step by
// step, with the server's answers:
//  1. subscribe unset: the legacy wildcard; every Listener comes.
//  2. subscribe A: wildcard continues, A is added (and resent).
//  3. unsubscribe *: A only; a new Listener is no longer sent.
//  4. unsubscribe A: nothing; although the subscription is empty, as it
//     was after step 1, it is not a wildcard: updates send nothing.
func TestDelta_Server_IncrementalWildcardSequence(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", listeners("v1", "A", "B"))
		s := newRawDeltaStream(t, ms)
		s.subscribe(ldsURL, nil, nil)
		wantDelta(t, s.recv(ctx), ldsURL, []string{"A", "B"}, nil)

		s.subscribe(ldsURL, []string{"A"}, nil)
		wantDelta(t, s.recv(ctx), ldsURL, []string{"A"}, nil)
		ms.Update("", listeners("v2", "A", "B", "C"))
		wantDelta(t, s.recv(ctx), ldsURL, []string{"C"}, nil) // still a wildcard

		s.subscribed(ms, ldsURL, nil, []string{"*"})
		s.wantNone()
		r := listeners("v3", "A", "B", "C", "D")
		r.Listeners[0] = testutil.Listener("A", "other-route")
		ms.Update("", r)
		wantDelta(t, s.recv(ctx), ldsURL, []string{"A"}, nil) // D is not sent

		s.subscribed(ms, ldsURL, nil, []string{"A"})
		ms.Update("", listeners("v4", "A", "E"))
		s.wantNone()
	})
}

// TestDelta_Server_LegacyWildcardOnlyForListenersAndClusters checks that
// an empty first request is a wildcard for LDS and CDS only, and that an
// explicit "*" works for any type.
func TestDelta_Server_LegacyWildcardOnlyForListenersAndClusters(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	ms.Update("", testutil.Resources{Version: "v1", Clusters: clusters("", "c").Clusters,
		Endpoints: testutil.Chain(testutil.ChainOptions{Listener: "l"}).Endpoints})
	s := newRawDeltaStream(t, ms)
	s.subscribe(edsURL, nil, nil)
	s.wantNone()
	s.subscribe(cdsURL, nil, nil)
	wantDelta(t, s.recv(ctx), cdsURL, []string{"c"}, nil)
	s2 := newRawDeltaStream(t, ms)
	s2.subscribe(edsURL, []string{"*"}, nil)
	if got := s2.recv(ctx); got.GetTypeUrl() != edsURL || len(got.GetResources()) != 1 {
		t.Fatalf("EDS wildcard response = %v, want the one ClusterLoadAssignment", got)
	}
}

// TestDelta_Server_UnsubscribeNameUnderWildcard checks the exception of
// "Unsubscribing from Resources": with "*" and A subscribed, unsubscribing
// A brings A again when the wildcard covers it, or in removed_resources
// when it does not.
func TestDelta_Server_UnsubscribeNameUnderWildcard(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "A", "B"))
		s := newRawDeltaStream(t, ms)
		s.subscribe(cdsURL, []string{"*", "A", "Z"}, nil)
		wantDelta(t, s.recv(ctx), cdsURL, []string{"A", "B"}, []string{"Z"})
		s.subscribe(cdsURL, nil, []string{"A"})
		wantDelta(t, s.recv(ctx), cdsURL, []string{"A"}, nil)
		s.subscribe(cdsURL, nil, []string{"Z"})
		wantDelta(t, s.recv(ctx), cdsURL, nil, []string{"Z"})
	})
}

// TestDelta_Server_InitialResourceVersions checks the "Incremental
// reconnect example": a new stream that subscribes with
// initial_resource_versions gets only what differs from them.
func TestDelta_Server_InitialResourceVersions(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a", "b", "c"))
		s := newRawDeltaStream(t, ms)
		s.subscribe(cdsURL, []string{"a", "b", "c"}, nil)
		v := wantDelta(t, s.recv(ctx), cdsURL, []string{"a", "b", "c"}, nil)

		r := clusters("v2", "a", "b")
		r.Clusters[1] = testutil.Cluster("b", "b-eds")
		ms.Update("", r)
		wantDelta(t, s.recv(ctx), cdsURL, []string{"b"}, []string{"c"})

		s2 := newRawDeltaStream(t, ms)
		s2.request(&v3discoverypb.DeltaDiscoveryRequest{TypeUrl: cdsURL, ResourceNamesSubscribe: []string{"a", "b", "c"},
			InitialResourceVersions: map[string]string{"a": v["a"], "b": v["b"], "c": v["c"]}})
		wantDelta(t, s2.recv(ctx), cdsURL, []string{"b"}, []string{"c"})
	})
}

// TestDelta_Server_ManualScripted checks Manual mode: the server records
// delta requests and never answers; SendDeltaResponse scripts responses,
// giving them fresh nonces, on the newest delta stream only.
func TestDelta_Server_ManualScripted(t *testing.T) {
	forEachPath(t, testutil.ServerOptions{Manual: true}, func(t *testing.T, ms *testutil.ManagementServer) {
		ctx := testContext(t)
		ms.Update("", clusters("v1", "a"))
		sotw := newRawStream(t, ms, true)
		sotw.request(cdsURL, "", "", "a")
		s := newRawDeltaStream(t, ms)
		s.subscribe(cdsURL, []string{"a"}, nil)
		if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Delta != nil }); err != nil {
			t.Fatal(err)
		}
		s.wantNone()
		nonce, err := ms.SendDeltaResponse(ctx, &v3discoverypb.DeltaDiscoveryResponse{TypeUrl: cdsURL, RemovedResources: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.recv(ctx); got.GetNonce() != nonce || nonce == "" || !slices.Equal(got.GetRemovedResources(), []string{"a"}) {
			t.Fatalf("scripted response = %v, want removed [a] with nonce %q", got, nonce)
		}
		sotw.wantNone(defaultTestShortTimeout)
	})
}
