// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// streamConn is the server side of one ADS stream, SotW or delta, as the
// gRPC and the in-memory paths both provide it. Send and Recv may be called
// concurrently with each other, but not with themselves. Recv must return
// once Context is done.
type streamConn[Req, Resp any] interface {
	Send(Resp) error
	Recv() (Req, error)
	Context() context.Context
}

// streamCore is what every accepted stream has, whatever its protocol: its
// identity, the channels that end it, the queue of responses to send, and
// the node it belongs to. sotwStream and deltaStream embed it.
type streamCore[Resp any] struct {
	// Initialized at creation time and read-only afterwards.
	id              int64         // StreamID, server-wide (SotW and delta streams share the counter)
	broken          chan struct{} // closed by BreakStreams (under ms.mu, which then forgets the stream)
	snapshotChanged chan struct{} // cap 1; Update signals it without blocking
	sendReady       chan struct{} // cap 1; signalled when sendQueue grows
	sendQuit        chan struct{} // closed by the handler to stop the sender
	sendFailed      chan error    // cap 1; the sender's Send error

	// Guarded by sendMu. Responses go out in queue order.
	sendMu    sync.Mutex
	sendQueue []Resp

	// Only accessed from the stream's handler goroutine (serveStream).
	gotFirst bool           // the first request was handled
	node     *v3corepb.Node // node of the first request; may be nil
	nodeID   string         // node.GetId(): selects the snapshot
	order    []string       // type URLs in order of their first request
}

func newStreamCore[Resp any](id int64) streamCore[Resp] {
	return streamCore[Resp]{
		id:              id,
		broken:          make(chan struct{}),
		snapshotChanged: make(chan struct{}, 1),
		sendReady:       make(chan struct{}, 1),
		sendQuit:        make(chan struct{}),
		sendFailed:      make(chan error, 1),
	}
}

// noteNode records the node of the stream's first request; later requests'
// nodes are ignored, as a server does (the client sends it only once,
//
func (s *streamCore[Resp]) noteNode(n *v3corepb.Node) {
	if s.gotFirst {
		return
	}
	s.gotFirst = true
	s.node = n
	s.nodeID = n.GetId()
}

// enqueue queues resp for sending; it never blocks. The caller must not
// modify resp afterwards.
func (s *streamCore[Resp]) enqueue(resp Resp) {
	s.sendMu.Lock()
	s.sendQueue = append(s.sendQueue, resp)
	s.sendMu.Unlock()
	select {
	case s.sendReady <- struct{}{}:
	default:
	}
}

// sendLoop sends the queued responses in order until sendQuit is closed or
// a Send fails.
func (s *streamCore[Resp]) sendLoop(send func(Resp) error) {
	for {
		select {
		case <-s.sendReady:
		case <-s.sendQuit:
			return
		}
		for {
			select {
			case <-s.sendQuit:
				return
			default:
			}
			s.sendMu.Lock()
			if len(s.sendQueue) == 0 {
				s.sendMu.Unlock()
				break
			}
			resp := s.sendQueue[0]
			var zero Resp
			s.sendQueue[0] = zero
			s.sendQueue = s.sendQueue[1:]
			s.sendMu.Unlock()
			if err := send(resp); err != nil {
				s.sendFailed <- err // cap 1, and the only send
				return
			}
		}
	}
}

// openStreamIn registers a new stream made by newStream in streams (one of
// ms's maps), or returns the status error a stream must end with when the
// server is stopped or rejects streams.
func openStreamIn[S any](ms *Server, streams map[int64]S, newStream func(id int64) S) (S, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var zero S
	if ms.isStopped {
		return zero, errStopped
	}
	if ms.rejectErr != nil {
		return zero, status.Error(codes.Unavailable, ms.rejectErr.Error())
	}
	ms.lastStreamID++
	s := newStream(ms.lastStreamID)
	streams[ms.lastStreamID] = s
	close(ms.streamOpened)
	ms.streamOpened = make(chan struct{})
	return s, nil
}

// adsStreamState is a stream's protocol state (*sotwStream or
// *deltaStream), which embeds its streamCore.
type adsStreamState[Resp any] interface {
	comparable
	core() *streamCore[Resp]
}

func (s *streamCore[Resp]) core() *streamCore[Resp] { return s }

// serveIn runs one ADS stream of one protocol: it registers a new stream
// state made by newStream in streams, serves st with serveStream, calling
// handle for each request and push when the snapshot changed, and
// unregisters the state when the stream ends.
func serveIn[Req, Resp any, S adsStreamState[Resp]](ms *Server, st streamConn[Req, Resp], streams map[int64]S,
	newStream func(id int64) S, handle func(S, Req), push func(S)) error {
	s, err := openStreamIn(ms, streams, newStream)
	if err != nil {
		return err
	}
	return serveStream(ms, st, s.core(),
		func(req Req) { handle(s, req) },
		func() { push(s) },
		func() { closeStreamIn(ms, streams, s.core().id, s) })
}

// closeStreamIn unregisters stream id from streams when its handler ends.
func closeStreamIn[S comparable](ms *Server, streams map[int64]S, id int64, s S) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if streams[id] == s {
		delete(streams, id)
	}
	close(ms.streamClosed)
	ms.streamClosed = make(chan struct{})
}

// newestStreamLocked returns the stream of streams with the highest ID, the
// one scripted responses go to; ok is false when there is none. ms.mu must
// be held.
func newestStreamLocked[S any](streams map[int64]S) (newest S, ok bool) {
	var newestID int64
	for id, s := range streams {
		if !ok || id > newestID {
			newest, newestID, ok = s, id, true
		}
	}
	return newest, ok
}

// scriptedResponse is a response SendResponse or SendDeltaResponse can
// queue: both have a nonce.
type scriptedResponse interface {
	proto.Message
	GetNonce() string
}

// sendScriptedTo queues a copy of resp on the newest stream of streams
// (one of ms's maps, of resp's protocol), waiting until one is open. A
// copy without a nonce gets a fresh one, set with setNonce. It returns the
// copy's nonce; an error wrapping ctx.Err() if ctx ends first (what names
// the stream kind in it), or errServerStopped. SendResponse and
// SendDeltaResponse are this for their protocol.
func sendScriptedTo[Resp scriptedResponse, S interface{ enqueue(Resp) }](ctx context.Context, ms *Server, what string, streams map[int64]S, resp Resp, setNonce func(Resp, string)) (string, error) {
	out := proto.Clone(resp).(Resp)
	return ms.sendScripted(ctx, what, func() (string, bool) {
		s, ok := newestStreamLocked(streams)
		if !ok {
			return "", false
		}
		if out.GetNonce() == "" {
			setNonce(out, ms.nextNonce())
		}
		s.enqueue(out)
		return out.GetNonce(), true
	})
}

// sendScripted waits until enqueueLocked, called with ms.mu held, finds an
// open stream of its protocol and queues a scripted response on it, and
// returns the nonce it reports. It returns an error wrapping ctx.Err() if
// ctx ends first (what names the stream kind in it), or errServerStopped.
func (ms *Server) sendScripted(ctx context.Context, what string, enqueueLocked func() (nonce string, ok bool)) (string, error) {
	for {
		ms.mu.Lock()
		if ms.isStopped {
			ms.mu.Unlock()
			return "", errServerStopped
		}
		if nonce, ok := enqueueLocked(); ok {
			ms.mu.Unlock()
			return nonce, nil
		}
		opened := ms.streamOpened
		ms.mu.Unlock()
		select {
		case <-opened:
		case <-ctx.Done():
			return "", fmt.Errorf("mgmtserver: waiting for an open %s: %w", what, ctx.Err())
		case <-ms.stopped:
			return "", errServerStopped
		}
	}
}

// recvResult is one result of streamConn.Recv.
type recvResult[Req any] struct {
	req Req
	err error
}

// serveStream runs one ADS stream, of either protocol, until the client
// ends it, the stream's context is done, BreakStreams or Stop end it, or a
// Send fails: handle is called for each request, push when the node's
// snapshot changed, and unregister when the stream ends, before the sender
// stops. It runs on the stream's own goroutine (the gRPC handler, or the
// one in-memory NewStream starts), which must be counted in ms.wg. It
// returns the status the stream ends with.
//
// It starts two goroutines: a receiver, counted in ms.wg and not waited
// for here because a gRPC Recv returns only once the handler has returned,
// and a sender, waited for before returning so that Send is never called
// after the handler returned. The handler loop itself never blocks on
// Send, so a client that stops reading cannot stall Update or
// SendResponse; on exit the handler waits for a sender stuck in a gRPC
// Send, which Stop unblocks by closing the connections.
func serveStream[Req, Resp any](ms *Server, st streamConn[Req, Resp], s *streamCore[Resp], handle func(Req), push, unregister func()) error {
	ctx := st.Context()

	received := make(chan recvResult[Req])
	recvQuit := make(chan struct{})
	defer close(recvQuit)
	ms.wg.Add(1) // legal: this handler is counted, so the counter is not zero
	go func() {
		defer ms.wg.Done()
		for {
			req, err := st.Recv()
			select {
			case received <- recvResult[Req]{req, err}:
			case <-recvQuit:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		s.sendLoop(st.Send)
	}()
	defer func() {
		close(s.sendQuit)
		<-senderDone
	}()
	// Runs first: scripted responses and Update stop choosing this stream.
	defer unregister()

	for {
		select {
		case r := <-received:
			if r.err != nil {
				if errors.Is(r.err, io.EOF) {
					return nil // the client half-closed: end the stream with OK
				}
				return r.err
			}
			handle(r.req)
		case <-s.snapshotChanged:
			push()
		case err := <-s.sendFailed:
			return err
		case <-s.broken:
			return status.Error(codes.Unavailable, "mgmtserver: stream broken by BreakStreams")
		case <-ms.stopped:
			return errStopped
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}
