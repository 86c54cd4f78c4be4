// SPDX-License-Identifier: Apache-2.0

package server

import (
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/connectivity"

	"github.com/proxyless/xds/xdscreds"
)

// ServingMode is the serving mode of one listening address of a
// GRPCServer (gRFC A36): grpc's connectivity.ServingMode, so that code
// written for grpc-go's xds.GRPCServer reads the same. A GRPCServer uses
// ServingModeNotServing and ServingModeServing only.
type ServingMode = connectivity.ServingMode

const (
	// ServingModeNotServing: the server has no usable Listener for the
	// address (none yet, deleted, not found, of the wrong address):
	// connections are accepted and closed at once, existing ones drained.
	ServingModeNotServing = connectivity.ServingModeNotServing
	// ServingModeServing: the server serves the address with its Listener.
	ServingModeServing = connectivity.ServingModeServing
)

// DefaultDrainGraceTime is how long connections accepted under a replaced
// Listener, or before the server stopped serving, may keep running RPCs
// after they were told to go away (gRFC A36: 10 minutes).
const DefaultDrainGraceTime = 10 * time.Minute

// Option configures NewGRPCServer.
type Option func(*options)

type options struct {
	serverOpts  []grpc.ServerOption
	modeCB      func(addr net.Addr, mode ServingMode, err error) // nil: log
	providers   *xdscreds.ProviderStore                          // nil: one of the client's bootstrap
	logger      *slog.Logger
	drainGrace  time.Duration
	auditByName map[string]audit.LoggerBuilder
}

func defaultOptions() options {
	return options{
		drainGrace:  DefaultDrainGraceTime,
		auditByName: map[string]audit.LoggerBuilder{StdoutAuditLoggerName: NewStdoutAuditLogger(nil)},
	}
}

// WithServerOptions adds options of the grpc.Servers that serve the
// connections, for example grpc.Creds(creds) with the credentials of
// package xdscreds (xdscreds.NewServerCredentials) for the TLS of
// the filter chains. The server's own interceptors (routes, RBAC) are
// installed with grpc.ChainUnaryInterceptor and
// grpc.ChainStreamInterceptor before these options: an interceptor given
// with grpc.UnaryInterceptor or grpc.StreamInterceptor runs before them,
// one given with grpc.ChainUnaryInterceptor after them. Options that
// install a single handler (grpc.InTapHandle, grpc.UnknownServiceHandler)
// are the application's.
func WithServerOptions(opts ...grpc.ServerOption) Option {
	return func(o *options) { o.serverOpts = append(o.serverOpts, opts...) }
}

// WithServingModeCallback sets the function told of each change of the
// serving mode of a listening address (gRFC A36), with the address and,
// for ServingModeNotServing, why. It is called serially for each
// address, in the order of the changes, on a goroutine of the server and
// never with a lock of the server held; it should not block. Without it,
// the changes are logged (WithLogger) at Warn (not serving) and Info
// (serving).
func WithServingModeCallback(cb func(addr net.Addr, mode ServingMode, err error)) Option {
	return func(o *options) { o.modeCB = cb }
}

// WithCertificateProviders sets the store of certificate provider
// instances (gRFC A29) whose providers give the TLS of the filter chains
// with a DownstreamTlsContext (see xdscreds.NewServerCredentials). The
// default is a store of the client's bootstrap (its
// certificate_providers) with the built-in file_watcher plugin, made by
// NewGRPCServer. Give the store of the application's resolver.Builder
// (xdsresolver.WithCertificateProviders) to share running providers with
// its channels, or one with plugins of your own. It must have been made
// from the client's bootstrap.
func WithCertificateProviders(s *xdscreds.ProviderStore) Option {
	return func(o *options) { o.providers = s }
}

// WithLogger sets the logger of the server: serving mode changes without
// a callback (Warn, Info), Listener and RouteConfiguration updates
// (Debug), configuration errors that fail RPCs (Warn, gRFC A36
// "configuration error logging"), connections no filter chain matches
// (Debug). The default is the client's (client.Client.Logger), which
// discards everything unless the client was given one.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithDrainGraceTime sets how long the connections of a filter chain that
// a Listener update removed or changed, or of a listening address that
// stopped serving, may keep running their RPCs after the server told
// them to go away (a GOAWAY) before they are closed (gRFC A36's "drain
// grace time"). Zero or negative means DefaultDrainGraceTime (10
// minutes).
func WithDrainGraceTime(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.drainGrace = d
		}
	}
}

// WithAuditLoggers adds audit logger builders (gRFC A59), which the RBAC
// filters' audit_logging_options name: a logger config whose typed_config
// is a TypedStruct uses the builder named by the last path segment of
// its type_url, with the TypedStruct's value as JSON config; one of type
// envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog uses the
// builder named StdoutAuditLoggerName, built in (NewStdoutAuditLogger,
// writing to os.Stdout) and replaced by a builder of that name given
// here. Of two builders with one name the last wins. There is no global
// registry: grpc-go's audit.RegisterLoggerBuilder does not reach this
// server. A logger config naming no known builder makes the routes of
// its filter fail their RPCs with UNAVAILABLE, unless it is_optional
// (then it is skipped).
func WithAuditLoggers(builders ...audit.LoggerBuilder) Option {
	return func(o *options) {
		for _, b := range builders {
			if b != nil {
				o.auditByName[b.Name()] = b
			}
		}
	}
}
