// SPDX-License-Identifier: Apache-2.0

// Package xdshttp is proxyless HTTP: an http.RoundTripper whose requests
// are routed, balanced, retried and secured by the xDS configuration of
// the management server, as a sidecar would, and an xDS-enabled net/http
// server. See docs/http.md.
//
// # The client: Transport
//
// NewTransport returns an http.RoundTripper for an http.Client:
//
//	c, err := client.New(cfg) // cfg from bootstrap.FromEnv()
//	defer c.Close()           // after the Transport
//	t := xdshttp.NewTransport(c)
//	defer t.Close()
//	hc := &http.Client{Transport: t}
//	resp, err := hc.Get("http://svc:8080/hello") // Listener "svc:8080"
//
// Naming. A request's URL host (with its port when the URL has one) names
// the Listener exactly as the gRPC target xds:///HOST does: through the
// bootstrap's client_default_listener_resource_name_template.
// The virtual host is selected by the request's Host (req.Host, else the
// URL's host), as Envoy selects it. The first request to a host starts a
// dependency manager (package depmgr) for it and waits for its first
// complete configuration, bounded by the request's context; a Listener
// that does not exist fails the request when the client's does-not-exist
// timer fires (15 s by default), with an error wrapping
// client.ErrResourceNotFound. Later requests use the last configuration
// at once. A host no request used for WithHostIdleTimeout (10 minutes) is
// dropped, its watches cancelled.
//
// What a request gets (docs/http.md has the details and Envoy's
// references): the first route whose path, headers, query parameters and
// runtime fraction match; the route's fault injection (gRFC A33); its
// timeout (15 s by default, none when 0; max_stream_duration caps it),
// until the response body is read; a cluster of the route (weighted
// clusters by weight); its drop_overloads, circuit breaking (max_requests)
// and load reports (lrs_server self, R-22); an endpoint picked by the
// cluster's policy among those not ejected by outlier detection (gRFC
// A50); a connection of the endpoint's *http.Transport: plaintext, or TLS
// and mTLS from the cluster's UpstreamTlsContext with the bootstrap's
// certificate providers (gRFC A29, A87, SNI of A101), HTTP/1.1, h2 or h2c
// as the cluster's HttpProtocolOptions say. https:// URLs of a cluster
// without TLS get TLS verified as http.Transport verifies them
// (WithTLSClientConfig); http:// URLs get what the cluster says, as behind
// a sidecar. Connections go straight to the endpoints: the environment's
// HTTP proxy is not used.
//
// Errors. A request that cannot be sent fails with an *Error naming the
// host, route and cluster, wrapping ErrNoRoute, ErrRouteAction,
// ErrClusterUnavailable, ErrNoHealthyEndpoint, ErrDropped,
// ErrCircuitBreakerOpen, ErrFaultAbort (a *FaultAbortError has the
// status), ErrTimeout, ErrClosed, or the errors of the configuration
// (client.ErrResourceNotFound, client.ErrResourceInvalid,
// client.ErrConnection, depmgr.ErrNoVirtualHost) or of the request's
// context; test them with errors.Is. A response, 5xx included, is returned
// as the endpoint sent it.
//
// Concurrency and lifetime. A Transport is safe for concurrent use. Close
// cancels its watches, ends its load reports and closes every connection,
// those of responses in flight included; close it before the client.
//
// # The server
//
// NewServer returns a Server, the net/http counterpart of package
// server's xDS-enabled gRPC server (gRFC A36): it serves an http.Handler
// on listening sockets whose Listener resources come from the management
// server, and applies to each connection and request what a sidecar
// Envoy in front of the application would:
//
//	c, err := client.New(cfg) // the bootstrap names server_listener_resource_name_template
//	srv, err := xdshttp.NewServer(c, mux,
//		xdshttp.WithHTTPServer(&http.Server{ReadHeaderTimeout: 10 * time.Second}),
//		xdshttp.WithServingModeCallback(func(addr net.Addr, mode xdshttp.ServingMode, err error) { … }))
//	go srv.ListenAndServe("0.0.0.0:8080")
//	…
//	err = srv.Shutdown(ctx)
//
// The Listener. Serve watches the Listener named by the bootstrap's
// server_listener_resource_name_template, "%s" replaced by the listening
// address as "IP:port" ("0.0.0.0:8080", "[::]:8080"). It must be a
// server-side Listener (no api_listener) whose socket address is the
// listening address (a port of 0 matches any port); any other makes the
// address not serving.
//
// Serving modes. An address is NOT_SERVING until its Listener arrives
// and each RouteConfiguration its filter chains name over RDS has arrived
// or failed; SERVING from then on; NOT_SERVING again when the Listener is
// deleted, does not exist, or is of the wrong address. A NACKed update
// keeps the Listener in use. While not serving, connections are accepted
// and closed before any byte is sent, and those of the Listener that was
// in use are drained. Each change is told to the callback of
// WithServingModeCallback, or logged.
//
// Connections. Each connection gets the filter chain that matches it
// most specifically (destination IP, transport protocol raw_buffer,
// source type, source IP, source port), else the default chain; chains
// matching on what the server cannot see without listener filters (SNI,
// ALPN, other transport protocols, destination port) never match, and a
// connection no chain matches is closed. A chain's DownstreamTlsContext
// makes the connection TLS, crypto/tls doing the handshake with the
// chain's certificate providers (gRFC A29, xdscreds.ServerTLSConfig):
// the client certificate is required with require_client_certificate
// and verified against the chain's roots or SPIFFE trust bundles; ALPN
// offers h2 and http/1.1. A chain without one is plaintext, or TLS with
// WithHTTPServer's TLSConfig.
//
// Requests. Each request is routed with its chain's RouteConfiguration
// (inline or over RDS): the virtual host by Host, the first route that
// matches its path (without the query) and headers; the chain's RBAC
// filters then decide (gRFC A41, with RBACPerRoute overrides; principals
// from the client certificate, the peer address, headers, the path,
// the method as ":method"), logging to the audit loggers (gRFC A59).
// Then the route's action must be non_forwarding_action. The answers
// follow Envoy: no virtual host or route, 404; denied by RBAC, 403
// "RBAC: access denied"; a route of another action, a
// RouteConfiguration that does not exist, an RBAC filter the server
// cannot apply, 503. Only then does the application's handler run.
//
// Updates and draining. A Listener update applies to new connections at
// once. Connections of a filter chain the update keeps unchanged stay,
// as in Envoy; those of chains it changes or removes are drained:
// HTTP/1.1 connections are closed when idle and their requests in
// flight answered with "Connection: close", HTTP/2 connections get a
// GOAWAY; they may finish their requests for the drain grace time
// (WithDrainGraceTime, default 10 minutes), after which they are closed.
// Each filter chain is served by an http.Server of its own, whose
// Shutdown drains it. A RouteConfiguration update applies to the next
// requests of existing connections.
//
// Concurrency and lifetime. A Server is safe for concurrent use.
// Shutdown and Close end every Serve call (which returns
// http.ErrServerClosed), as on an http.Server; the xDS client is the
// caller's.
package xdshttp
