// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"
)

// greeter is a gRPC server that answers with its name.
type greeter struct {
	testgrpc.UnimplementedTestServiceServer
	name string
}

func (g greeter) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{ServerId: g.name}, nil
}

// Example dials xds:///svc through the resolver. The xDS configuration
// comes from the in-process management server of package testutil, which
// sends the Listener "svc" to a gRPC server on 127.0.0.1; in production
// the bootstrap comes from bootstrap.FromEnv and the management server is
// your control plane.
func Example() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, greeter{name: "backend-1"})
	go srv.Serve(lis)
	defer srv.Stop()

	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ms.Stop()
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{uint32(lis.Addr().(*net.TCPAddr).Port)}}))

	// The integration: a client, and its resolver given to the channel.
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // after cc.Close
	cc, err := grpc.NewClient("xds:///svc",
		grpc.WithResolvers(xdsresolver.NewBuilder(c)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answered by", resp.GetServerId())
	// Output: answered by backend-1
}

// ExampleDialOptions routes RPCs per request: with testutil.Canary, RPCs
// carrying x-canary: true go to the canary server, the others are split
// by weight (here all to the stable server). DialOptions also applies the
// routes' timeouts and fault injection.
func ExampleDialOptions() {
	start := func(name string) (uint32, func()) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		srv := grpc.NewServer()
		testgrpc.RegisterTestServiceServer(srv, greeter{name: name})
		go srv.Serve(lis)
		return uint32(lis.Addr().(*net.TCPAddr).Port), srv.Stop
	}
	stable, stop1 := start("stable")
	defer stop1()
	canary, stop2 := start("canary")
	defer stop2()

	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ms.Stop()
	ms.Update("", testutil.Canary(testutil.CanaryOptions{PortA: stable, PortB: canary, PortC: stable, WeightA: 100, WeightB: 0}))

	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // after cc.Close
	cc, err := grpc.NewClient("xds:///svc", append(xdsresolver.DialOptions(c), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc := testgrpc.NewTestServiceClient(cc)
	for _, canaryHeader := range []bool{false, true} {
		rctx := ctx
		if canaryHeader {
			rctx = metadata.AppendToOutgoingContext(ctx, "x-canary", "true")
		}
		resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("x-canary: %v → %s\n", canaryHeader, resp.GetServerId())
	}
	// Output:
	// x-canary: false → stable
	// x-canary: true → canary
}
