// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/serving"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// chain serves the connections of one filter chain of a Listener: a
// grpc.Server of its own, fed by a serving.ConnListener, whose interceptors check
// each RPC against the chain's current routeTable. A chain lives while
// its filter chain is in the Listener in use, across updates that keep
// the filter chain unchanged (FilterChain.SameConfig); then it is retired:
// its grpc.Server is gracefully stopped, which sends each connection a
// GOAWAY and waits for its RPCs, and stopped after the drain grace time.
// A grpc.Server per chain is how connections are drained on gRPC's public
// API: GracefulStop is the only public way to send a GOAWAY.
type chain struct {
	// Initialized at creation time and read-only afterwards.
	s      *GRPCServer
	fc     *resources.FilterChain
	label  string // names the chain in messages: `filter chain "name"`
	srv    *grpc.Server
	lis    *serving.ConnListener
	hi     *handshake.ServerHandshakeInfo // nil without TLS or when hiErr is set
	hiErr  error                          // why the chain's certificate providers could not be acquired
	served chan struct{}                  // closed when srv.Serve has returned

	routes atomic.Pointer[routeTable] // swapped when the RouteConfiguration changes

	retireOnce sync.Once
}

// newChain starts the chain of fc, whose RPCs are checked against rt. It
// acquires the chain's certificate providers; when that fails, the
// chain's TLS handshakes fail.
func (s *GRPCServer) newChain(fc *resources.FilterChain, label string, addr net.Addr, rt *routeTable) *chain {
	ch := &chain{s: s, fc: fc, label: label, lis: serving.NewConnListener(addr), served: make(chan struct{})}
	ch.routes.Store(rt)
	if fc.Security != nil {
		ch.hi, ch.hiErr = handshake.NewServerHandshakeInfo(strconv.Quote(fc.Name), fc.Security, s.providers.Provider)
		if ch.hiErr != nil {
			s.logger.Warn("the TLS handshakes of a filter chain will fail", xdslog.KeyFilterChain, label, xdslog.KeyError, ch.hiErr)
		}
	}
	opts := append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(ch.unaryInterceptor),
		grpc.ChainStreamInterceptor(ch.streamInterceptor),
	}, s.opts.serverOpts...)
	ch.srv = grpc.NewServer(opts...)
	s.registerOn(ch.srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ch.served)
		_ = ch.srv.Serve(ch.lis) // returns once srv is stopped
	}()
	return ch
}

var _ serving.Chain = (*chain)(nil)

// Deliver hands c to the chain's grpc.Server, with the chain's TLS
// configuration for the server credentials.
func (ch *chain) Deliver(c net.Conn) bool {
	return ch.lis.Deliver(handshake.NewServerConn(c, ch.hi, ch.hiErr))
}

// SetRoutes gives the chain's next RPCs the table rt.
func (ch *chain) SetRoutes(rt *serverroutes.Table) {
	ch.routes.Store(&routeTable{rt, ch.s.nodeID})
}

// Retire drains the chain: new connections no longer come to it, and its
// connections get a GOAWAY and may finish their RPCs for grace (zero:
// without limit), after which they are closed; hard closes them at once.
// Its certificate providers are released when its connections are gone.
// It does not block; the server's wait group tracks the drain.
func (ch *chain) Retire(grace time.Duration, hard bool) {
	ch.retireOnce.Do(func() {
		s := ch.s
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ch.lis.Close()
			if hard {
				ch.srv.Stop()
			} else {
				ch.drain(grace)
			}
			<-ch.served
			if ch.hi != nil {
				ch.hi.Close()
			}
		}()
	})
}

// drain gracefully stops the chain's grpc.Server, and stops it when grace
// (if not zero) passes or the server is stopped.
func (ch *chain) drain(grace time.Duration) {
	s := ch.s
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		ch.srv.GracefulStop() // GOAWAY to every connection; waits for their RPCs
	}()
	var timeout <-chan time.Time
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		return
	case <-timeout:
		s.logger.Debug("drain grace time over: closing the remaining connections", xdslog.KeyFilterChain, ch.label, xdslog.KeyGrace, grace)
	case <-s.hardStop:
	}
	ch.srv.Stop()
	<-done
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
