// SPDX-License-Identifier: Apache-2.0

package client

import (
	"log/slog"
	"time"

	"github.com/proxyless/xds/internal/defaulttransport"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// DefaultWatchExpiryTimeout is how long the client waits for a requested
// resource before reporting that it does not exist: 15 s, as the xDS
// protocol ("Knowing When a Requested Resource Does Not Exist") and every
// gRPC client do.
const DefaultWatchExpiryTimeout = 15 * time.Second

// Option configures a Client.
type Option func(*options)

type options struct {
	watchExpiryTimeout time.Duration
	transportBuilder   transport.Builder
	customTypes        []resources.ResourceType
	logger             *slog.Logger
	delta              bool
	maxRecvMsgSize     int           // transport.BuildOptions.MaxRecvMsgSize; 0: the transport's default
	store              Store         // WithStore; nil: no persistence, unless persistDir is set
	persistDir         string        // WithPersistence: a DirStore of the client's logger
	persistTimeout     time.Duration // WithPersistenceTimeout; 0: DefaultPersistenceTimeout
	metrics            metricsOptions
}

func defaultOptions() options {
	return options{
		watchExpiryTimeout: DefaultWatchExpiryTimeout,
		logger:             xdslog.Discard(),
	}
}

// WithWatchExpiryTimeout sets how long the client waits, after a request
// naming a resource was sent on a connected stream, for a response that
// contains it before reporting ErrResourceNotFound to its watchers.
// Zero or negative means DefaultWatchExpiryTimeout (15 s).
func WithWatchExpiryTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.watchExpiryTimeout = d
		}
	}
}

// WithTransportBuilder sets how the client reaches management servers:
// b builds the transport.XDS of each. The default is ADS over gRPC, a
// grpctransport.NewBuilder() of the client's own, one gRPC connection per
// distinct server. Other builders: pertype.NewBuilder, rest.NewBuilder,
// file.NewBuilder, mixed.NewBuilder, transport.ADSBuilder over a
// transport.Dialer of your own, or any transport.Builder, which may
// decorate one of these. The client calls b.Build once per distinct
// server (bootstrap.ServerConfig.Key), with its logger and receive limit
// in transport.BuildOptions, uses the result through transport.XDS only,
// and closes it when it is closed.
func WithTransportBuilder(b transport.Builder) Option {
	return func(o *options) { o.transportBuilder = b }
}

// WithResourceTypes registers custom resource types after the
// built-in Listener, RouteConfiguration, Cluster and ClusterLoadAssignment
// types. Their order is the order in which requests of several types are
// sent. New fails if two types share a type URL.
func WithResourceTypes(types ...resources.ResourceType) Option {
	return func(o *options) { o.customTypes = append(o.customTypes, types...) }
}

// LevelTrace is the log/slog level, below slog.LevelDebug, at which the
// client logs whole protocol messages (every DiscoveryRequest and
// DiscoveryResponse, SotW or delta). A handler whose level is LevelTrace
// or lower shows them. slog's own handlers print it as "DEBUG-4"; name it
// TRACE with a HandlerOptions.ReplaceAttr, as xdsctl's --log-level trace
// does. Every package of the module logs whole messages at this one level.
const LevelTrace slog.Level = xdslog.LevelTrace

// WithLogger sets the logger, a log/slog logger (nil keeps the default).
// The default discards everything. The client logs stream state changes
// at slog.LevelInfo, NACKs and stream failures at slog.LevelWarn,
// per-request and per-response summaries at slog.LevelDebug, and whole
// messages at LevelTrace, with fixed attribute keys (node_id, server_uri,
// type_url, resource, version_info, nonce, stream_id, error). The logger
// is called from the client's goroutines and must be safe for concurrent
// use, as every slog.Handler of the standard library is.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithDelta makes the client speak incremental (delta) xDS to every
// management server: one DeltaAggregatedResources stream per server instead
// of StreamAggregatedResources (xDS protocol, "Incremental xDS"; ).
// Without it, a server uses delta when its bootstrap entry lists the
// server feature "delta_ads" (bootstrap.FeatureDeltaADS), SotW otherwise:
// the option and the feature add up, and nothing turns delta off for a
// server whose entry asks for it. Watchers, the cache, timers, flow
// control and Dump behave the same with either protocol.
func WithDelta() Option {
	return func(o *options) { o.delta = true }
}

// WithMaxRecvMsgSize sets the largest response, in bytes, the client
// accepts from a management server: the transports get it as
// transport.BuildOptions.MaxRecvMsgSize. The default transport (gRPC's
// receive limit, default 4 MiB as gRPC's) and those of this module (a
// REST-JSON response body, a file of a filesystem source) apply it unless
// built with a limit of their own; a transport of yours decides. A larger
// response fails the stream: the watchers of that server get the
// transport's error, which names the limit and how to raise it (an
// AmbientError, or a ResourceError for a resource without a cached
// value, wrapping ErrConnection and transport.ErrMessageTooLarge), and the
// stream is retried with the usual backoff: raise the limit when
// a server's responses (a SotW response carries every resource of its
// type) may exceed it. Zero or negative keeps the transports' defaults.
func WithMaxRecvMsgSize(bytes int) Option {
	return func(o *options) {
		if bytes > 0 {
			o.maxRecvMsgSize = bytes
		}
	}
}

// builder returns the transport builder: WithTransportBuilder's, else a
// new default one.
func (o *options) builder() transport.Builder {
	if o.transportBuilder != nil {
		return o.transportBuilder
	}
	return defaulttransport.NewBuilder()
}
