// SPDX-License-Identifier: Apache-2.0

package transport

import (
	"context"
	"errors"

	"github.com/proxyless/xds/bootstrap"
)

// Method names of the streaming RPCs the client opens with
// Transport.NewStream.
const (
	// ADSMethod is the SotW aggregated discovery stream.
	ADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	// DeltaADSMethod is the incremental (delta) aggregated discovery stream.
	DeltaADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

// ErrMessageTooLarge is wrapped by the error a Stream returns when a
// message exceeded a size limit: a response larger than the client's
// receive limit (for gRPC, 4 MiB unless configured), or a request the
// server refused as larger than its own limit. Implementations wrap it so
// that the client can tell watchers which limit was hit and how to raise
// it, rather than retrying blindly; the error text names the limit or the
// request size in bytes.
var ErrMessageTooLarge = errors.New("message larger than the size limit")

// ErrDeltaUnsupported is wrapped by the error of an XDS implementation
// that cannot open incremental (delta) streams: REST-JSON polling and
// filesystem subscriptions speak state of the world only.
var ErrDeltaUnsupported = errors.New("incremental (delta) xDS is not supported by this transport")

// ErrClosed is returned by NewStream and NewXDSStream after the Transport
// was closed.
var ErrClosed = errors.New("transport closed")

// Builder creates Transports. The client calls Build once per distinct
// management server (see bootstrap.ServerConfig.Key) and closes the Transport
// when it is closed itself.
type Builder interface {
	// Build returns a Transport to the management server described by sc.
	// It must not block on network I/O: connecting happens lazily, when the
	// first stream is opened. The returned error is reported to watchers of
	// the resources served by sc, wrapped in the client's connection error.
	Build(sc *bootstrap.ServerConfig) (Transport, error)
}

// Transport is a connection (or a pool of them) to one management server.
type Transport interface {
	// NewStream opens a bidirectional stream for the RPC method (one of the
	// *Method constants). The stream lives until ctx is cancelled or the
	// stream fails. NewStream returns an error when the stream cannot be
	// created, for example because the server is unreachable. The caller
	// retries with its own backoff, so an implementation should
	// attempt to connect when NewStream is called rather than wait for a
	// reconnect schedule of its own (gRFC A57: one backoff governs).
	NewStream(ctx context.Context, method string) (Stream, error)

	// Close releases the Transport. Streams opened on it fail afterwards.
	// Close is idempotent.
	Close()
}

// Stream sends and receives serialized protobuf messages
// (DiscoveryRequest / DiscoveryResponse and their delta forms).
type Stream interface {
	// Send sends one serialized message. Send must not retain msg after it
	// returns.
	Send(msg []byte) error

	// Recv blocks until the next message arrives and returns it, or returns
	// the error that ended the stream. The caller owns the returned slice.
	Recv() ([]byte, error)
}
