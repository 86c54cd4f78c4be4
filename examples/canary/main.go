// SPDX-License-Identifier: Apache-2.0

// Command canary shows a canary rollout driven by xDS through the
// resolver of package xdsresolver, all in one process:
//
//   - three gRPC servers, A (stable), B (canary) and C (a service of its
//     own), on 127.0.0.1, serving the interop TestService;
//   - an in-process xDS management server (package mgmtserver) with three
//     routes (xdsbuild.Canary): RPCs with the header x-canary: true go
//     to B; EmptyCall goes to C; the other RPCs are split between A and
//     B by weight;
//   - an xDS client, and a grpc.ClientConn for xds:///shop with
//     xdsresolver.DialOptions.
//
// It makes batches of RPCs and prints, live, where they went, while the
// management server moves the split from A 80 / B 20 to A 50 / B 50 and
// then to B 100 (the canary promoted). It exits 0 when every batch
// matched its configuration (shares within 6 points), 1 otherwise or after
// 30 s.
//
//	go run ./examples/canary
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/xdsresolver"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

// run runs the example, printing what happens to out.
func run(out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	servers := map[string]*server{}
	for _, id := range []string{"A", "B", "C"} {
		s, err := startServer(id)
		if err != nil {
			return err
		}
		defer s.stop()
		servers[id] = s
	}
	ms, err := mgmtserver.Start(mgmtserver.Options{})
	if err != nil {
		return err
	}
	defer ms.Stop()
	opts := xdsbuild.CanaryOptions{Listener: "shop", PortA: servers["A"].port, PortB: servers["B"].port, PortC: servers["C"].port, WeightA: 80, WeightB: 20}
	if err := ms.Update("", xdsbuild.Canary(opts)); err != nil {
		return err
	}
	fmt.Fprintf(out, "management server on %s: x-canary: true → B; EmptyCall → C; others → A %d / B %d\n", ms.Address(), opts.WeightA, opts.WeightB)

	cfg, err := bootstrap.Parse(ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: "canary-example"}))
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close() // after cc.Close
	cc, err := grpc.NewClient("xds:///shop", xdsresolver.DialOptions(c)...)
	if err != nil {
		return err
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)

	call := func(ctx context.Context, empty bool) (string, error) {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		if empty {
			var hdr metadata.MD
			if _, err := tc.EmptyCall(rctx, &testgrpc.Empty{}, grpc.Header(&hdr)); err != nil {
				return "", err
			}
			if ids := hdr.Get("server-id"); len(ids) == 1 {
				return ids[0], nil
			}
			return "", fmt.Errorf("no server-id header")
		}
		resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{FillServerId: true})
		if err != nil {
			return "", err
		}
		return resp.GetServerId(), nil
	}
	// batch makes n RPCs and returns the share (%) each server answered.
	batch := func(ctx context.Context, n int, empty bool) (map[string]float64, error) {
		got := map[string]float64{}
		for range n {
			id, err := call(ctx, empty)
			if err != nil {
				return nil, err
			}
			got[id] += 100 / float64(n)
		}
		return got, nil
	}
	// show runs batches until one matches want (within 6 points), at
	// most 10, printing each.
	show := func(what string, ctx context.Context, empty bool, want map[string]float64) error {
		for i := 1; ; i++ {
			got, err := batch(ctx, 500, empty)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			fmt.Fprintf(out, "%-28s batch %d: A %5.1f%%  B %5.1f%%  C %5.1f%%\n", what, i, got["A"], got["B"], got["C"])
			ok := true
			for _, id := range []string{"A", "B", "C"} {
				if d := got[id] - want[id]; d > 6 || d < -6 {
					ok = false
				}
			}
			if ok {
				return nil
			}
			if i == 10 {
				return fmt.Errorf("%s: the split did not reach %v", what, want)
			}
		}
	}

	canary := metadata.AppendToOutgoingContext(ctx, "x-canary", "true")
	steps := []struct {
		wa, wb uint32
	}{{80, 20}, {50, 50}, {0, 100}}
	for i, s := range steps {
		if i > 0 {
			opts.WeightA, opts.WeightB = s.wa, s.wb
			if err := ms.Update("", xdsbuild.Canary(opts)); err != nil {
				return err
			}
			fmt.Fprintf(out, "update: others → A %d / B %d\n", s.wa, s.wb)
		}
		if err := show(fmt.Sprintf("others (A %d / B %d)", s.wa, s.wb), ctx, false, map[string]float64{"A": float64(s.wa), "B": float64(s.wb)}); err != nil {
			return err
		}
	}
	if err := show("x-canary: true (B)", canary, false, map[string]float64{"B": 100}); err != nil {
		return err
	}
	if err := show("EmptyCall (C)", ctx, true, map[string]float64{"C": 100}); err != nil {
		return err
	}
	fmt.Fprintln(out, "OK: every class of RPCs followed its route and weights")
	return nil
}

// server is a gRPC server on 127.0.0.1 that answers with its ID: in the
// response of UnaryCall, in the header server-id of EmptyCall.
type server struct {
	testgrpc.UnimplementedTestServiceServer
	id   string
	port uint32
	srv  *grpc.Server
	done chan struct{}
}

func startServer(id string) (*server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", id, err)
	}
	s := &server{id: id, port: uint32(lis.Addr().(*net.TCPAddr).Port), srv: grpc.NewServer(), done: make(chan struct{})}
	testgrpc.RegisterTestServiceServer(s.srv, s)
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(lis) // returns when stop is called
	}()
	return s, nil
}

func (s *server) stop() {
	s.srv.Stop()
	<-s.done
}

func (s *server) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{ServerId: s.id}, nil
}

func (s *server) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("server-id", s.id))
	return &testgrpc.Empty{}, nil
}
