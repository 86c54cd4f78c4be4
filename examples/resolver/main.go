// SPDX-License-Identifier: Apache-2.0

// Command resolver shows gRPC RPCs routed by xDS through the xds:///
// resolver of package xdsresolver, all in one process:
//
//   - two gRPC servers, A and B, on 127.0.0.1, serving the interop
//     TestService;
//   - an in-process xDS management server (package mgmtserver) whose
//     configuration sends the Listener "greeter" to server A;
//   - an xDS client, and a grpc.ClientConn for xds:///greeter using the
//     resolver.
//
// It makes RPCs, which server A answers; then it moves the endpoint of
// the cluster to server B with an EDS update, and makes RPCs until B
// answers them. It exits 0 on success, 1 on failure or after 20 s.
//
//	go run ./examples/resolver
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Two backends.
	a, err := startServer("A")
	if err != nil {
		return err
	}
	defer a.stop()
	b, err := startServer("B")
	if err != nil {
		return err
	}
	defer b.stop()
	fmt.Fprintf(out, "server A on %s, server B on %s\n", a.addr, b.addr)

	// The management server: Listener greeter → RouteConfiguration
	// route-greeter → Cluster cluster-greeter → ClusterLoadAssignment
	// eds-greeter = [A].
	ms, err := mgmtserver.Start(mgmtserver.Options{})
	if err != nil {
		return err
	}
	defer ms.Stop()
	if err := ms.Update("", xdsbuild.Chain(xdsbuild.ChainOptions{Listener: "greeter", Ports: []uint32{a.port}})); err != nil {
		return err
	}
	fmt.Fprintf(out, "management server on %s: xds:///greeter → cluster-greeter → [A]\n", ms.Address())

	// The three lines an application needs: a bootstrap (in production
	// bootstrap.FromEnv), a client, and the resolver given to the channel.
	cfg, err := bootstrap.Parse(ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: "example"}))
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close() // after cc.Close
	cc, err := grpc.NewClient("xds:///greeter",
		grpc.WithResolvers(xdsresolver.NewBuilder(c)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)

	rpc := 0
	call := func() (string, error) {
		rpc++
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{FillServerId: true})
		if err != nil {
			return "", fmt.Errorf("RPC %d: %w", rpc, err)
		}
		return resp.GetServerId(), nil
	}
	expect := func(want string, n int) error {
		for range n {
			got, err := call()
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "RPC %d: answered by %s\n", rpc, got)
			if got != want {
				return fmt.Errorf("RPC %d answered by %s, want %s", rpc, got, want)
			}
		}
		return nil
	}

	if err := expect("A", 3); err != nil {
		return err
	}

	// The EDS update: the same chain, with B as the only endpoint.
	if err := ms.Update("", xdsbuild.Chain(xdsbuild.ChainOptions{Listener: "greeter", Ports: []uint32{b.port}})); err != nil {
		return err
	}
	fmt.Fprintln(out, "EDS update: eds-greeter = [B]")
	for {
		got, err := call()
		if err != nil {
			return err
		}
		if got == "B" {
			fmt.Fprintf(out, "RPC %d: answered by B\n", rpc)
			break
		}
		fmt.Fprintf(out, "RPC %d: answered by %s (the update is on its way)\n", rpc, got)
		if ctx.Err() != nil {
			return errors.New("the RPCs did not move to B in time")
		}
	}
	if err := expect("B", 3); err != nil {
		return err
	}
	fmt.Fprintln(out, "OK: the RPCs followed the endpoint from A to B")
	return nil
}

// server is a gRPC server on 127.0.0.1 whose UnaryCall answers with its
// ID.
type server struct {
	testgrpc.UnimplementedTestServiceServer
	id   string
	addr string
	port uint32
	srv  *grpc.Server
	done chan struct{}
}

func startServer(id string) (*server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", id, err)
	}
	s := &server{id: id, addr: lis.Addr().String(), port: uint32(lis.Addr().(*net.TCPAddr).Port), srv: grpc.NewServer(), done: make(chan struct{})}
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
	return &testgrpc.SimpleResponse{ServerId: s.id, Hostname: s.addr}, nil
}
