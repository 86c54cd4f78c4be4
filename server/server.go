// SPDX-License-Identifier: Apache-2.0

package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/authz/audit"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/serving"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// GRPCServer is an xDS-enabled gRPC server (gRFC A36): it serves the
// services registered on it on the listeners given to Serve, each with
// the Listener resource the management server has for its address. It
// implements grpc.ServiceRegistrar, so generated registration functions
// take it as they take a *grpc.Server. See the package doc.
//
// A GRPCServer is safe for concurrent use. RegisterService must be called
// before Serve.
type GRPCServer struct {
	// Initialized at creation time and read-only afterwards.
	c         *client.Client
	opts      options
	template  string // the bootstrap's server_listener_resource_name_template
	nodeID    string
	logger    *slog.Logger
	providers *xdscreds.ProviderStore
	auditors  map[string]audit.LoggerBuilder
	proto     *grpc.Server   // holds the registrations: GetServiceInfo, and their checks
	group     *serving.Group // the Serve calls, the stop, the chains' goroutines

	mu       sync.Mutex
	services []registration // guarded by mu
	serving  bool           // guarded by mu; Serve was called
}

// registration is one RegisterService call.
type registration struct {
	desc *grpc.ServiceDesc
	impl any
}

var _ grpc.ServiceRegistrar = (*GRPCServer)(nil)

// NewGRPCServer returns an xDS-enabled gRPC server that takes its
// Listeners from c (gRFC A36). It does not start serving: register the
// services, then call Serve. c is not closed by the server; it must stay
// open while the server serves.
//
// It returns an error when c is nil or when c's bootstrap has no
// server_listener_resource_name_template (gRFC A36: there is no
// default).
func NewGRPCServer(c *client.Client, opts ...Option) (*GRPCServer, error) {
	if c == nil {
		return nil, errors.New("server: NewGRPCServer: the xDS client is nil")
	}
	cfg := c.BootstrapConfig()
	if cfg.ServerListenerResourceNameTemplate == "" {
		return nil, errors.New("server: the bootstrap has no server_listener_resource_name_template (gRFC A36)")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = c.Logger()
	}
	s := &GRPCServer{
		c:         c,
		opts:      o,
		template:  cfg.ServerListenerResourceNameTemplate,
		nodeID:    c.NodeID(),
		logger:    o.logger,
		providers: o.providers,
		auditors:  o.auditByName,
		proto:     grpc.NewServer(o.serverOpts...),
		group:     serving.NewGroup(),
	}
	if s.providers == nil {
		s.providers = xdscreds.NewProviderStore(cfg.CertificateProviders, xdscreds.WithStoreLogger(o.logger))
	}
	return s, nil
}

// RegisterService registers a service and its implementation, as
// grpc.Server.RegisterService does (an implementation of the wrong type,
// or a service registered twice, is fatal there and here). It panics when
// called after Serve: every grpc.Server the server makes serves the same
// services.
func (s *GRPCServer) RegisterService(sd *grpc.ServiceDesc, impl any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		panic(fmt.Sprintf("server: RegisterService(%q) after Serve", sd.ServiceName))
	}
	s.proto.RegisterService(sd, impl)
	s.services = append(s.services, registration{sd, impl})
}

// registerOn registers the services on srv, a chain's grpc.Server.
func (s *GRPCServer) registerOn(srv *grpc.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.services {
		srv.RegisterService(r.desc, r.impl)
	}
}

// GetServiceInfo returns the registered services, as
// grpc.Server.GetServiceInfo does: by full service name.
func (s *GRPCServer) GetServiceInfo() map[string]grpc.ServiceInfo {
	return s.proto.GetServiceInfo()
}

// Serve serves lis, which must listen on TCP (its Addr a *net.TCPAddr),
// with the Listener resource named by the bootstrap's
// server_listener_resource_name_template with "%s" replaced by lis's
// address as "IP:port" ("[::]:8080" for IPv6; percent-encoded in an
// xdstp template, R-5.4). It blocks until lis fails or the server is
// stopped, and then closes lis. Until a usable Listener arrives, and
// whenever there is none, the address is not serving (see the package
// doc). Serve may be called for several listeners at once.
//
// It returns nil after Stop or GracefulStop, grpc.ErrServerStopped when
// called after them, and otherwise the error of lis.Accept; the
// connections accepted so far are then drained.
func (s *GRPCServer) Serve(lis net.Listener) error {
	addr, ok := lis.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("server: Serve: the listener's address is a %T, want a *net.TCPAddr", lis.Addr())
	}
	s.mu.Lock()
	s.serving = true
	s.mu.Unlock()
	err := s.group.Serve(lis, addr, serving.Options{
		Client:       s.c,
		Name:         bootstrap.ExpandTemplate(s.template, addr.String()),
		NodeID:       s.nodeID,
		Logger:       s.logger,
		DrainGrace:   s.opts.drainGrace,
		ModeCallback: s.opts.modeCB,
		Auditors:     s.auditors,
		NewChain: func(fc *resources.FilterChain, label string, routes *serverroutes.Table) serving.Chain {
			return s.newChain(fc, label, addr, &routeTable{routes, s.nodeID})
		},
		Failure: "RPCs will fail with UNAVAILABLE",
	})
	if errors.Is(err, serving.ErrStopped) {
		return grpc.ErrServerStopped
	}
	return err
}

// Stop stops the server: it closes the listeners and every connection,
// which fails the RPCs in flight, and waits for the server's goroutines.
// The xDS client is not closed. It is idempotent.
func (s *GRPCServer) Stop() {
	s.stop(false)
}

// GracefulStop stops the server gracefully: it closes the listeners,
// sends every connection a GOAWAY and waits until their RPCs are done
// (without the drain grace time: as grpc.Server.GracefulStop, it waits
// for every RPC); a Stop meanwhile ends the wait. The xDS client is not
// closed.
func (s *GRPCServer) GracefulStop() {
	s.stop(true)
}

func (s *GRPCServer) stop(graceful bool) {
	s.group.Stop(!graceful)
	// The listeners' accept loops end: each Serve retires its chains,
	// which the group's wait group tracks.
	s.group.Wait()
	s.proto.Stop()
}
