// SPDX-License-Identifier: Apache-2.0

package transport

import (
	"context"
	"errors"
	"log/slog"

	"github.com/proxyless/xds/bootstrap"
)

// Method names of the streaming RPCs opened with Transport.NewStream.
const (
	// ADSMethod is the SotW aggregated discovery stream.
	ADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	// DeltaADSMethod is the incremental (delta) aggregated discovery stream.
	DeltaADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
	// LRSMethod is the load reporting stream, which
	// XDS.NewLRSStream opens.
	LRSMethod = "/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats"
)

// ErrMessageTooLarge is wrapped by the error a stream returns when a
// message exceeded a size limit: a response larger than the client's
// receive limit (for gRPC, 4 MiB unless configured), or a request the
// server refused as larger than its own limit. Implementations wrap it so
// that the client can tell watchers which limit was hit, rather than
// retrying blindly; the error text names the limit (and the option that
// raises it) or the request size in bytes.
var ErrMessageTooLarge = errors.New("message larger than the size limit")

// ErrDeltaUnsupported is wrapped by the error of an XDS implementation
// that cannot open incremental (delta) streams: REST-JSON polling and
// filesystem subscriptions speak state of the world only.
var ErrDeltaUnsupported = errors.New("incremental (delta) xDS is not supported by this transport")

// ErrLRSUnsupported is wrapped by the error of XDS.NewLRSStream when the
// server has no load reporting service: REST-JSON polling and filesystem
// subscriptions.
var ErrLRSUnsupported = errors.New("load reporting (LRS) is not supported by this transport")

// ErrClosed is returned by the methods that open streams after the
// transport was closed.
var ErrClosed = errors.New("transport closed")

// Builder builds the transport to each management server that the
// client's engine speaks through (XDS): the seam between the engine and
// the ways of reaching a server. client.WithTransportBuilder takes one;
// the client's default is ADS over gRPC (package grpctransport). The
// Builders of this module are grpctransport.Builder (ADS over gRPC),
// pertype.Builder (one gRPC stream per type), rest.Builder (REST-JSON
// polling), file.Builder (filesystem subscriptions), mixed.Builder (one
// of them per server), and ADSBuilder over any Dialer.
//
// A Builder that decorates another (logging, metrics, fault injection)
// builds the inner XDS and returns a wrapper that embeds it: the
// wrapper's layout (PerType), streams and load reporting are then the
// inner transport's, whatever it is.
type Builder interface {
	// Build returns the transport to the management server sc. The
	// client calls it once per distinct server (bootstrap.ServerConfig.Key),
	// when a resource the server serves is first watched, and closes the
	// result when it is closed itself. Build must not block on network
	// I/O: connecting happens when the first stream is opened. Its error
	// is reported to the watchers of the resources sc serves, wrapped in
	// the client's connection error. sc must not be modified.
	Build(sc *bootstrap.ServerConfig, o BuildOptions) (XDS, error)
}

// BuildOptions is what the client tells a Builder (and a Builder the
// Dialer it builds on) about itself. The zero value asks for the
// transport's defaults. Fields may be added.
type BuildOptions struct {
	// Logger is the client's logger (client.WithLogger), with the
	// server's server_uri. A transport logs through it unless it was
	// given a logger of its own; nil discards.
	Logger *slog.Logger

	// MaxRecvMsgSize is the largest message, in bytes, the client accepts
	// from the server (client.WithMaxRecvMsgSize); zero keeps the
	// transport's default. A transport with a size limit (grpctransport's
	// receive limit, rest's response body, file's file size) applies it
	// unless it was given a limit of its own, and the error it returns
	// for a larger message wraps ErrMessageTooLarge and names the limit
	// and the option that raises it.
	MaxRecvMsgSize int
}

// Dialer makes Transports: connections to a management server that open
// gRPC streams of serialized messages by method name, the level below
// XDS. grpctransport.Builder is one. ADSBuilder, ADS and the per-type
// streams of package transport/pertype speak xDS over a Dialer's
// Transports, and package lrs reports load over one; a Dialer of your own
// (an in-memory transport, a fuzzer) reaches all of them.
type Dialer interface {
	// Dial returns a Transport to the management server described by
	// sc. It must not block on network I/O: connecting happens lazily,
	// when the first stream is opened. o carries the client's options
	// when the client builds through the Dialer (ADSBuilder,
	// pertype.NewBuilder); it is zero otherwise. sc must not be modified.
	Dial(sc *bootstrap.ServerConfig, o BuildOptions) (Transport, error)
}

// Transport is a connection (or a pool of them) to one management server
// that opens gRPC streams of serialized messages.
type Transport interface {
	// NewStream opens a bidirectional stream for the RPC method (a full
	// gRPC method name, such as ADSMethod or LRSMethod). The stream lives
	// until ctx is cancelled or the stream fails. NewStream returns an
	// error when the stream cannot be created, for example because the
	// server is unreachable. The caller retries with its own backoff
	// so an implementation should attempt to connect when
	// NewStream is called rather than wait for a reconnect schedule of its
	// own (gRFC A57: one backoff governs).
	NewStream(ctx context.Context, method string) (Stream, error)

	// Close releases the Transport. Streams opened on it fail afterwards.
	// Close is idempotent.
	Close()
}

// Stream sends and receives serialized protobuf messages
// (DiscoveryRequest / DiscoveryResponse and their delta forms,
// LoadStatsRequest / LoadStatsResponse).
type Stream interface {
	// Send sends one serialized message. Send must not retain msg after it
	// returns.
	Send(msg []byte) error

	// Recv blocks until the next message arrives and returns it, or returns
	// the error that ended the stream. The caller owns the returned slice.
	Recv() ([]byte, error)
}
