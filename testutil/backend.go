// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"crypto/tls"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/internal/testservice"
)

// BackendOptions configures StartBackend.
type BackendOptions struct {
	// Address is where the backend listens, "HOST:PORT". Default
	// "127.0.0.1:0" (a free port).
	Address string
	// ID names the backend in its responses (SimpleResponse.server_id).
	// Default: its address.
	ID string
	// TLS, when set, makes the backend serve TLS with this config, for
	// example with ClientAuth tls.RequireAndVerifyClientCert and
	// ClientCAs for mutual TLS; nil serves plaintext. It must not be
	// modified afterwards.
	TLS *tls.Config
}

// Backend is a gRPC server on loopback for data-path tests and demos: it
// serves grpc.health.v1.Health (SERVING) and grpc.testing.TestService,
// whose UnaryCall answers with the backend's ID (server_id), its address
// (hostname) and the SPIFFE ID of the client certificate the connection
// was made with (username; "" without one). Its other methods are
// unimplemented. Stop it with Stop.
type Backend struct {
	// Address is the address it listens on ("127.0.0.1:PORT"); Port is
	// its port.
	Address string
	Port    uint32
	// ID is BackendOptions.ID, or Address.
	ID string

	srv  *grpc.Server
	done chan struct{}
}

// StartBackend starts a Backend. It returns an error when it cannot
// listen on o.Address.
func StartBackend(o BackendOptions) (*Backend, error) {
	addr := o.Address
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("testutil: backend: %w", err)
	}
	var opts []grpc.ServerOption
	if o.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	b := &Backend{Address: lis.Addr().String(), ID: o.ID, srv: grpc.NewServer(opts...), done: make(chan struct{})}
	if tcp, ok := lis.Addr().(*net.TCPAddr); ok {
		b.Port = uint32(tcp.Port)
	}
	if b.ID == "" {
		b.ID = b.Address
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(b.srv, hs)
	testgrpc.RegisterTestServiceServer(b.srv, testservice.New(b.ID, b.Address))
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(lis) // returns when Stop is called
	}()
	return b, nil
}

// Stop closes the backend's listener and connections, and waits for its
// serving goroutine. It must be called once.
func (b *Backend) Stop() {
	b.srv.Stop()
	<-b.done
}

// NewTestService returns the grpc.testing.TestService a Backend serves,
// for a server of your own: its UnaryCall answers with id (server_id),
// address (hostname) and the SPIFFE ID of the client's certificate
// (username; "" without one); its other methods are unimplemented.
func NewTestService(id, address string) testgrpc.TestServiceServer {
	return testservice.New(id, address)
}
