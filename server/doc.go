// SPDX-License-Identifier: Apache-2.0

// Package server is the xDS-enabled gRPC server (gRFC A36): a gRPC server
// whose listening addresses are configured by the management server, with
// the TLS of each connection (gRFC A29, with package xdscreds), the
// routes and RBAC authorization of each RPC (gRFC A41) and audit logging
// (gRFC A59). It is the counterpart of grpc-go's xds.NewGRPCServer, built
// on gRPC's public API only:
//
//	c, err := client.New(cfg)                  // the bootstrap names server_listener_resource_name_template
//	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
//	srv, err := server.NewGRPCServer(c, server.WithServerOptions(grpc.Creds(creds)),
//		server.WithServingModeCallback(func(addr net.Addr, mode server.ServingMode, err error) { … }))
//	pb.RegisterGreeterServer(srv, impl)
//	lis, err := net.Listen("tcp", "0.0.0.0:8080")
//	err = srv.Serve(lis)
//
// # The Listener
//
// Serve watches the Listener named by the bootstrap's
// server_listener_resource_name_template, "%s" replaced by the listening
// address as "IP:port" ("0.0.0.0:8080", "[::]:8080"); Istio serves its
// proxyless workloads "xds.istio.io/grpc/lds/inbound/%s". The Listener
// must be a server-side one (no api_listener, validated by package
// resources: R-26) whose socket address is the listening address (a port
// of 0 matches any port); any other makes the address not serving.
//
// # Serving modes
//
// An address is NOT_SERVING until its Listener arrives and each
// RouteConfiguration the Listener's filter chains name over RDS has
// arrived or failed; it is SERVING from then on, and NOT_SERVING again
// when the Listener is deleted, does not exist (the watch expiry timer),
// or is one of the wrong address. A NACKed update keeps the Listener in
// use. While not serving, connections are accepted and closed at once,
// before any byte is sent, and the connections of the Listener that was
// in use are drained (below). Each change is told to the callback of
// WithServingModeCallback with the address and, when not serving, the
// reason; without a callback it is logged.
//
// # Connections
//
// Each accepted connection gets the filter chain of the Listener that
// matches it most specifically (destination IP, transport protocol,
// source type, source IP, source port; chains matching on what a server
// cannot see never match), else the default filter chain; a connection
// neither matches is closed. The chain's DownstreamTlsContext gives the
// connection's TLS through the server credentials of package xdscreds
// (WithServerOptions(grpc.Creds(…))); a chain without one, or another
// grpc.Creds, uses those credentials' own handshake.
//
// # RPCs
//
// Each RPC is routed with its chain's RouteConfiguration (inline or over
// RDS) as on a client: the virtual host by :authority, the first route
// that matches its path and headers (gRFC A28). The chain's HTTP filters
// then run: RBAC (gRFC A41; the filter's rules, or the route's or
// virtual host's RBACPerRoute), which fails a denied RPC with
// PERMISSION_DENIED and logs the decision to the audit loggers its
// audit_logging_options name (gRFC A59; the standard stdout logger is
// built in, others are given with WithAuditLoggers). Last, the route's
// action must be non_forwarding_action. An RPC that matches no virtual
// host or route, a route of another action, or a chain whose
// RouteConfiguration failed (not found, NACKed without a previous
// version) fails with UNAVAILABLE. The checks run in interceptors the
// server installs before the application's chained interceptors (see
// WithServerOptions).
//
// # Updates and draining
//
// A Listener update applies to new connections at once. Connections of a
// filter chain the update keeps unchanged (FilterChain.SameConfig) stay,
// as in Envoy; those of chains it changes or removes are drained: they
// get a GOAWAY, so that clients open new connections for new RPCs, and
// may finish their RPCs in flight for the drain grace time
// (WithDrainGraceTime, default 10 minutes, gRFC A36), after which they
// are closed. A RouteConfiguration update over RDS applies to the next
// RPCs of existing connections. Each filter chain is served by a
// grpc.Server of its own, whose GracefulStop drains its connections: it
// is gRPC's only public way to send a GOAWAY. (grpc-go drains every
// connection on any Listener update.)
//
// # Concurrency and lifetime
//
// A GRPCServer is safe for concurrent use; RegisterService must come
// before Serve. Stop and GracefulStop end every Serve call and wait for
// every goroutine of the server. The xDS client is the caller's: the
// server does not close it.
//
// See docs/server.md and rules of docs/protocol.md.
package server
