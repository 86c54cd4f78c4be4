// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/internal/backoff"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/transport"
)

// slot is where a channel's streams of some types run, one stream after
// another: the aggregated stream of every type (typeURL ""), or the
// stream of one type. A goroutine (run) owns the streams and reconnects
// with backoff when one fails. A slot lives from the first
// subscription of its types until the channel retires it (for a per-type
// slot, also when its type has nothing subscribed any more).
type slot struct {
	// Initialized at creation time and read-only afterwards.
	ch      *channel
	typeURL string             // the type it carries, "" for every type
	notify  chan struct{}      // cap 1: wakes the send loop
	ctx     context.Context    // ends when the slot is retired
	cancel  context.CancelFunc // retires the slot

	// Guarded by c.mu.
	running bool    // the run goroutine was started
	retired bool    // the slot is done
	stream  *stream // the current stream; nil between streams
	// For the coalescing of subscription changes (holdChangesLocked):
	// responses counts the responses the slot's streams started
	// handling, handled those they finished handling (decoded, applied,
	// and every watcher call they caused done). Flow control is per
	// stream: a response in hand on one slot holds no other slot's
	// changes.
	responses, handled uint64
}

// stream is the state of one stream of a slot. Guarded by c.mu.
type stream struct {
	s           *slot
	id          int64
	cancel      context.CancelFunc // ends the stream
	acks        []ackIntent        // ACKs/NACKs not sent yet, in response order
	gotResponse bool               // a message was received
	accepted    bool               // a response of a requested type was processed (ACKed or NACKed)
	restart     bool               // ended on purpose, to be replaced at once (see chanType.legacy)
	// aged: the stream stayed open for healthyAfter after its first
	// request was written; with nothing awaited, it is healthy.
	aged  bool
	aging *time.Timer // sets aged healthyAfter after the first request; nil before it
}

// healthyAfter is how long a stream must stay open after its first
// request was written to be healthy without a response, when the client
// awaits nothing on it: the backoff's first step, so
// that streams replaced at once for being healthy that way start at most
// once per step. A delta server to which the client is up to date (its
// initial_resource_versions current) rightly sends nothing; a server that
// is down or refuses the stream ends it sooner.
const healthyAfter = backoff.InitialInterval

// ackIntent is the answer owed to one response.
type ackIntent struct {
	typeURL string
	version string           // SotW: response version for an ACK; last ACKed for a NACK
	nonce   string           // the response's nonce
	detail  *statuspb.Status // non-nil for a NACK
}

// outgoing is a request ready to send.
type outgoing struct {
	req       transport.Request
	typeURL   string
	requested []string // the names this request asks the server for: their does-not-exist timers start once it is sent
	drop      []*entry // entries unsubscribed by this request: dropped once it is written
	attrs     []any    // for the Debug log line
}

// slotLocked returns the slot that carries typeURL, creating it on first
// use.
func (ch *channel) slotLocked(typeURL string) *slot {
	key := ch.slotKey(typeURL)
	s := ch.slots[key]
	if s == nil {
		ctx, cancel := context.WithCancel(ch.ctx)
		s = &slot{ch: ch, typeURL: key, notify: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
		ch.slots[key] = s
	}
	return s
}

// spec returns the stream s opens.
func (s *slot) spec() transport.StreamSpec {
	return transport.StreamSpec{TypeURL: s.typeURL, Delta: s.ch.proto.delta(), Node: s.ch.c.node}
}

// name returns what logs and errors call the streams of s: what the
// transport calls them ("ADS stream", "REST-JSON polling of …").
func (s *slot) name() string { return s.ch.xds.StreamName(s.spec()) }

// slotKey returns the key in ch.slots of the slot that carries typeURL:
// typeURL with one stream per type, "" for the aggregated stream.
func (ch *channel) slotKey(typeURL string) string {
	if ch.perType {
		return typeURL
	}
	return ""
}

// carries reports whether s carries typeURL.
func (s *slot) carries(typeURL string) bool { return s.typeURL == "" || s.typeURL == typeURL }

// kick wakes the send loop. It never blocks.
func (s *slot) kick() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// startLocked starts the run goroutine if it is not running.
func (s *slot) startLocked() {
	c := s.ch.c
	if s.running || s.retired || c.closed {
		return
	}
	s.running = true
	c.wg.Add(1)
	go s.run()
}

// retireLocked ends the slot: its stream is closed, which unsubscribes
// from everything it carried, and the entries it owed an unsubscription
// are dropped.
func (s *slot) retireLocked() {
	ch := s.ch
	s.retired = true
	if ch.slots[s.typeURL] == s {
		delete(ch.slots, s.typeURL)
	}
	if ss := s.stream; ss != nil {
		s.stream = nil // nothing more is sent on it
		ch.endStreamLocked(s, ss)
	}
	for url, ct := range ch.types {
		if s.carries(url) {
			ch.dropPendingLocked(ch.takePendingLocked(ct))
		}
	}
	s.cancel()
}

// restartLocked ends the current stream on purpose; run opens the next one
// at once, without backoff, asking for what is still subscribed.
// Used when the legacy wildcard of a type must go (see chanType.legacy).
func (s *slot) restartLocked() {
	if ss := s.stream; ss != nil {
		ss.restart = true
		ss.cancel()
		s.stream = nil
	}
}

// run opens streams until the slot is retired or the client closed.
// Streams are retried after a backoff of 1 s × 1.6ⁿ ± 20 %, at most 120 s
// which starts over, and the next stream starts at once, after a
// healthy stream (R-11.2, healthyLocked): one that accepted a response
// (ACKed or NACKed it), as grpc-go does, or that stayed open for
// healthyAfter after its first request while the client awaited nothing
// on it: a server that closes streams now and then, or restarts, is
// reconnected to at once, and a flapping one each time it has answered.
// Except a stream that failed on a size limit (the client's own, or the
// server's for a request), which is reported to the watchers whenever it
// happens and backs off as a failure before any response does: it would
// fail again (see connectivityFailure). A stream that failed before any
// response and before it was healthy is reported to the watchers
// at most one error per watcher per failed stream.
func (s *slot) run() {
	ch := s.ch
	defer ch.c.wg.Done()
	ctx := s.ctx
	logger := ch.logger.With(xdslog.KeyStream, s.name())
	bo := backoff.NewStreamBackoff()
	for {
		if ctx.Err() != nil {
			return
		}
		res := s.runStream(ctx, logger)
		tooLarge := errors.Is(res.err, transport.ErrMessageTooLarge)
		switch {
		case ctx.Err() != nil:
			return
		case res.restart:
			logger.Info("restarting the stream")
			continue
		case res.healthy && !tooLarge:
			logger.Info("stream ended after it was healthy; reconnecting", xdslog.KeyError, res.err)
			bo.Reset()
			continue
		case res.gotResponse && !tooLarge:
			// not reported; nothing accepted, so not healthy
			// either: backoff.
			logger.Warn("stream failed after receiving only responses it ignored", xdslog.KeyError, res.err)
		default:
			logger.Warn("stream failed", xdslog.KeyError, res.err)
			ch.connectivityFailure(s, res.err)
		}
		d := bo.NextBackOff()
		ch.c.mu.Lock()
		if ch.standbyLocked() {
			d = min(d, revertRetryInterval)
		}
		ch.c.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// streamResult is how a stream ended.
type streamResult struct {
	err         error
	gotResponse bool // a message was received
	healthy     bool // it was healthy: see stream.healthy
	restart     bool // ended on purpose by restartLocked
}

// runStream runs one stream until it fails or ctx ends.
func (s *slot) runStream(parent context.Context, logger *slog.Logger) streamResult {
	ch := s.ch
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st, err := ch.xds.NewXDSStream(ctx, s.spec())
	if err != nil {
		return streamResult{err: fmt.Errorf("creating the stream: %w", err)}
	}
	ch.c.mu.Lock()
	if s.retired || ch.c.closed {
		ch.c.mu.Unlock()
		return streamResult{err: context.Canceled}
	}
	ss := ch.startStreamLocked(s, cancel)
	ch.c.mu.Unlock()
	logger.Info("stream started", xdslog.KeyStreamID, ss.id, xdslog.KeyTypeURL, s.typeURL, xdslog.KeyDelta, ch.proto.delta())

	recvDone := make(chan struct{})
	var recvErr error
	go func() {
		defer close(recvDone)
		defer cancel() // unblocks a Send in progress
		recvErr = ch.recvLoop(ctx, st, ss)
	}()
	sendErr := ch.sendLoop(ctx, st, ss, recvDone)
	if errors.Is(sendErr, io.EOF) {
		// The stream ended (a gRPC stream's Send says io.EOF): its
		// receive side says why, unless cancelled first.
		t := time.NewTimer(time.Second)
		select {
		case <-recvDone:
		case <-t.C:
		}
		t.Stop()
	}
	cancel()
	<-recvDone

	ch.c.mu.Lock()
	defer ch.c.mu.Unlock()
	res := streamResult{err: streamError(ctx, sendErr, recvErr), gotResponse: ss.gotResponse, healthy: ch.healthyLocked(ss), restart: ss.restart}
	ch.endStreamLocked(s, ss)
	return res
}

// streamError returns why a stream ended, from the errors of its send and
// receive loops: the receive side's, unless it is only the cancellation
// that a failed send caused (ctx, the stream's, is done then), in which
// case the send's error is the cause, never masked.
func streamError(ctx context.Context, sendErr, recvErr error) error {
	cancelled := ctx.Err() != nil && (errors.Is(recvErr, context.Canceled) || status.Code(recvErr) == codes.Canceled)
	if sendErr != nil && (recvErr == nil || cancelled) {
		return sendErr
	}
	return recvErr
}

// startStreamLocked makes a new stream of s current: nonces are reset,
// versions kept, and every type it carries that has subscriptions
// is sent again with its full subscription. Entries waiting for
// their unsubscription to be written are dropped: the new stream never
// names them.
func (ch *channel) startStreamLocked(s *slot, cancel context.CancelFunc) *stream {
	ch.lastStreamID++
	ss := &stream{s: s, id: ch.lastStreamID, cancel: cancel}
	s.stream = ss
	ch.streamCreatedLocked()
	for url, ct := range ch.types {
		if !s.carries(url) {
			continue
		}
		ch.dropPendingLocked(ch.takePendingLocked(ct))
		ct.nonce = ""
		ct.sent = false
		ct.legacy = false
		ct.dirty, ct.changeAt = ch.subscribedLocked(url), 0
		ch.proto.streamStartedLocked(ct)
	}
	s.kick()
	return ss
}

// endStreamLocked stops every running does-not-exist timer of the types
// ss carried; the resources are timed afresh once requested on the next
// stream. Entries waiting for their unsubscription are dropped:
// the server forgets the stream's subscriptions with it.
func (ch *channel) endStreamLocked(s *slot, ss *stream) {
	if s.stream == ss {
		s.stream = nil
	}
	if ss.aging != nil {
		ss.aging.Stop()
	}
	for url, ct := range ch.types {
		if !s.carries(url) {
			continue
		}
		ch.dropPendingLocked(ch.takePendingLocked(ct))
		for e := range ch.servedLocked(url) {
			ch.c.stepLocked(e, evStreamEnded, &input{}, nil)
		}
	}
}

// streamAged records that ss stayed open for healthyAfter after its
// first request was written: if the client awaits nothing on it, it is
// healthy, and its server counts as healthy and connected again (R-11.2,
//
func (ch *channel) streamAged(ss *stream) {
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if ss.s.stream != ss || c.closed {
		return
	}
	ss.aged = true
	if ch.healthyLocked(ss) {
		ch.serverHealthyLocked()
	}
}

// healthyLocked reports whether ss is healthy: it accepted a
// response, or it stayed open for healthyAfter after its first request
// and the client awaits nothing on it (awaitingLocked): a silent server
// is then the up-to-date case, not a failing one.
func (ch *channel) healthyLocked(ss *stream) bool {
	return ss.accepted || (ss.aged && !ch.awaitingLocked(ss.s))
}

// awaitingLocked reports whether the client awaits an answer from ch's
// server on s: a watched resource of a type s carries, of an authority ch
// serves, that this server has not settled (sent, or said it does not
// exist or is invalid: entry.settledBy), or a collection (the wildcard, a
// glob) of a type this server never answered on this channel.
func (ch *channel) awaitingLocked(s *slot) bool {
	for url, ct := range ch.types {
		if !s.carries(url) {
			continue
		}
		for _, a := range ch.auths {
			if !a.servesLocked(ch) {
				continue
			}
			if !ct.answered && a.hasCollectionsLocked(url) {
				return true
			}
			for e := range a.entriesLocked(url) {
				if len(e.watchers) > 0 && !e.settledBy(ch.sc) {
					return true
				}
			}
		}
	}
	return false
}

// recvLoop reads responses until the stream fails. After each one it
// waits until every watcher called done. It counts the responses
// it handles, for the coalescing of subscription changes of its slot
// (holdChangesLocked).
func (ch *channel) recvLoop(ctx context.Context, st transport.XDSStream, ss *stream) error {
	c := ch.c
	s := ss.s
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		c.mu.Lock()
		s.responses++
		c.mu.Unlock()
		if fc := ch.handleResponse(ss, resp); fc != nil {
			if err := fc.wait(ctx); err != nil {
				return err
			}
		}
		c.mu.Lock()
		s.handled++
		if ch.changesPendingLocked(s) {
			s.kick() // the changes it held
		}
		c.mu.Unlock()
	}
}

// changesPendingLocked reports whether a subscription change of a type s
// carries is waiting to be sent.
func (ch *channel) changesPendingLocked(s *slot) bool {
	for url, ct := range ch.types {
		if ct.dirty && s.carries(url) {
			return true
		}
	}
	return false
}

// holdChangesLocked reports whether the send loop of s holds back the
// subscription changes it owes: it does while each type with changes to
// send got its first one during a response of s that is still being
// handled, decoding and watcher calls included. Responses of other slots
// (per-type streams) hold nothing here: flow control is per stream. A response that
// adds many names (a CDS response naming 10,000 EDS services, each
// watched from a callback; a RouteConfiguration naming 10,000 clusters)
// then leads to one request per type instead of dozens, each with the
// whole name list so far in SotW. ACKs and NACKs are never held;
// they carry the changes of their own type. Changes made while no
// response is handled go out at once, and changes made during one
// response are not held by the next, so a busy stream cannot starve them.
// Holding delays no resource: a stream reads nothing while a response is
// handled, and does-not-exist timers start when a name is sent
//
func (ch *channel) holdChangesLocked(s *slot) bool {
	for url, ct := range ch.types {
		if ct.dirty && s.carries(url) && ct.changeAt <= s.handled {
			return false
		}
	}
	return true
}

// nextRequestLocked returns the next request owed on ss, or nil: an ACK
// or NACK first, in response order (with the subscription changes of its
// type), then the subscription change of the first type, in registry
// order, that has one, unless changes are held
// (holdChangesLocked).
func (ch *channel) nextRequestLocked(ss *stream) *outgoing {
	s := ss.s
	if len(ss.acks) > 0 {
		a := ss.acks[0]
		ss.acks = ss.acks[1:]
		return ch.proto.requestLocked(ss, ch.types[a.typeURL], &a)
	}
	if ch.holdChangesLocked(s) {
		return nil
	}
	for _, t := range ch.c.registry.Types() {
		ct := ch.types[t.TypeURL()]
		if ct == nil || !ct.dirty || !s.carries(t.TypeURL()) {
			continue
		}
		if !ct.sent && !ch.subscribedLocked(t.TypeURL()) {
			// an empty list as the first request of a type would
			// be a (legacy) wildcard subscription. What was unsubscribed
			// was never asked for on this stream.
			ct.dirty = false
			ch.dropPendingLocked(ch.takePendingLocked(ct))
			continue
		}
		if out := ch.proto.requestLocked(ss, ct, nil); out != nil {
			return out
		}
	}
	return nil
}

// sendLoop sends the requests the slot owes, whenever kicked, until the
// stream fails or recvDone closes.
func (ch *channel) sendLoop(ctx context.Context, st transport.XDSStream, ss *stream, recvDone <-chan struct{}) error {
	s := ss.s
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-recvDone:
			return nil
		case <-s.notify:
		}
		for {
			ch.c.mu.Lock()
			var out *outgoing
			if s.stream == ss {
				out = ch.nextRequestLocked(ss)
			}
			ch.c.mu.Unlock()
			if out == nil {
				break
			}
			if err := st.Send(&out.req); err != nil {
				ch.c.mu.Lock()
				ch.dropPendingLocked(out.drop)
				ch.c.mu.Unlock()
				return fmt.Errorf("sending a %s request: %w", out.typeURL, err)
			}
			if ch.logger.Enabled(ctx, slog.LevelDebug) { // the arguments allocate
				ch.logger.Debug("sent request", append([]any{xdslog.KeyStreamID, ss.id, xdslog.KeyTypeURL, out.typeURL}, out.attrs...)...)
			}
			if ch.logger.Enabled(ctx, xdslog.LevelTrace) {
				var m proto.Message = out.req.SotW
				if out.req.Delta != nil {
					m = out.req.Delta
				}
				ch.logger.Log(ctx, xdslog.LevelTrace, "sent request", xdslog.KeyRequest, m)
			}
			ch.c.mu.Lock()
			ch.requestSentLocked(ss, out)
			ch.c.mu.Unlock()
		}
	}
}

// requestSentLocked drops the entries out unsubscribed from and
// tells the entries it names that they were requested (evRequested): the
// does-not-exist timer of each that has no value and was not requested
// yet on a connected stream starts (a stream that accepted a request is
// connected, R-9.2). Cached resources are not timed, nor is the
// wildcard.
func (ch *channel) requestSentLocked(ss *stream, out *outgoing) {
	c := ch.c
	ch.dropPendingLocked(out.drop)
	if ss.s.stream != ss || c.closed {
		return
	}
	if ss.aging == nil {
		ss.aging = time.AfterFunc(healthyAfter, func() { ch.streamAged(ss) })
	}
	var et *expiryTimer // one timer for the names this request starts timing
	in := input{et: &et, sc: ch.sc, logger: ch.logger}
	v := ch.served(out.typeURL)
	for _, name := range out.requested {
		if e := v.entry(name); e != nil {
			c.stepLocked(e, evRequested, &in, nil)
		}
	}
	c.startExpiryLocked(et, ch.sc)
}
