// SPDX-License-Identifier: Apache-2.0

package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// XDS is the client's transport to one management server, as its engine
// speaks to it: streams of typed xDS requests and responses (xDS protocol,
// "Variants of the xDS Transport Protocol"), and the load reporting stream
// where the server has one. A Builder makes one per server. The engine
// owns the protocol: it decides what each request says (the subscription,
// the version and nonce it ACKs or NACKs), opens a new stream when one
// fails and sends the whole subscription again on it, and reads a
// response only when its watchers are done with the previous one
// . An implementation carries messages; it keeps no subscription
// state of its own, replays nothing, and invents no nonces.
type XDS interface {
	// PerType reports the stream layout: false for one aggregated stream
	// that carries every resource type (ADS), true for one stream per
	// resource type (the per-type services, REST-JSON polling, files). It
	// never changes.
	//
	// With one stream per type, the client opens a type's stream when the
	// type gets its first subscription and closes it when the type has
	// none left, so an empty SotW resource_names on such a stream always
	// means the wildcard.
	PerType() bool

	// NewXDSStream opens a stream as spec says. It must not wait for the
	// server to answer: a server that refuses the stream is reported by
	// the first Recv. It returns an error when the stream cannot be
	// created (the client retries with its backoff, R-11.1), one
	// wrapping ErrDeltaUnsupported for a delta stream the transport
	// cannot open, and ErrClosed after Close. The stream ends when ctx
	// is cancelled.
	NewXDSStream(ctx context.Context, spec StreamSpec) (XDSStream, error)

	// StreamName names the stream spec opens, for the client's logs and
	// errors, in a few words and without the server URI, which the client
	// adds: "ADS stream", "ClusterDiscoveryService.StreamClusters stream",
	// "REST-JSON polling of /v3/discovery:clusters".
	StreamName(spec StreamSpec) string

	// NewLRSStream opens a load reporting stream to the server
	// (LoadReportingService.StreamLoadStats, LRSMethod; ), on the
	// transport's connection where it has one, for package lrs: its
	// messages are serialized LoadStatsRequests and LoadStatsResponses.
	// It returns an error wrapping ErrLRSUnsupported when the server has
	// no such service (REST-JSON polling, files), and ErrClosed after
	// Close. The stream ends when ctx is cancelled.
	NewLRSStream(ctx context.Context) (Stream, error)

	// Close releases the transport: the streams opened on it fail
	// afterwards. Close is idempotent.
	Close()
}

// StreamSpec says which stream to open.
type StreamSpec struct {
	// TypeURL is the resource type of a per-type stream, "" for an
	// aggregated one.
	TypeURL string
	// Delta selects the incremental variant (DeltaDiscoveryRequest and
	// DeltaDiscoveryResponse) rather than state of the world.
	Delta bool
	// Node identifies the client. A stream of a gRPC service sends it in
	// its first request only; a REST-JSON poll, being a request of
	// its own, sends it every time. The engine's requests do not carry it.
	// It must not be modified.
	Node *v3corepb.Node
}

// XDSStream is one stream of typed xDS messages.
type XDSStream interface {
	// Send sends one request. The request's messages are the stream's
	// from then on (an implementation may set their node); the caller
	// only reads them afterwards. An error means the stream failed.
	Send(req *Request) error

	// Recv blocks until the next response arrives and returns it, or
	// returns the error that ended the stream.
	Recv() (*Response, error)
}

// Request is one request of the engine. Exactly one of SotW and Delta is
// set, as the stream's variant; neither carries the node (see
// StreamSpec.Node).
type Request struct {
	SotW  *v3discoverypb.DiscoveryRequest
	Delta *v3discoverypb.DeltaDiscoveryRequest

	// Answer reports that the request ACKs or NACKs the latest response
	// of its type: its response_nonce names it, and a NACK
	// carries error_detail. A request that answers nothing only changes
	// the subscription. A request may do both: the engine sends the
	// subscription changes of a type with its ACK. A polling transport
	// posts the next poll of an answered type after its interval, and at
	// once when the subscription changed.
	Answer bool
}

// Response is one response from the server. Exactly one of SotW and Delta
// is set, as the stream's variant, unless Err is set.
type Response struct {
	SotW  *v3discoverypb.DiscoveryResponse
	Delta *v3discoverypb.DeltaDiscoveryResponse

	// Err is set, and neither message, when a message arrived that could
	// not be decoded: the engine ignores it (no ACK, no NACK, R-7.8),
	// counts the server as reachable, and reads on.
	Err error
}

// typeURL returns the type URL of r's message.
func (r *Request) typeURL() string {
	if r.Delta != nil {
		return r.Delta.GetTypeUrl()
	}
	return r.SotW.GetTypeUrl()
}

// Per-type gRPC method names (xDS protocol, "Variants of the xDS Transport
// Protocol", variants 1 and 2) are given to PerTypeStreams by a MethodFunc.

// MethodFunc returns the gRPC method (a full name, "/package.Service/Method")
// of the per-type stream of typeURL in the variant delta says, or an error
// when the type has none.
type MethodFunc func(typeURL string, delta bool) (string, error)

// ADS returns the XDS implementation of the aggregated discovery service
// over tr: one StreamAggregatedResources stream (ADSMethod), or
// DeltaAggregatedResources (DeltaADSMethod), for every resource type, and
// the load reporting stream on tr. Requests are serialized with
// proto.Marshal and responses parsed with proto.Unmarshal. Closing it
// closes tr.
func ADS(tr Transport) XDS { return &messageTransport{tr: tr} }

// PerTypeStreams returns the XDS implementation that opens one stream of
// tr per resource type, with the gRPC method method gives (the per-type
// discovery services, e.g. ListenerDiscoveryService.StreamListeners), and
// the load reporting stream on tr. Messages are serialized as with ADS.
// Closing it closes tr.
func PerTypeStreams(tr Transport, method MethodFunc) XDS {
	return &messageTransport{tr: tr, method: method}
}

// ADSBuilder returns the Builder of ADS over the Transports d dials: its
// Build dials sc with the client's options and returns ADS of the
// Transport. It is how the client reaches a byte-level transport of your
// own: client.WithTransportBuilder(transport.ADSBuilder(d)).
func ADSBuilder(d Dialer) Builder { return adsBuilder{d} }

type adsBuilder struct{ d Dialer }

func (b adsBuilder) Build(sc *bootstrap.ServerConfig, o BuildOptions) (XDS, error) {
	tr, err := b.d.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return ADS(tr), nil
}

// messageTransport implements XDS over a Transport of serialized messages.
type messageTransport struct {
	tr     Transport
	method MethodFunc // nil: ADS
}

func (t *messageTransport) PerType() bool { return t.method != nil }

// methodOf returns the gRPC method of the stream spec opens.
func (t *messageTransport) methodOf(spec StreamSpec) (string, error) {
	if t.method != nil {
		return t.method(spec.TypeURL, spec.Delta)
	}
	if spec.Delta {
		return DeltaADSMethod, nil
	}
	return ADSMethod, nil
}

func (t *messageTransport) NewXDSStream(ctx context.Context, spec StreamSpec) (XDSStream, error) {
	method, err := t.methodOf(spec)
	if err != nil {
		return nil, err
	}
	st, err := t.tr.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return &messageStream{st: st, delta: spec.Delta, node: spec.Node}, nil
}

// StreamName returns "ADS stream" or "delta ADS stream" for ADS, and the
// service and method for a per-type stream:
// "ClusterDiscoveryService.StreamClusters stream".
func (t *messageTransport) StreamName(spec StreamSpec) string {
	if t.method == nil {
		if spec.Delta {
			return "delta ADS stream"
		}
		return "ADS stream"
	}
	method, err := t.method(spec.TypeURL, spec.Delta)
	if err != nil {
		return "per-type stream of " + spec.TypeURL
	}
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return service[strings.LastIndex(service, ".")+1:] + "." + name + " stream"
}

func (t *messageTransport) NewLRSStream(ctx context.Context) (Stream, error) {
	return t.tr.NewStream(ctx, LRSMethod)
}

func (t *messageTransport) Close() { t.tr.Close() }

// messageStream adapts a Stream of serialized messages to XDSStream.
type messageStream struct {
	st      Stream
	delta   bool
	node    *v3corepb.Node
	sent    bool         // a request was sent: the node went with it; only Send reads and writes it
	maxSent atomic.Int64 // the size of the largest request sent, in bytes
}

// Send puts the node in the stream's first request, serializes
// req and sends it.
func (s *messageStream) Send(req *Request) error {
	var m proto.Message
	switch {
	case s.delta && req.Delta != nil:
		if !s.sent {
			req.Delta.Node = s.node
		}
		m = req.Delta
	case !s.delta && req.SotW != nil:
		if !s.sent {
			req.SotW.Node = s.node
		}
		m = req.SotW
	default:
		return fmt.Errorf("transport: request of the wrong variant for this stream (delta %v)", s.delta)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("transport: marshalling the %s request: %w", req.typeURL(), err)
	}
	s.sent = true
	if n := int64(len(b)); n > s.maxSent.Load() {
		s.maxSent.Store(n) // only Send writes it
	}
	return s.sizeError(s.st.Send(b))
}

// sizeError adds the size of the largest request sent to an error that
// wraps ErrMessageTooLarge: the limit hit may be the server's, for
// requests.
func (s *messageStream) sizeError(err error) error {
	if err == nil || !errors.Is(err, ErrMessageTooLarge) {
		return err
	}
	return fmt.Errorf("%w (the largest request sent on the stream was %d bytes: the server may limit requests too)", err, s.maxSent.Load())
}

// Recv reads and parses the next response. A message that does not parse
// is returned as a Response with Err set.
func (s *messageStream) Recv() (*Response, error) {
	b, err := s.st.Recv()
	if err != nil {
		return nil, s.sizeError(err)
	}
	if s.delta {
		resp := &v3discoverypb.DeltaDiscoveryResponse{}
		if err := proto.Unmarshal(b, resp); err != nil {
			return &Response{Err: fmt.Errorf("decoding DeltaDiscoveryResponse: %w", err)}, nil
		}
		return &Response{Delta: resp}, nil
	}
	resp := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(b, resp); err != nil {
		return &Response{Err: fmt.Errorf("decoding DiscoveryResponse: %w", err)}, nil
	}
	return &Response{SotW: resp}, nil
}
