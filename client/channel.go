// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/backoff"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// channel is the client's link to one management server: its transport and
// the one ADS stream (SotW) shared by every type and authority served there.
// A goroutine (run) owns the stream; it exists while the channel has
// subscriptions, and reconnects with backoff when the stream fails.
type channel struct {
	// Initialized at creation time and read-only afterwards.
	c      *Client
	sc     *bootstrap.ServerConfig
	tr     transport.Transport
	notify chan struct{} // cap 1: wakes the send loop
	logger *slog.Logger

	// Guarded by c.mu.
	running      bool                  // the run goroutine is alive
	types        map[string]*typeState // by type URL; created on first subscription
	stream       *streamState          // the current stream; nil between streams
	lastStreamID int64
}

// typeState is the per type URL protocol state of a channel. Guarded by
// c.mu.
type typeState struct {
	typ   resources.ResourceType
	names map[string]*resourceState // subscribed names on this channel

	version      string // version_info last ACKed; kept across streams
	nonce        string // nonce last received on the current stream
	sentOnStream bool   // a request of this type was sent on the current stream
	dirty        bool   // the subscription changed since the last request
}

// streamState is the state of one ADS stream. Guarded by c.mu.
type streamState struct {
	id          int64
	acks        []ackIntent // ACKs/NACKs not sent yet, in response order
	sentFirst   bool        // the first request (with the node) was sent
	gotResponse bool        // a message was received
}

// ackIntent is the answer owed to one response.
type ackIntent struct {
	typeURL string
	version string           // response version for an ACK; last ACKed for a NACK
	nonce   string           // the response's nonce
	detail  *statuspb.Status // non-nil for a NACK
}

func newChannel(c *Client, sc *bootstrap.ServerConfig, tr transport.Transport) *channel {
	return &channel{
		c:      c,
		sc:     sc,
		tr:     tr,
		notify: make(chan struct{}, 1),
		logger: c.logger.With(xdslog.KeyServerURI, sc.ServerURI),
		types:  make(map[string]*typeState),
	}
}

// kick wakes the send loop. It never blocks.
func (ch *channel) kick() {
	select {
	case ch.notify <- struct{}{}:
	default:
	}
}

// subscribeLocked adds rs to the subscription and starts the stream if it
// is not running.
func (ch *channel) subscribeLocked(rs *resourceState) {
	url := rs.typ.TypeURL()
	ts := ch.types[url]
	if ts == nil {
		ts = &typeState{typ: rs.typ, names: make(map[string]*resourceState)}
		ch.types[url] = ts
	}
	ts.names[rs.name] = rs
	ts.dirty = true
	if !ch.running && !ch.c.closed {
		ch.running = true
		ch.c.wg.Add(1)
		go ch.run()
	}
	ch.kick()
}

// unsubscribeLocked removes rs from the subscription.
func (ch *channel) unsubscribeLocked(rs *resourceState) {
	ts := ch.types[rs.typ.TypeURL()]
	delete(ts.names, rs.name)
	ts.dirty = true
	ch.kick()
}

// hasSubscriptionsLocked reports whether any name is subscribed.
func (ch *channel) hasSubscriptionsLocked() bool {
	for _, ts := range ch.types {
		if len(ts.names) > 0 {
			return true
		}
	}
	return false
}

// run opens streams until the client closes or nothing is subscribed any
// more. A stream that received a response is replaced at once; one that
// did not is reported to watchers and retried after a backoff of
// 1 s × 1.6ⁿ ± 20 %, at most 120 s.
func (ch *channel) run() {
	defer ch.c.wg.Done()
	ctx := ch.c.ctx
	bo := backoff.NewStreamBackoff()
	for {
		ch.c.mu.Lock()
		if ctx.Err() != nil || !ch.hasSubscriptionsLocked() {
			ch.running = false
			ch.c.mu.Unlock()
			return
		}
		ch.c.mu.Unlock()

		gotResponse, err := ch.runStream(ctx)
		if ctx.Err() != nil {
			continue // exits above
		}
		if gotResponse {
			// not an error; reconnect at once with a fresh backoff.
			ch.logger.Info("ADS stream ended after receiving responses; reconnecting", xdslog.KeyError, err)
			bo.Reset()
			continue
		}
		ch.logger.Warn("ADS stream failed before any response", xdslog.KeyError, err)
		ch.connectivityFailure(err)
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// runStream runs one ADS stream until it fails or ctx ends, and reports
// whether it received anything, and the error that ended it.
func (ch *channel) runStream(parent context.Context) (gotResponse bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st, err := ch.tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		return false, fmt.Errorf("creating ADS stream: %w", err)
	}
	ch.c.mu.Lock()
	ss := ch.startStreamLocked()
	ch.c.mu.Unlock()
	ch.logger.Info("ADS stream started", xdslog.KeyStreamID, ss.id)

	recvDone := make(chan struct{})
	var recvErr error
	go func() {
		defer close(recvDone)
		defer cancel() // unblocks a Send in progress
		recvErr = ch.recvLoop(ctx, st, ss)
	}()
	sendErr := ch.sendLoop(ctx, st, ss, recvDone)
	cancel()
	<-recvDone

	ch.c.mu.Lock()
	gotResponse = ss.gotResponse
	ch.endStreamLocked(ss)
	ch.c.mu.Unlock()
	if recvErr != nil {
		return gotResponse, recvErr
	}
	return gotResponse, sendErr
}

// startStreamLocked makes a new stream current: nonces are reset, versions
// kept, queued requests of the old stream dropped, and every type
// with subscriptions is sent again with its full name list.
func (ch *channel) startStreamLocked() *streamState {
	ch.lastStreamID++
	ss := &streamState{id: ch.lastStreamID}
	ch.stream = ss
	for _, ts := range ch.types {
		ts.nonce = ""
		ts.sentOnStream = false
		ts.dirty = len(ts.names) > 0
	}
	ch.kick()
	return ss
}

// endStreamLocked stops every running does-not-exist timer; the resources
// are timed afresh once requested on the next stream.
func (ch *channel) endStreamLocked(ss *streamState) {
	if ch.stream == ss {
		ch.stream = nil
	}
	for _, ts := range ch.types {
		for _, rs := range ts.names {
			if rs.timerState == timerRequested {
				rs.stopTimerLocked()
				rs.timerState = timerStarted
			}
		}
	}
}

// recvLoop reads responses until the stream fails. After each one it waits
// until every watcher called done.
func (ch *channel) recvLoop(ctx context.Context, st transport.Stream, ss *streamState) error {
	for {
		b, err := st.Recv()
		if err != nil {
			return err
		}
		fc := ch.handleResponse(ss, b)
		if fc == nil {
			continue
		}
		if err := fc.wait(ctx); err != nil {
			return err
		}
	}
}

// sendLoop sends the requests the channel owes, whenever kicked, until the
// stream fails or recvDone closes.
func (ch *channel) sendLoop(ctx context.Context, st transport.Stream, ss *streamState, recvDone <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-recvDone:
			return nil
		case <-ch.notify:
		}
		for {
			ch.c.mu.Lock()
			req := ch.nextRequestLocked(ss)
			ch.c.mu.Unlock()
			if req == nil {
				break
			}
			b, err := proto.Marshal(req)
			if err != nil {
				return fmt.Errorf("marshalling DiscoveryRequest: %w", err)
			}
			if err := st.Send(b); err != nil {
				return fmt.Errorf("sending DiscoveryRequest: %w", err)
			}
			ch.logger.Debug("sent DiscoveryRequest", xdslog.KeyStreamID, ss.id, xdslog.KeyTypeURL, req.GetTypeUrl(),
				xdslog.KeyVersionInfo, req.GetVersionInfo(), xdslog.KeyNonce, req.GetResponseNonce(),
				"names", len(req.GetResourceNames()), "nack", req.GetErrorDetail() != nil)
			ch.c.mu.Lock()
			ch.requestSentLocked(ss, req)
			ch.c.mu.Unlock()
		}
	}
}

// nextRequestLocked returns the next request to send on ss, or nil. ACKs
// and NACKs go first, in response order; then each type whose subscription
// changed, in registry order. Every request carries the type's full
// current name list, sorted, so one request settles any number of
// subscription changes (coalescing). The node goes in the first request of
// the stream only.
func (ch *channel) nextRequestLocked(ss *streamState) *v3discoverypb.DiscoveryRequest {
	if ch.stream != ss {
		return nil
	}
	var req *v3discoverypb.DiscoveryRequest
	if len(ss.acks) > 0 {
		a := ss.acks[0]
		ss.acks = ss.acks[1:]
		req = ch.buildRequestLocked(ch.types[a.typeURL], a.version, a.nonce)
		req.ErrorDetail = a.detail
	} else {
		for _, t := range ch.c.registry.Types() {
			ts := ch.types[t.TypeURL()]
			if ts == nil || !ts.dirty {
				continue
			}
			ts.dirty = false
			if len(ts.names) == 0 && !ts.sentOnStream {
				// an empty list as the first request of a type
				// would be a wildcard subscription.
				continue
			}
			req = ch.buildRequestLocked(ts, ts.version, ts.nonce)
			break
		}
	}
	if req == nil {
		return nil
	}
	if !ss.sentFirst {
		ss.sentFirst = true
		req.Node = ch.c.node
	}
	return req
}

func (ch *channel) buildRequestLocked(ts *typeState, version, nonce string) *v3discoverypb.DiscoveryRequest {
	names := make([]string, 0, len(ts.names))
	for n := range ts.names {
		names = append(names, n)
	}
	slices.Sort(names)
	ts.dirty = false
	ts.sentOnStream = true
	return &v3discoverypb.DiscoveryRequest{
		TypeUrl:       ts.typ.TypeURL(),
		VersionInfo:   version,
		ResponseNonce: nonce,
		ResourceNames: names,
	}
}

// requestSentLocked arms the does-not-exist timer of every name in req
// that has no value and was not requested yet on a connected stream: a
// stream that accepted a request is connected. Cached resources are
// not timed.
func (ch *channel) requestSentLocked(ss *streamState, req *v3discoverypb.DiscoveryRequest) {
	if ch.stream != ss || ch.c.closed {
		return
	}
	ts := ch.types[req.GetTypeUrl()]
	for _, name := range req.GetResourceNames() {
		rs := ts.names[name]
		if rs == nil || rs.value != nil || rs.timerState != timerStarted {
			continue
		}
		ch.c.startTimerLocked(rs)
	}
}

// connectivityFailure tells every watcher of the channel's resources that
// the stream failed before any response: ResourceError when there is no
// cached value, AmbientError otherwise. These calls are not flow
// controlled.
func (ch *channel) connectivityFailure(err error) {
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	cerr := fmt.Errorf("%w: ADS stream to %s: %w", ErrConnection, ch.sc.ServerURI, err)
	for _, t := range c.registry.Types() {
		ts := ch.types[t.TypeURL()]
		if ts == nil {
			continue
		}
		for _, name := range sortedKeys(ts.names) {
			rs := ts.names[name]
			rerr := c.resourceError(rs.typ, rs.name, cerr)
			for _, we := range rs.watchers {
				if rs.value == nil {
					c.scheduleLocked(we, nil, func(done func()) { we.resErr(rerr, done) })
				} else {
					c.scheduleLocked(we, nil, func(done func()) { we.ambErr(rerr, done) })
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
