// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/serving"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// httpChain serves the connections of one filter chain of a Listener: an
// http.Server of its own, fed by a serving.ConnListener, whose handler
// routes and authorizes each request with the chain's current route
// table before the application's handler. A chain lives while its filter
// chain is in the Listener in use, across updates that keep the filter
// chain unchanged (FilterChain.SameConfig); then it is retired: its
// http.Server is shut down, which closes its idle connections, answers
// the requests in flight with "Connection: close" on HTTP/1.1 and sends
// a GOAWAY on HTTP/2, and closed after the drain grace time. An
// http.Server per chain is how net/http's public API drains some
// connections and not others: Shutdown is per server.
type httpChain struct {
	// Initialized at creation time and read-only afterwards.
	s      *Server
	fc     *resources.FilterChain
	label  string // names the chain in messages: `filter chain "name"`
	srv    *http.Server
	lis    *serving.ConnListener
	hi     *handshake.ServerHandshakeInfo // nil without TLS or when hiErr is set
	hiErr  error                          // why the chain's certificate providers could not be acquired
	served chan struct{}                  // closed when srv.Serve has returned

	routes atomic.Pointer[serverroutes.Table] // swapped when the RouteConfiguration changes

	retireOnce sync.Once
}

var _ serving.Chain = (*httpChain)(nil)

// newChain starts the chain of fc, whose requests are routed with rt. It
// acquires the chain's certificate providers; when that fails, the
// chain's TLS handshakes fail.
func (s *Server) newChain(fc *resources.FilterChain, label string, addr net.Addr, rt *serverroutes.Table) *httpChain {
	ch := &httpChain{s: s, fc: fc, label: label, lis: serving.NewConnListener(addr), served: make(chan struct{})}
	ch.routes.Store(rt)
	if fc.Security != nil {
		ch.hi, ch.hiErr = handshake.NewServerHandshakeInfo(strconv.Quote(fc.Name), fc.Security, s.providers.Provider)
		if ch.hiErr != nil {
			s.logger.Warn("the TLS handshakes of a filter chain will fail", xdslog.KeyFilterChain, label, xdslog.KeyError, ch.hiErr)
		}
	}
	ch.srv = s.httpServer(ch)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ch.served)
		_ = ch.srv.Serve(ch.lis) // returns once lis is closed
	}()
	return ch
}

// httpServer returns the http.Server of a chain: the settings of
// WithHTTPServer's base, the chain as handler, TLS done by the chain.
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
	return ch.lis.Deliver(c)
}

// SetRoutes gives the chain's next requests the table rt.
func (ch *httpChain) SetRoutes(rt *serverroutes.Table) { ch.routes.Store(rt) }

// Retire drains the chain: new connections no longer come to it; its
// http.Server is shut down (idle connections closed, "Connection: close"
// and GOAWAY for the others) and closed when grace passes (zero: no
// limit); hard closes it at once. Its certificate providers are released
// once its connections are gone. It does not block; the server's wait
// group tracks the drain.
func (ch *httpChain) Retire(grace time.Duration, hard bool) {
	ch.retireOnce.Do(func() {
		s := ch.s
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ch.lis.Close()
			if hard {
				ch.srv.Close()
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

// drain shuts the chain's http.Server down, and closes it when grace (if
// not zero) passes or the server is closed.
func (ch *httpChain) drain(grace time.Duration) {
	s := ch.s
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		_ = ch.srv.Shutdown(ctx) // waits until every connection is idle and closed
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
	ch.srv.Close()
	cancel()
	<-done
}
