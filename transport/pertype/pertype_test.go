// SPDX-License-Identifier: Apache-2.0

package pertype_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/pertype"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	ldsMethod = "/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners"
	rdsMethod = "/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes"
	cdsMethod = "/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters"
	edsMethod = "/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints"

	deltaEDSMethod = "/envoy.service.endpoint.v3.EndpointDiscoveryService/DeltaEndpoints"

	edsType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a client of ms over per-type streams, recording the
// streams it opens.
func newClient(t *testing.T, ms *testutil.ManagementServer, opts ...client.Option) (*client.Client, *clienttest.Dialer) {
	t.Helper()
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := &clienttest.Dialer{Inner: ms.Dialer()}
	c, err := client.New(cfg, append([]client.Option{client.WithTransportBuilder(pertype.NewBuilder(rec))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, rec
}

// TestSotW checks variant 1: the chain arrives over one stream per type,
// on each type's own service, with no ADS stream; every stream's first
// request carries the node; an update reaches the watcher.
func TestSotW(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("test-node", testutil.Chain(testutil.ChainOptions{}))
	c, rec := newClient(t, ms)
	w := clienttest.WatchChain(t, c, "svc")
	w.WantChain(ctx, t)

	got := rec.Methods()
	slices.Sort(got)
	want := []string{cdsMethod, edsMethod, ldsMethod, rdsMethod}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("streams opened (-want +got):\n%s", diff)
	}
	firstOfStream := map[int64]bool{}
	for _, r := range ms.Requests() {
		if firstOfStream[r.StreamID] {
			continue
		}
		firstOfStream[r.StreamID] = true
		if r.Req.GetNode().GetId() != "test-node" {
			t.Errorf("first request of stream %d (%s) has node %v, want test-node", r.StreamID, r.Req.GetTypeUrl(), r.Req.GetNode())
		}
	}
	if len(firstOfStream) != 4 {
		t.Errorf("server saw %d streams, want 4", len(firstOfStream))
	}

	ms.Update("test-node", testutil.Chain(testutil.ChainOptions{Ports: []uint32{9090}}))
	w.WantEndpoint(ctx, t, "127.0.0.1:9090")
}

// TestDelta checks variant 2 (client.WithDelta): delta per-type streams.
func TestDelta(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("test-node", testutil.Chain(testutil.ChainOptions{}))
	c, rec := newClient(t, ms, client.WithDelta())
	w := clienttest.WatchChain(t, c, "svc")
	w.WantChain(ctx, t)
	for _, m := range rec.Methods() {
		if m == transport.ADSMethod || m == transport.DeltaADSMethod || !slices.Contains([]string{
			"/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners",
			"/envoy.service.route.v3.RouteDiscoveryService/DeltaRoutes",
			"/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters",
			deltaEDSMethod,
		}, m) {
			t.Errorf("opened stream %q, want delta per-type methods only", m)
		}
	}
	ms.Update("test-node", testutil.Chain(testutil.ChainOptions{Ports: []uint32{9090}}))
	w.E.Want(ctx, t, clienttest.Changed, nil)
}

// TestSotW_OneTypeReopened checks that when the stream of one type fails
// after responses, only that type's stream is reopened, its first request
// replays the subscription (node, last ACKed version, full name list, no
// nonce), and the other types' streams go on.
func TestSotW_OneTypeReopened(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("test-node", chain("v1"))
	c, rec := newClient(t, ms)
	w := clienttest.WatchChain(t, c, "svc")
	w.WantChain(ctx, t)
	// Wait for the ACK of the EDS response, so that v1 is the ACKed version.
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Req.GetTypeUrl() == edsType && r.Req.GetResponseNonce() != ""
	}); err != nil {
		t.Fatal(err)
	}
	before := len(rec.Methods())

	rec.Break(edsMethod)
	r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Req.GetTypeUrl() == edsType && r.StreamID > 4
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &v3discoverypb.DiscoveryRequest{
		Node:          r.Req.GetNode(),
		TypeUrl:       edsType,
		VersionInfo:   "v1",
		ResourceNames: []string{"eds-svc"},
	}
	if r.Req.GetNode().GetId() != "test-node" {
		t.Errorf("replay node = %v, want test-node", r.Req.GetNode())
	}
	if diff := cmp.Diff(want, r.Req, protocmp.Transform()); diff != "" {
		t.Errorf("replayed request (-want +got):\n%s", diff)
	}
	if got := rec.Methods()[before:]; !slices.Equal(got, []string{edsMethod}) {
		t.Errorf("streams opened after the break = %v, want only %s", got, edsMethod)
	}

	// The reopened stream serves updates; the others still do too.
	ms.Update("test-node", chain("v2", 9090))
	w.E.Want(ctx, t, clienttest.Changed, nil)
	w.C.WantNone(t, 0) // cluster unchanged: no call
}

// TestDelta_OneTypeReopened checks the delta replay: the subscribed names
// and the versions received.
func TestDelta_OneTypeReopened(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("test-node", chain("v1"))
	c, rec := newClient(t, ms, client.WithDelta())
	w := clienttest.WatchChain(t, c, "svc")
	w.WantChain(ctx, t)
	if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Delta.GetTypeUrl() == edsType && r.Delta.GetResponseNonce() != ""
	}); err != nil {
		t.Fatal(err)
	}
	version := c.ResourceVersion(resources.EndpointsType, "eds-svc")
	if version == "" {
		t.Fatal("no cached version of eds-svc")
	}

	rec.Break(deltaEDSMethod)
	r, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
		return r.Delta.GetTypeUrl() == edsType && r.StreamID > 4
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &v3discoverypb.DeltaDiscoveryRequest{
		Node:                    r.Delta.GetNode(),
		TypeUrl:                 edsType,
		ResourceNamesSubscribe:  []string{"eds-svc"},
		InitialResourceVersions: map[string]string{"eds-svc": version},
	}
	if r.Delta.GetNode().GetId() != "test-node" {
		t.Errorf("replay node = %v, want test-node", r.Delta.GetNode())
	}
	if diff := cmp.Diff(want, r.Delta, protocmp.Transform()); diff != "" {
		t.Errorf("replayed request (-want +got):\n%s", diff)
	}
	ms.Update("test-node", chain("v2", 9090))
	w.E.Want(ctx, t, clienttest.Changed, nil)
}

// TestFailureBeforeAnyResponse checks that a per-type stream that fails
// before any response is reported to its watchers as a connection error
//
func TestFailureBeforeAnyResponse(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.RejectStreams(errors.New("go away"))
	c, _ := newClient(t, ms)
	w := clienttest.WatchChain(t, c, "svc")
	e := w.L.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
	t.Logf("watcher error: %v", e.Err)
}

// TestUnknownType checks that a type without a per-type service fails
// with an error naming the type URL.
func TestUnknownType(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	b := pertype.NewBuilder(ms.Dialer(), pertype.WithService("type.googleapis.com/envoy.config.listener.v3.Listener", pertype.Service{}))
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
	if !errors.Is(e.Err, client.ErrConnection) || !strings.Contains(e.Err.Error(), "envoy.config.listener.v3.Listener") {
		t.Fatalf("error = %v, want one naming the Listener type URL", e.Err)
	}
}

// chain is testutil.Chain of "svc" at version, with endpoints on ports.
func chain(version string, ports ...uint32) testutil.Resources {
	r := testutil.Chain(testutil.ChainOptions{Ports: ports})
	r.Version = version
	return r
}

// TestIndependentBackoff checks, in fake time, that a type's stream that
// fails after accepting responses is reopened alone at once, and when it
// then keeps failing before any response, is retried with its own backoff
// 1 s, then 1.6 s, ± 20 %), each failure reported to its type's
// watchers only, while the other types' streams go on; and that it
// recovers.
func TestIndependentBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("test-node", chain("v1"))
		c, rec := newClient(t, ms)
		w := clienttest.WatchChain(t, c, "svc")
		w.WantChain(ctx, t)
		time.Sleep(10 * time.Second) // the streams are healthy now

		ms.RejectStreams(errors.New("overloaded"))
		rec.Break(edsMethod)
		// Retries at 1 s and 2.6 s nominal, the next at 5.16 s: in 4 s,
		// whatever the jitter, exactly two.
		time.Sleep(4 * time.Second)
		synctest.Wait()
		opened := rec.Opened(edsMethod)
		if len(opened) != 4 {
			t.Fatalf("EDS streams opened at %v, want 4: the first, the reopening at once, and retries after ~1 s and ~1.6 s", opened)
		}
		for i, nominal := range []time.Duration{time.Second, 1600 * time.Millisecond} {
			gap := opened[i+2].Sub(opened[i+1])
			if lo, hi := nominal*8/10, nominal*12/10; gap < lo || gap > hi {
				t.Errorf("retry %d after %v, want within [%v, %v]", i+1, gap, lo, hi)
			}
		}
		for _, m := range []string{ldsMethod, rdsMethod, cdsMethod} {
			if n := len(rec.Opened(m)); n != 1 {
				t.Errorf("%s opened %d times, want 1", m, n)
			}
		}
		// Each failed attempt of the EDS stream is reported to the EDS
		// watcher alone, as an ambient error: it keeps its cached value
		// (R-11.3, per stream).
		for range 3 {
			w.E.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
		}
		w.E.WantNone(t, 0)
		w.C.WantNone(t, 0)

		ms.RejectStreams(nil)
		ms.Update("test-node", chain("v2", 9090))
		w.WantEndpoint(ctx, t, "127.0.0.1:9090")
	})
}
