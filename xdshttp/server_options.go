// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/connectivity"

	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/xdscreds"
)

// ServingMode is the serving mode of one listening address of a Server
// (gRFC A36): the type of package server, grpc's
// connectivity.ServingMode, so that code handling both servers' modes
// reads the same. A Server uses ServingModeNotServing and
// ServingModeServing only.
type ServingMode = connectivity.ServingMode

const (
	// ServingModeNotServing: the server has no usable Listener for the
	// address (none yet, deleted, not found, of the wrong address):
	// connections are accepted and closed at once, existing ones drained.
	ServingModeNotServing = connectivity.ServingModeNotServing
	// ServingModeServing: the server serves the address with its Listener.
	ServingModeServing = connectivity.ServingModeServing
)

// DefaultDrainGraceTime is how long the connections of a filter chain
// that a Listener update changed or removed, or of an address that
// stopped serving, may keep running requests after they were told to go
// away: 10 minutes, gRFC A36's drain grace time (Envoy's --drain-time-s
// is 10 minutes too).
const DefaultDrainGraceTime = 10 * time.Minute

// ServerOption configures NewServer.
type ServerOption func(*serverOptions)

type serverOptions struct {
	base        *http.Server                                     // nil: http.Server's defaults
	modeCB      func(addr net.Addr, mode ServingMode, err error) // nil: log
	providers   *xdscreds.ProviderStore                          // nil: one of the client's bootstrap
	logger      *slog.Logger
	drainGrace  time.Duration
	auditByName map[string]audit.LoggerBuilder
}

func defaultServerOptions() serverOptions {
	return serverOptions{
		drainGrace:  DefaultDrainGraceTime,
		auditByName: map[string]audit.LoggerBuilder{rbac.StdoutAuditLoggerName: rbac.NewStdoutAuditLogger(nil)},
	}
}

// WithHTTPServer sets the settings of the http.Servers that serve the
// connections (one per filter chain), taken from base when NewServer is
// called: DisableGeneralOptionsHandler, ReadTimeout, ReadHeaderTimeout,
// WriteTimeout, IdleTimeout, MaxHeaderBytes, TLSNextProto, ConnState,
// ErrorLog, BaseContext (its listener is the chain's), ConnContext,
// HTTP2 and Protocols. base.TLSConfig, when set, is the TLS of the filter
// chains without a DownstreamTlsContext (as gRFC A29's fallback
// credentials; plaintext when nil); its NextProtos are set from
// Protocols. base.Handler and base.Addr are not used, and base is
// neither started nor modified. Without it, the servers have the zero
// http.Server's settings.
func WithHTTPServer(base *http.Server) ServerOption {
	return func(o *serverOptions) { o.base = base }
}

// WithServingModeCallback sets the function told of each change of the
// serving mode of a listening address (gRFC A36), with the address and,
// for ServingModeNotServing, why. It is called serially for each
// address, in the order of the changes, on a goroutine of the server and
// never with a lock of the server held; it should not block. Without it,
// the changes are logged at Warn (not serving) and Info (serving).
func WithServingModeCallback(cb func(addr net.Addr, mode ServingMode, err error)) ServerOption {
	return func(o *serverOptions) { o.modeCB = cb }
}

// WithServerCertificateProviders sets the store of certificate provider
// instances (gRFC A29) whose providers give the TLS of the filter chains
// with a DownstreamTlsContext. The default is a store of the client's
// bootstrap (its certificate_providers) with the built-in file_watcher
// plugin, made by NewServer. Give a store shared with the application's
// other users of the bootstrap (a resolver, a Transport) to share running
// providers, or one with plugins of your own; it must have been made
// from the client's bootstrap.
func WithServerCertificateProviders(s *xdscreds.ProviderStore) ServerOption {
	return func(o *serverOptions) { o.providers = s }
}

// WithServerLogger sets the logger of the server: serving mode changes
// without a callback (Warn, Info), Listener and RouteConfiguration
// updates (Debug), configuration errors that fail requests (Warn, gRFC
// A36 "configuration error logging"), requests refused (Debug),
// connections no filter chain matches (Debug). The default is the
// client's (client.Client.Logger). The http.Servers' own errors go to
// their ErrorLog (WithHTTPServer).
func WithServerLogger(l *slog.Logger) ServerOption {
	return func(o *serverOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithDrainGraceTime sets how long the connections of a filter chain that
// a Listener update removed or changed, or of a listening address that
// stopped serving, may keep running their requests after they were told
// to go away (HTTP/2 GOAWAY, HTTP/1.1 "Connection: close") before they
// are closed (gRFC A36's drain grace time). Zero or negative means
// DefaultDrainGraceTime.
func WithDrainGraceTime(d time.Duration) ServerOption {
	return func(o *serverOptions) {
		if d > 0 {
			o.drainGrace = d
		}
	}
}

// WithAuditLoggers adds audit logger builders (gRFC A59), which the RBAC
// filters' audit_logging_options name, as server.WithAuditLoggers does
// for the gRPC server: a logger config whose typed_config is a
// TypedStruct uses the builder named by the last path segment of its
// type_url; one of type StdoutAuditLog the built-in standard logger,
// writing to os.Stdout, replaced by a builder of that name given here
// (server.NewStdoutAuditLogger writes elsewhere). An event's
// FullMethodName is the request's path. A logger config naming no known
// builder makes the routes of its filter fail their requests with 503,
// unless it is_optional (then it is skipped).
func WithAuditLoggers(builders ...audit.LoggerBuilder) ServerOption {
	return func(o *serverOptions) {
		for _, b := range builders {
			if b != nil {
				o.auditByName[b.Name()] = b
			}
		}
	}
}
