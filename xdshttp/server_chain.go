// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/serving"
	"github.com/proxyless/xds/resources"
)

// httpChain serves the connections of one filter chain of a Listener: an
// http.Server of its own, run by a serving.Runner on the connections the
// accept loop matched to it, whose handler routes and authorizes each
// request with the chain's current route table before the application's
// handler. A chain lives while its filter chain is in the Listener in
// use, across updates that keep the filter chain unchanged
// (FilterChain.SameConfig); then it is retired: its http.Server is shut
// down, which closes its idle connections, answers the requests in flight
// with "Connection: close" on HTTP/1.1 and sends a GOAWAY on HTTP/2, and
// closed after the drain grace time. An http.Server per chain is how
// net/http's public API drains some connections and not others: Shutdown
// is per server.
type httpChain struct {
	*serving.Runner // delivers connections, retires the chain

	// Initialized at creation time and read-only afterwards.
	s     *Server
	fc    *resources.FilterChain
	label string                         // names the chain in messages: `filter chain "name"`
	hi    *handshake.ServerHandshakeInfo // nil without TLS or when hiErr is set
	hiErr error                          // why the chain's certificate providers could not be acquired

	routes atomic.Pointer[serverroutes.Table] // swapped when the RouteConfiguration changes
}

var _ serving.Chain = (*httpChain)(nil)

// newChain starts the chain of fc, whose requests are routed with rt. It
// acquires the chain's certificate providers; when that fails, the
// chain's TLS handshakes fail.
func (s *Server) newChain(fc *resources.FilterChain, label string, addr net.Addr, rt *serverroutes.Table) *httpChain {
	ch := &httpChain{s: s, fc: fc, label: label}
	ch.routes.Store(rt)
	ch.hi, ch.hiErr = serving.ChainTLS(fc, label, s.providers.Provider, s.logger)
	ch.Runner = serving.Run(newChainServer(s.httpServer(ch)), serving.RunnerOptions{
		Addr: addr, Label: label, Logger: s.logger, WG: &s.group.WG, HardStop: s.group.HardStop,
		Release: ch.release,
	})
	return ch
}

// release releases the chain's certificate providers.
func (ch *httpChain) release() {
	if ch.hi != nil {
		ch.hi.Close()
	}
}

// httpServer returns the http.Server of a chain: the settings of
// WithHTTPServer's base, h as handler, TLS done by the chain.
func (s *Server) httpServer(h http.Handler) *http.Server {
	srv := &http.Server{Handler: h}
	if b := s.opts.base; b != nil {
		srv.DisableGeneralOptionsHandler = b.DisableGeneralOptionsHandler
		srv.ReadTimeout = b.ReadTimeout
		srv.ReadHeaderTimeout = b.ReadHeaderTimeout
		srv.WriteTimeout = b.WriteTimeout
		srv.IdleTimeout = b.IdleTimeout
		srv.MaxHeaderBytes = b.MaxHeaderBytes
		srv.TLSNextProto = b.TLSNextProto
		srv.ConnState = b.ConnState
		srv.ErrorLog = b.ErrorLog
		srv.BaseContext = b.BaseContext
		srv.ConnContext = b.ConnContext
		srv.HTTP2 = b.HTTP2
		srv.Protocols = b.Protocols
	}
	return srv
}

// chainServer is an http.Server as a serving.ChainServer: its graceful
// stop is Shutdown, its stop Close (which also ends the Shutdown).
type chainServer struct {
	srv    *http.Server
	ctx    context.Context // ends a Shutdown
	cancel context.CancelFunc
}

func newChainServer(srv *http.Server) *chainServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &chainServer{srv: srv, ctx: ctx, cancel: cancel}
}

func (c *chainServer) Serve(l net.Listener) error { return c.srv.Serve(l) }

// GracefulStop shuts the server down: idle connections closed,
// "Connection: close" and GOAWAY for the others, until they are all
// closed or Stop is called.
func (c *chainServer) GracefulStop() {
	defer c.cancel()
	_ = c.srv.Shutdown(c.ctx)
}

// Stop closes every connection.
func (c *chainServer) Stop() {
	_ = c.srv.Close()
	c.cancel()
}

// Deliver hands c to the chain's http.Server: as a TLS server connection
// with the chain's DownstreamTlsContext, or the fallback TLS, or as it
// is (plaintext). The handshake runs on the http.Server's goroutine of
// the connection.
func (ch *httpChain) Deliver(c net.Conn) bool {
	switch {
	case ch.fc.Security != nil:
		c = tls.Server(handshake.NewServerConn(c, ch.hi, ch.hiErr), ch.s.chainTLS)
	case ch.s.fallback != nil:
		c = tls.Server(c, ch.s.fallback)
	}
	return ch.Runner.Deliver(c)
}

// SetRoutes gives the chain's next requests the table rt.
func (ch *httpChain) SetRoutes(rt *serverroutes.Table) { ch.routes.Store(rt) }
