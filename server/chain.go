// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/serving"
	"github.com/proxyless/xds/resources"
)

// chain serves the connections of one filter chain of a Listener: a
// grpc.Server of its own, run by a serving.Runner on the connections the
// accept loop matched to it, whose interceptors check each RPC against
// the chain's current routeTable. A chain lives while its filter chain is
// in the Listener in use, across updates that keep the filter chain
// unchanged (FilterChain.SameConfig); then it is retired: its grpc.Server
// is gracefully stopped, which sends each connection a GOAWAY and waits
// for its RPCs, and stopped after the drain grace time. A grpc.Server per
// chain is how connections are drained on gRPC's public API:
// GracefulStop is the only public way to send a GOAWAY.
type chain struct {
	*serving.Runner // delivers connections, retires the chain

	// Initialized at creation time and read-only afterwards.
	s     *GRPCServer
	hi    *handshake.ServerHandshakeInfo // nil without TLS or when hiErr is set
	hiErr error                          // why the chain's certificate providers could not be acquired

	routes atomic.Pointer[routeTable] // swapped when the RouteConfiguration changes
}

var _ serving.Chain = (*chain)(nil)

// newChain starts the chain of fc, whose RPCs are checked against rt. It
// acquires the chain's certificate providers; when that fails, the
// chain's TLS handshakes fail.
func (s *GRPCServer) newChain(fc *resources.FilterChain, label string, addr net.Addr, rt *routeTable) *chain {
	ch := &chain{s: s}
	ch.routes.Store(rt)
	ch.hi, ch.hiErr = serving.ChainTLS(fc, label, s.providers.Provider, s.logger)
	opts := append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(ch.unaryInterceptor),
		grpc.ChainStreamInterceptor(ch.streamInterceptor),
	}, s.opts.serverOpts...)
	srv := grpc.NewServer(opts...)
	s.registerOn(srv)
	ch.Runner = serving.Run(srv, serving.RunnerOptions{
		Addr: addr, Label: label, Logger: s.logger, WG: &s.group.WG, HardStop: s.group.HardStop,
		Release: ch.release,
	})
	return ch
}

// release releases the chain's certificate providers.
func (ch *chain) release() {
	if ch.hi != nil {
		ch.hi.Close()
	}
}

// Deliver hands c to the chain's grpc.Server, with the chain's TLS
// configuration for the server credentials.
func (ch *chain) Deliver(c net.Conn) bool {
	return ch.Runner.Deliver(handshake.NewServerConn(c, ch.hi, ch.hiErr))
}

// SetRoutes gives the chain's next RPCs the table rt.
func (ch *chain) SetRoutes(rt *serverroutes.Table) {
	ch.routes.Store(&routeTable{rt, ch.s.nodeID})
}

// check checks one RPC of the chain.
func (ch *chain) check(ctx context.Context, method string) error {
	return ch.routes.Load().check(ctx, method)
}

func (ch *chain) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := ch.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (ch *chain) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := ch.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
