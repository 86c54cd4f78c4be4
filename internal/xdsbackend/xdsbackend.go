// SPDX-License-Identifier: Apache-2.0

// Package xdsbackend runs an xDS-enabled gRPC server (package server) on
// loopback for xdsctl demo and for tests: the server-side counterpart of
// testutil.StartBackend, serving the same services (package
// internal/testservice) with the Listener the management server has for
// its address (build it with xdsbuild.ServerListener or
// xdsbuild.IstioInboundListener). Tests reach it as
// testutil/xdsbackend. Production code never imports it.
package xdsbackend

import (
	"context"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/testservice"
	"github.com/proxyless/xds/server"
)

// Options configures Start.
type Options struct {
	// Address is where the backend listens, "IP:PORT". Default
	// "127.0.0.1:0" (a free port).
	Address string
	// ID names the backend in its responses (SimpleResponse.server_id).
	// Default: its address.
	ID string
	// ServerOptions configure the server, for example
	// server.WithServerOptions(grpc.Creds(creds)).
	ServerOptions []server.Option
	// OnModeChange, when set, is told each serving mode change too.
	OnModeChange func(mode server.ServingMode, err error)
	// Register, when set, registers further services on the server,
	// after Health and TestService and before it serves (xdsctl demo's
	// helloworld.Greeter).
	Register func(s grpc.ServiceRegistrar)
}

// Backend is an xDS-enabled gRPC server on loopback: it serves what
// testutil.Backend serves (grpc.health.v1.Health, SERVING;
// grpc.testing.TestService, whose UnaryCall answers with its ID
// (server_id), its address (hostname) and the SPIFFE ID of the client's
// certificate (username; "" without one)) with the Listener the
// management server has for its address, named Name(template). Stop it
// with Stop.
type Backend struct {
	// Address is the address it listens on ("127.0.0.1:PORT"); Port is
	// its port; ID is Options.ID, or Address.
	Address string
	Port    uint32
	ID      string
	// Server is the xDS-enabled server.
	Server *server.GRPCServer

	done chan struct{}
	mu   sync.Mutex
	mode server.ServingMode // guarded by mu
	err  error              // guarded by mu
	wake chan struct{}      // guarded by mu; closed and replaced at each change
}

// Start starts a Backend that takes its Listener from c, whose bootstrap
// must have a server_listener_resource_name_template (see
// xdsbuild.WithServerListenerTemplate). It returns an error when it
// cannot listen on o.Address or the server cannot be made.
func Start(c *client.Client, o Options) (*Backend, error) {
	addr := o.Address
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("xdsbackend: %w", err)
	}
	b := &Backend{Address: lis.Addr().String(), ID: o.ID, done: make(chan struct{}), mode: server.ServingModeNotServing, wake: make(chan struct{})}
	if tcp, ok := lis.Addr().(*net.TCPAddr); ok {
		b.Port = uint32(tcp.Port)
	}
	if b.ID == "" {
		b.ID = b.Address
	}
	opts := append(append([]server.Option(nil), o.ServerOptions...), server.WithServingModeCallback(func(_ net.Addr, mode server.ServingMode, err error) {
		b.mu.Lock()
		b.mode, b.err = mode, err
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
		if o.OnModeChange != nil {
			o.OnModeChange(mode, err)
		}
	}))
	srv, err := server.NewGRPCServer(c, opts...)
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("xdsbackend: %w", err)
	}
	b.Server = srv
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	testgrpc.RegisterTestServiceServer(srv, testservice.New(b.ID, b.Address))
	if o.Register != nil {
		o.Register(srv)
	}
	go func() {
		defer close(b.done)
		_ = srv.Serve(lis) // returns when Stop is called
	}()
	return b, nil
}

// Name returns the name of the backend's Listener resource for the
// bootstrap template tmpl: tmpl with "%s" replaced by its address.
func (b *Backend) Name(tmpl string) string {
	return bootstrap.ExpandTemplate(tmpl, b.Address)
}

// WaitForMode waits until the backend's serving mode is mode; it returns
// an error naming the current mode when ctx is done first.
func (b *Backend) WaitForMode(ctx context.Context, mode server.ServingMode) error {
	for {
		b.mu.Lock()
		cur, err, wake := b.mode, b.err, b.wake
		b.mu.Unlock()
		if cur == mode {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("xdsbackend %s: waiting for mode %s (now %s, %v): %w", b.Address, mode, cur, err, ctx.Err())
		}
	}
}

// Mode returns the backend's serving mode and the reason that came with
// it (why it is not serving).
func (b *Backend) Mode() (server.ServingMode, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mode, b.err
}

// Stop stops the server and waits for its serving goroutine. It must be
// called once.
func (b *Backend) Stop() {
	b.Server.Stop()
	<-b.done
}
