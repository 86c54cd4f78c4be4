// SPDX-License-Identifier: Apache-2.0

package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
)

// Tests of Listener updates (gRFC A36, R-26.8): which connections an
// update drains, and how.

// callConn makes one UnaryCall (held when held is set) and returns the
// client-side address of the connection it used, which tells connections
// apart.
func callConn(ctx context.Context, tc testgrpc.TestServiceClient, held bool) (net.Addr, error) {
	req := &testgrpc.SimpleRequest{}
	if held {
		req.ResponseSize = holdSize
	}
	var p peer.Peer
	_, err := tc.UnaryCall(ctx, req, grpc.Peer(&p), grpc.WaitForReady(true))
	return p.LocalAddr, err
}

// allowAll is a chain whose RBAC filter allows every RPC: the same
// behaviour as a chain without it, but another filter chain.
func allowAll() *v3listenerpb.FilterChain {
	return testutil.ServerFilterChain(testutil.FilterChainOptions{HTTPFilters: []*v3httppb.HttpFilter{
		testutil.RBACFilter("rbac", testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"anyone": nil})),
	}})
}

// TestServer_UpdateDrainsOldConnections checks that a Listener update
// that changes the filter chain drains its connections without failing
// the RPC in flight (gRFC A36):
//  1. an RPC is held on the server;
//  2. the Listener is updated: the channel leaves READY (its connection
//     got a GOAWAY; pick_first goes IDLE), and its next RPC is served on a
//     new connection;
//  3. the held RPC, released, succeeds on the old connection.
func TestServer_UpdateDrainsOldConnections(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	tc, cc := dialConn(t, ts.addr, insecure.NewCredentials())
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	held, release := startHeld(ctx, t, ts, tc)
	defer release()

	if cc.GetState() != connectivity.Ready {
		t.Fatalf("channel state %s with an RPC in flight, want READY", cc.GetState())
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts, allowAll())}})
	if !cc.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("the channel stayed READY: its connection got no GOAWAY")
	}
	ts.noModeChange(t)
	// The next RPC waits for the channel to leave READY: an RPC sent
	// while the GOAWAYs are in flight was seen to hang, grpc-go's server
	// dropping a stream that arrives after its second GOAWAY.
	next, err := callConn(ctx, tc, false)
	if err != nil {
		t.Fatalf("RPC after the update: %v", err)
	}
	release()
	r := <-held
	if r.err != nil {
		t.Fatalf("the RPC in flight during the update failed: %v", r.err)
	}
	if r.addr.String() == next.String() {
		t.Errorf("the RPC after the update used the drained connection %s", r.addr)
	}
}

// heldResult is the outcome of a held RPC: its error, and the client-side
// address of its connection.
type heldResult struct {
	addr net.Addr
	err  error
}

// startHeld starts an RPC that the server holds, and returns once it
// arrived: the result comes on the channel after release is called (or
// the RPC is cut).
func startHeld(ctx context.Context, t *testing.T, ts *testServer, tc testgrpc.TestServiceClient) (<-chan heldResult, func()) {
	t.Helper()
	arrived, release := ts.svc.hold()
	held := make(chan heldResult, 1)
	go func() {
		addr, err := callConn(ctx, tc, true)
		held <- heldResult{addr, err}
	}()
	select {
	case <-arrived:
	case <-ctx.Done():
		release()
		t.Fatal("the held RPC did not arrive")
	}
	return held, release
}

func mustCallConn(t *testing.T, tc testgrpc.TestServiceClient) net.Addr {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	addr, err := callConn(ctx, tc, false)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestServer_UnchangedChainKeepsConnections checks that an update keeping
// a filter chain unchanged keeps its connections (as Envoy), and matches
// new connections by source address:
//  1. a channel from 127.0.0.1 is served by chain A;
//  2. the update adds chain B for sources 127.0.0.2/32, denying every RPC;
//  3. a channel from 127.0.0.2 gets PERMISSION_DENIED: the update is
//     applied, and B matched it, more specific than A;
//  4. the first channel is still READY and uses the same connection.
func TestServer_UnchangedChainKeepsConnections(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	tc, cc := dialConn(t, ts.addr, insecure.NewCredentials())
	before := mustCallConn(t, tc)

	denyAll := testutil.ServerFilterChain(testutil.FilterChainOptions{
		Name:        "from-127.0.0.2",
		Match:       &v3listenerpb.FilterChainMatch{SourcePrefixRanges: []*v3corepb.CidrRange{{AddressPrefix: "127.0.0.2", PrefixLen: wrapperspb.UInt32(32)}}},
		HTTPFilters: []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", testutil.RBACRules(v3rbacconfigpb.RBAC_DENY, map[string][]string{"everyone": nil}))},
	})
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts, testutil.ServerFilterChain(testutil.FilterChainOptions{}), denyAll)}})

	// A channel per attempt: a connection from 127.0.0.2 made before the
	// update took effect matched chain A, which the update keeps.
	from2 := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		return d.DialContext(ctx, "tcp", addr)
	})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for {
		cc2, err := grpc.NewClient("passthrough:///"+ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), from2)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		_, err = testgrpc.NewTestServiceClient(cc2).UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
		rcancel()
		cc2.Close()
		if status.Code(err) == codes.PermissionDenied {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no RPC from 127.0.0.2 was denied; the last: %v", err)
		}
	}

	if s := cc.GetState(); s != connectivity.Ready {
		t.Fatalf("the first channel is %s, want READY: its connection was drained", s)
	}
	if after := mustCallConn(t, tc); after.String() != before.String() {
		t.Fatalf("the RPC used connection %s, want the kept %s", after, before)
	}
}

// TestServer_DrainGraceTime checks that the connections of a replaced
// chain are closed when the drain grace time passes, failing the RPCs
// still in flight.
func TestServer_DrainGraceTime(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t, server.WithDrainGraceTime(50*time.Millisecond))
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	tc := dial(t, ts.addr, insecure.NewCredentials())
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	held, release := startHeld(ctx, t, ts, tc)
	defer release()
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts, allowAll())}})
	select {
	case r := <-held:
		if r.err == nil {
			t.Fatal("the held RPC succeeded, want it cut when the grace time passed")
		}
	case <-ctx.Done():
		t.Fatal("the held RPC was not cut after the drain grace time")
	}
}

// TestServer_GracefulStop checks that GracefulStop lets the RPC in flight
// finish and that Serve then returns nil.
func TestServer_GracefulStop(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	tc := dial(t, ts.addr, insecure.NewCredentials())
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	held, release := startHeld(ctx, t, ts, tc)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ts.srv.GracefulStop()
	}()
	select {
	case <-stopped:
		t.Fatal("GracefulStop returned with an RPC in flight")
	case <-time.After(defaultTestShortTimeout):
	}
	release()
	if r := <-held; r.err != nil {
		t.Fatalf("the RPC in flight during GracefulStop failed: %v", r.err)
	}
	<-stopped
	if err := <-ts.done; err != nil {
		t.Errorf("Serve() = %v after GracefulStop, want nil", err)
	}
	ts.done <- nil // for the cleanup's check
}
