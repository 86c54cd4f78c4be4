// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"
)

// idServer answers with its ID: in UnaryCall's response, in EmptyCall's
// header server-id.
type idServer struct {
	testgrpc.UnimplementedTestServiceServer
	id   string
	port uint32
}

func (s *idServer) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{ServerId: s.id}, nil
}

func (s *idServer) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("server-id", s.id))
	return &testgrpc.Empty{}, nil
}

func startIDServer(t *testing.T, id string) *idServer {
	t.Helper()
	s := &idServer{id: id}
	s.port = serveTestService(t, s)
	return s
}

// serveTestService serves svc on a new port of 127.0.0.1, which it
// returns, until the test ends.
func serveTestService(t *testing.T, svc testgrpc.TestServiceServer) uint32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return uint32(lis.Addr().(*net.TCPAddr).Port)
}

// splitOf makes n RPCs of class ("canary", "method" or "default") and
// returns the share (%) each server answered.
func splitOf(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient, class string, n int) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var id string
		var err error
		switch class {
		case "method":
			var hdr metadata.MD
			if _, err = tc.EmptyCall(rctx, &testgrpc.Empty{}, grpc.Header(&hdr)); err == nil && len(hdr.Get("server-id")) == 1 {
				id = hdr.Get("server-id")[0]
			}
		case "canary":
			rctx = metadata.AppendToOutgoingContext(rctx, "x-canary", "true")
			fallthrough
		default:
			var resp *testgrpc.SimpleResponse
			if resp, err = tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}); err == nil {
				id = resp.GetServerId()
			}
		}
		cancel()
		if err != nil {
			t.Fatalf("%s RPC %d: %v", class, i, err)
		}
		got[id] += 100 / float64(n)
	}
	return got
}

// TestDataPath_SideBySide_GRPCGo runs the canary scenario (testutil.Canary)
// served by go-control-plane through two channels: one with this
// library's xdsresolver.DialOptions, one with grpc-go's own xDS resolver
// (google.golang.org/grpc/xds), and checks that both give the same split:
// canary RPCs 100 % on B, EmptyCall 100 % on C (2000 RPCs each), the
// others A 80 ± 3 % and B 20 ± 3 % (4000 RPCs, so that 3 points are over
// 4σ).
func TestDataPath_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b, c := startIDServer(t, "A"), startIDServer(t, "B"), startIDServer(t, "C")
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port}))

	ours, err := grpc.NewClient("xds:///svc", append(xdsresolver.DialOptions(s.newClient(t)), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	bootstrapJSON := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)
	grpcGoResolver, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(bootstrapJSON))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(grpcGoResolver), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()

	const n = 2000
	for _, ch := range []struct {
		name string
		cc   *grpc.ClientConn
	}{{"proxyless/xds", ours}, {"grpc-go xds", theirs}} {
		tc := testgrpc.NewTestServiceClient(ch.cc)
		// Wait until every cluster serves (both of the split too).
		for _, w := range []struct{ class, id string }{{"canary", "B"}, {"method", "C"}, {"default", "A"}, {"default", "B"}} {
			for splitOf(ctx, t, tc, w.class, 1)[w.id] == 0 {
				if ctx.Err() != nil {
					t.Fatalf("%s: no %s RPC reached %s", ch.name, w.class, w.id)
				}
			}
		}
		canary, method, def := splitOf(ctx, t, tc, "canary", n), splitOf(ctx, t, tc, "method", n), splitOf(ctx, t, tc, "default", 2*n)
		t.Logf("%s: canary %v, method %v, default %v", ch.name, canary, method, def)
		if canary["B"] < 99.99 {
			t.Errorf("%s: canary RPCs %v; want 100%% on B", ch.name, canary)
		}
		if method["C"] < 99.99 {
			t.Errorf("%s: EmptyCall RPCs %v; want 100%% on C", ch.name, method)
		}
		if d := def["A"] - 80; d > 3 || d < -3 || def["A"]+def["B"] < 99.99 {
			t.Errorf("%s: default RPCs %v; want A 80 ± 3%%, B 20 ± 3%%", ch.name, def)
		}
	}
}
