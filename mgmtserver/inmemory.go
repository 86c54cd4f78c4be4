// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// inMemoryBuilder builds transports to one in-memory Server, whatever
// ServerConfig they are built for: as a transport.Dialer, the in-memory
// Transports; as a transport.Builder, ADS over them.
type inMemoryBuilder struct {
	ms *Server
}

func (b *inMemoryBuilder) Dial(*bootstrap.ServerConfig, transport.BuildOptions) (transport.Transport, error) {
	return &inMemoryTransport{ms: b.ms, streams: make(map[*inMemoryClientStream]context.CancelFunc)}, nil
}

func (b *inMemoryBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	tr, err := b.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return transport.ADS(tr), nil
}

// inMemoryTransport opens streams served in process by ms. Lock order:
// mu, then ms.mu.
type inMemoryTransport struct {
	// Initialized at creation time and read-only afterwards.
	ms *Server

	// Guarded by mu.
	mu      sync.Mutex
	closed  bool                                         // Close was called
	streams map[*inMemoryClientStream]context.CancelFunc // open streams → cancel of their server side
}

// NewStream implements transport.Transport. It starts the server side of
// the stream on a new goroutine, counted by the server and started here,
// so inside the caller's synctest bubble if there is one.
func (t *inMemoryTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	var serve func(ctx context.Context, in, out *msgQueue) error
	if ads, ok := perTypeMethods[method]; ok {
		method = ads // a per-type stream is served as an ADS stream of one type
	}
	switch method {
	case transport.ADSMethod:
		serve = func(ctx context.Context, in, out *msgQueue) error {
			return t.ms.serveSotW(&inMemoryServerStream[*v3discoverypb.DiscoveryRequest, *v3discoverypb.DiscoveryResponse]{ctx, in, out})
		}
	case transport.DeltaADSMethod:
		serve = func(ctx context.Context, in, out *msgQueue) error {
			return t.ms.serveDelta(&inMemoryServerStream[*v3discoverypb.DeltaDiscoveryRequest, *v3discoverypb.DeltaDiscoveryResponse]{ctx, in, out})
		}
	default:
		return nil, fmt.Errorf("mgmtserver: in-memory transport: unknown method %q", method)
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, status.Error(codes.Unavailable, "mgmtserver: in-memory transport closed")
	}
	if !t.ms.enter() {
		return nil, errStopped
	}
	// The server side ends when the client's ctx ends or the transport
	// is closed.
	sctx, cancel := context.WithCancel(ctx)
	toServer, toClient := newMsgQueue(), newMsgQueue()
	cs := &inMemoryClientStream{ctx: ctx, in: toClient, out: toServer}
	t.streams[cs] = cancel
	go func() {
		defer t.ms.wg.Done()
		err := serve(sctx, toServer, toClient)
		cancel()
		if err == nil {
			err = io.EOF // the server ended the stream with status OK
		}
		toClient.close(err)
		toServer.close(io.EOF)
		t.mu.Lock()
		delete(t.streams, cs)
		t.mu.Unlock()
	}()
	return cs, nil
}

// Close implements transport.Transport: it ends every stream of this
// transport (their Recv fails with codes.Canceled) and makes NewStream
// fail. It does not wait for the server side to finish.
func (t *inMemoryTransport) Close() {
	t.mu.Lock()
	t.closed = true
	cancels := make([]context.CancelFunc, 0, len(t.streams))
	for _, cancel := range t.streams {
		cancels = append(cancels, cancel)
	}
	t.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// inMemoryClientStream is the client side of an in-memory stream: it
// moves serialized messages, as a gRPC stream with a pass-through codec
// would.
type inMemoryClientStream struct {
	ctx context.Context // the NewStream ctx
	in  *msgQueue       // serialized DiscoveryResponses from the server
	out *msgQueue       // serialized DiscoveryRequests to the server
}

// Send implements transport.Stream. It never blocks. It returns io.EOF
// once the server ended the stream (Recv returns why), or the status of
// ctx once ctx is done.
func (cs *inMemoryClientStream) Send(msg []byte) error {
	if err := cs.ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return cs.out.put(bytes.Clone(msg))
}

// Recv implements transport.Stream. It returns the next response, or the
// status the server ended the stream with once the responses sent before
// it were read (io.EOF for OK), or the status of ctx once ctx is done.
func (cs *inMemoryClientStream) Recv() ([]byte, error) {
	if err := cs.ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	msg, err := cs.in.get(cs.ctx.Done())
	if errors.Is(err, errWaitAborted) {
		return nil, status.FromContextError(cs.ctx.Err()).Err()
	}
	return msg, err
}

// inMemoryServerStream is the server side of an in-memory stream, SotW
// or delta: it unmarshals requests and marshals responses at the
// boundary, as gRPC's codec would.
type inMemoryServerStream[Req, Resp proto.Message] struct {
	ctx context.Context // done when the client's ctx is, or the transport closed
	in  *msgQueue       // serialized requests from the client
	out *msgQueue       // serialized responses to the client
}

func (ss *inMemoryServerStream[Req, Resp]) Context() context.Context { return ss.ctx }

// Send never blocks: a client that stops reading only makes the queue
// grow.
func (ss *inMemoryServerStream[Req, Resp]) Send(resp Resp) error {
	b, err := proto.Marshal(resp)
	if err != nil {
		return status.Errorf(codes.Internal, "mgmtserver: encoding a %s: %v", resp.ProtoReflect().Descriptor().Name(), err)
	}
	return ss.out.put(b)
}

func (ss *inMemoryServerStream[Req, Resp]) Recv() (Req, error) {
	var zero Req
	b, err := ss.in.get(ss.ctx.Done())
	if errors.Is(err, errWaitAborted) {
		return zero, status.FromContextError(ss.ctx.Err()).Err()
	}
	if err != nil {
		return zero, err
	}
	req := zero.ProtoReflect().Type().New().Interface().(Req)
	if err := proto.Unmarshal(b, req); err != nil {
		return zero, status.Errorf(codes.Internal, "mgmtserver: decoding a %s: %v", req.ProtoReflect().Descriptor().Name(), err)
	}
	return req, nil
}

// errWaitAborted is returned by msgQueue.get when its done channel closes
// first.
var errWaitAborted = errors.New("mgmtserver: wait aborted")

// msgQueue is an unbounded FIFO of messages with one consumer. Producers
// never block; the consumer blocks only on channels, so a goroutine
// waiting in get is durably blocked in the sense of testing/synctest.
type msgQueue struct {
	ready chan struct{} // cap 1; signalled after every put and close

	// Guarded by mu.
	mu   sync.Mutex
	msgs [][]byte // queued messages, oldest first
	err  error    // set by close: returned by get once msgs is empty
}

func newMsgQueue() *msgQueue {
	return &msgQueue{ready: make(chan struct{}, 1)}
}

// put queues msg, or returns io.EOF if the queue is closed.
func (q *msgQueue) put(msg []byte) error {
	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		return io.EOF
	}
	q.msgs = append(q.msgs, msg)
	q.mu.Unlock()
	q.signal()
	return nil
}

// close makes get return err once the queued messages are read, and put
// fail. Only the first close counts.
func (q *msgQueue) close(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
	q.signal()
}

func (q *msgQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// get returns the oldest message, blocking until there is one. It returns
// the close error when the queue is closed and empty, and errWaitAborted
// when done is closed first. Only one goroutine may call get at a time.
func (q *msgQueue) get(done <-chan struct{}) ([]byte, error) {
	for {
		q.mu.Lock()
		if len(q.msgs) > 0 {
			msg := q.msgs[0]
			q.msgs[0] = nil
			q.msgs = q.msgs[1:]
			q.mu.Unlock()
			return msg, nil
		}
		if q.err != nil {
			err := q.err
			q.mu.Unlock()
			return nil, err
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-done:
			return nil, errWaitAborted
		}
	}
}
