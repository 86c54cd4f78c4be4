// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc/authz/audit"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/serving"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// Server is an xDS-enabled net/http server: it serves its handler on the
// listeners given to Serve, each with the Listener resource the
// management server has for its address, as server.GRPCServer does for
// gRPC (gRFC A36): serving modes, the filter chain of each connection
// with its TLS (DownstreamTlsContext), the routes and RBAC of each request
// (gRFC A41) with audit logging (gRFC A59), draining on updates. See the
// package doc, "# The server", and docs/http.md.
//
// A Server is safe for concurrent use.
type Server struct {
	// Initialized at creation time and read-only afterwards.
	c          *client.Client
	handler    http.Handler
	opts       serverOptions
	template   string // the bootstrap's server_listener_resource_name_template
	nodeID     string
	logger     *slog.Logger
	providers  *xdscreds.ProviderStore
	auditors   map[string]audit.LoggerBuilder
	chainTLS   *tls.Config    // the TLS of chains with a DownstreamTlsContext: GetConfigForClient
	fallback   *tls.Config    // the TLS of chains without one; nil: plaintext
	nextProtos []string       // the ALPN protocols offered
	group      *serving.Group // the Serve calls, the stop, the chains' goroutines

	waiters sync.WaitGroup // Shutdown's waits, which Close ends
}

// NewServer returns an xDS-enabled net/http server that serves handler
// (nil: http.DefaultServeMux) with the Listeners of c. It does not start
// serving: call Serve or ListenAndServe. c is not closed by the server;
// it must stay open while the server serves.
//
// It returns an error when c is nil or when c's bootstrap has no
// server_listener_resource_name_template (gRFC A36: there is no
// default).
func NewServer(c *client.Client, handler http.Handler, opts ...ServerOption) (*Server, error) {
	if c == nil {
		return nil, errors.New("xdshttp: NewServer: the xDS client is nil")
	}
	cfg := c.BootstrapConfig()
	if cfg.ServerListenerResourceNameTemplate == "" {
		return nil, errors.New("xdshttp: the bootstrap has no server_listener_resource_name_template (gRFC A36)")
	}
	o := defaultServerOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = c.Logger()
	}
	if handler == nil {
		handler = http.DefaultServeMux
	}
	s := &Server{
		c:         c,
		handler:   handler,
		opts:      o,
		template:  cfg.ServerListenerResourceNameTemplate,
		nodeID:    c.NodeID(),
		logger:    o.logger,
		providers: o.providers,
		auditors:  o.auditByName,
		group:     serving.NewGroup(),
	}
	if s.providers == nil {
		s.providers = xdscreds.NewProviderStore(cfg.CertificateProviders, xdscreds.WithStoreLogger(o.logger))
	}
	s.nextProtos = nextProtos(o.base)
	s.chainTLS = &tls.Config{GetConfigForClient: s.tlsConfigFor}
	if o.base != nil && o.base.TLSConfig != nil {
		s.fallback = o.base.TLSConfig.Clone()
		if len(s.fallback.NextProtos) == 0 {
			s.fallback.NextProtos = s.nextProtos
		}
	}
	return s, nil
}

// nextProtos returns the ALPN protocols of the TLS handshakes: h2 unless
// base disables HTTP/2 (Protocols without HTTP2, or a TLSNextProto
// without "h2", as http.Server reads them), and http/1.1.
func nextProtos(base *http.Server) []string {
	h2 := true
	if base != nil {
		if base.Protocols != nil && !base.Protocols.HTTP2() {
			h2 = false
		}
		if base.TLSNextProto != nil && base.TLSNextProto["h2"] == nil {
			h2 = false
		}
	}
	if h2 {
		return []string{"h2", "http/1.1"}
	}
	return []string{"http/1.1"}
}

// defaultHandshakeTimeout bounds the wait for a chain's key material when
// the connection has no deadline (http.Server sets one from ReadTimeout,
// ReadHeaderTimeout and WriteTimeout); gRPC's connection timeout.
const defaultHandshakeTimeout = 120 * time.Second

// tlsConfigFor is the GetConfigForClient of the chains with a
// DownstreamTlsContext: the chain's TLS configuration with its current
// key material (xdscreds.ServerTLSConfig), crypto/tls doing the
// handshake.
func (s *Server) tlsConfigFor(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	deadline := time.Now().Add(defaultHandshakeTimeout)
	if sc, ok := hello.Conn.(handshake.ServerConn); ok {
		if d := sc.HandshakeDeadline(); !d.IsZero() && d.Before(deadline) {
			deadline = d
		}
	}
	ctx, cancel := context.WithDeadline(hello.Context(), deadline)
	defer cancel()
	cfg, err := xdscreds.ServerTLSConfig(ctx, hello.Conn)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, errors.New("xds: the connection's filter chain has no TLS configuration") // cannot happen: only such chains use chainTLS
	}
	cfg.NextProtos = s.nextProtos
	return cfg, nil
}

// Serve serves lis, which must listen on TCP (its Addr a *net.TCPAddr),
// with the Listener resource named by the bootstrap's
// server_listener_resource_name_template with "%s" replaced by lis's
// address as "IP:port" ("[::]:8080" for IPv6; percent-encoded in an
// xdstp template, R-5.4). It blocks until lis fails or the server is shut
// down or closed, and then closes lis. Until a usable Listener arrives,
// and whenever there is none, the address is not serving: connections
// are accepted and closed at once (see the package doc). Serve may be
// called for several listeners at once.
//
// As http.Server.Serve, it returns http.ErrServerClosed after Shutdown or
// Close (at once when called after them), and otherwise the error of
// lis.Accept; the connections accepted so far are then drained.
func (s *Server) Serve(lis net.Listener) error {
	addr, ok := lis.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("xdshttp: Serve: the listener's address is a %T, want a *net.TCPAddr", lis.Addr())
	}
	err := s.group.Serve(lis, addr, serving.Options{
		Client:       s.c,
		Name:         bootstrap.ExpandTemplate(s.template, addr.String()),
		NodeID:       s.nodeID,
		Logger:       s.logger,
		DrainGrace:   s.opts.drainGrace,
		ModeCallback: s.opts.modeCB,
		Auditors:     s.auditors,
		NewChain: func(fc *resources.FilterChain, label string, routes *serverroutes.Table) serving.Chain {
			return s.newChain(fc, label, addr, routes)
		},
		Failure: "requests will fail with 503",
	})
	if err == nil || errors.Is(err, serving.ErrStopped) {
		return http.ErrServerClosed
	}
	return err
}

// ListenAndServe listens on the TCP address addr (":http" when empty) and
// calls Serve. Listening on all interfaces (":8080") names the Listener
// with the address the system gives, "[::]:8080" or "0.0.0.0:8080".
func (s *Server) ListenAndServe(addr string) error {
	if addr == "" {
		addr = ":http"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(lis)
}

// Shutdown shuts the server down gracefully, as http.Server.Shutdown:
// it closes the listeners, makes every Serve return, and drains every
// connection (HTTP/1.1 connections are closed once idle, HTTP/2 ones get
// a GOAWAY) without the drain grace time, waiting until they are all
// closed or ctx is done, when it returns ctx's error (Close then closes
// what is left). Hijacked connections are not waited for. The xDS client
// is not closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.group.Stop(false)
	done := make(chan struct{})
	s.waiters.Add(1)
	go func() {
		defer s.waiters.Done()
		defer close(done)
		s.group.Wait()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the server at once, as http.Server.Close: the listeners
// and every connection (the requests in flight fail), and waits for the
// server's goroutines; it does not wait for handlers to return. It is
// idempotent and ends a Shutdown's drain. The xDS client is not closed.
func (s *Server) Close() error {
	s.group.Stop(true)
	s.group.Wait()
	s.waiters.Wait()
	return nil
}
