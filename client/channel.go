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

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// channel is the client's link to one management server: its transport and
// the one ADS stream shared by every type and authority served there. A
// goroutine (run) owns the stream; it exists while the channel has
// subscriptions, and reconnects with backoff when the stream fails.
//
// The channel owns what both variants of the protocol share: the stream's
// lifecycle, backoff, connectivity failures, the send loop, does-not-exist
// timers armed on send, and flow control. The wire protocol, SotW
// (ads_sotw.go) or incremental (ads_delta.go), is behind proto.
type channel struct {
	// Initialized at creation time and read-only afterwards.
	c      *Client
	sc     *bootstrap.ServerConfig
	tr     transport.Transport
	proto  adsProtocol   // SotW or delta; chosen once per channel
	notify chan struct{} // cap 1: wakes the send loop
	logger *slog.Logger

	// Guarded by c.mu.
	running      bool                  // the run goroutine is alive
	types        map[string]*typeState // by type URL; created on first subscription
	stream       *streamState          // the current stream; nil between streams
	lastStreamID int64
}

// adsProtocol is the wire protocol of a channel's stream: how the
// subscription becomes requests and how responses become cache updates.
// Every method ending in Locked is called with c.mu held; handleResponse is
// called without it, on the stream's receive goroutine, and takes it as it
// needs (decoding runs unlocked).
type adsProtocol interface {
	// method is the transport method of the stream (transport.ADSMethod
	// or transport.DeltaADSMethod).
	method() string

	// subscriptionChangedLocked is called after name joined (subscribed)
	// or left the wire subscription of ts; name is wildcardName for the
	// wildcard.
	subscriptionChangedLocked(ts *typeState, name string, subscribed bool)

	// streamStartedLocked resets the per-stream state of ts when a new
	// stream becomes current; the channel has already reset nonce,
	// sentOnStream and dirty.
	streamStartedLocked(ts *typeState)

	// nextRequestLocked returns the next request owed on ss, or nil. ACKs
	// and NACKs go first, in response order; then subscription changes,
	// by type in registry order.
	nextRequestLocked(ss *streamState) *outgoing

	// handleResponse processes one serialized response received on ss
	// and returns its flow control, or nil when it was ignored.
	handleResponse(ss *streamState, b []byte) *flowControl
}

// outgoing is a request ready to send.
type outgoing struct {
	msg       proto.Message
	typeURL   string
	requested []string // the names this request asks the server for: their does-not-exist timers start once it is sent
	attrs     []any    // for the Debug log line
}

// wildcardName is the resource name of the wildcard subscription (xDS
// protocol, "How the client specifies what resources to return").
const wildcardName = "*"

// typeState is the per type URL state of a channel. Guarded by c.mu.
type typeState struct {
	typ resources.ResourceType // read-only
	ch  *channel               // read-only; the channel it belongs to

	// entries are the cache entries of the type served by this channel:
	// those with watchers, whose names are subscribed, and those received
	// through the wildcard only.
	entries map[string]*resourceState
	// wildcard are the WatchAll watchers; the wildcard is subscribed while
	// it is not empty.
	wildcard []*watchEntry

	// names caches subscribedNamesLocked; nil when the subscription
	// changed since. Requests share it (read-only), so it is replaced,
	// never modified: SotW ACKs of a large subscription then cost no sort.
	names []string

	nonce        string // nonce last received on the current stream
	sentOnStream bool   // a request of this type was sent on the current stream
	dirty        bool   // the subscription changed since the last request

	sotw  sotwTypeState  // used by the SotW protocol only
	delta deltaTypeState // used by the delta protocol only
}

// subscribedNamesLocked returns the names the subscription asks for,
// sorted: every entry with watchers and, if subscribed, the wildcard "*"
// (which sorts first). The slice is shared and must not be modified.
func (ts *typeState) subscribedNamesLocked() []string {
	if ts.names != nil {
		return ts.names
	}
	names := make([]string, 0, len(ts.entries)+1)
	if len(ts.wildcard) > 0 {
		names = append(names, wildcardName)
	}
	for n, rs := range ts.entries {
		if len(rs.watchers) > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	ts.names = names
	return names
}

// hasSubscriptionLocked reports whether anything of the type is subscribed.
func (ts *typeState) hasSubscriptionLocked() bool {
	if len(ts.wildcard) > 0 {
		return true
	}
	for _, rs := range ts.entries {
		if len(rs.watchers) > 0 {
			return true
		}
	}
	return false
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
	version string           // SotW: response version for an ACK; last ACKed for a NACK
	nonce   string           // the response's nonce
	detail  *statuspb.Status // non-nil for a NACK
}

func newChannel(c *Client, sc *bootstrap.ServerConfig, tr transport.Transport) *channel {
	ch := &channel{
		c:      c,
		sc:     sc,
		tr:     tr,
		notify: make(chan struct{}, 1),
		logger: c.logger.With(xdslog.KeyServerURI, sc.ServerURI),
		types:  make(map[string]*typeState),
	}
	if c.opts.delta || sc.DeltaADS() {
		ch.proto = &deltaProtocol{ch: ch}
	} else {
		ch.proto = &sotwProtocol{ch: ch}
	}
	return ch
}

// kick wakes the send loop. It never blocks.
func (ch *channel) kick() {
	select {
	case ch.notify <- struct{}{}:
	default:
	}
}

// typeStateLocked returns the state of typ, creating it on first use.
func (ch *channel) typeStateLocked(typ resources.ResourceType) *typeState {
	ts := ch.types[typ.TypeURL()]
	if ts == nil {
		ts = &typeState{typ: typ, ch: ch, entries: make(map[string]*resourceState)}
		ch.types[typ.TypeURL()] = ts
	}
	return ts
}

// subscribeLocked adds the name of rs, which just got its first watcher, to
// the subscription, and starts the stream if it is not running.
func (ch *channel) subscribeLocked(rs *resourceState) {
	ts := ch.typeStateLocked(rs.typ)
	ts.entries[rs.name] = rs
	ch.subscriptionChangedLocked(ts, rs.name, true)
}

// unsubscribeLocked removes the name of rs, which lost its last watcher,
// from the subscription. With drop, the entry is forgotten too; otherwise
// it stays, received through the wildcard.
func (ch *channel) unsubscribeLocked(rs *resourceState, drop bool) {
	ts := ch.types[rs.typ.TypeURL()]
	if drop {
		delete(ts.entries, rs.name)
	}
	ch.subscriptionChangedLocked(ts, rs.name, false)
}

// subscriptionChangedLocked marks ts for a request and wakes the stream,
// starting it when it is not running.
func (ch *channel) subscriptionChangedLocked(ts *typeState, name string, subscribed bool) {
	ts.dirty = true
	ts.names = nil
	ch.proto.subscriptionChangedLocked(ts, name, subscribed)
	if subscribed && !ch.running && !ch.c.closed {
		ch.running = true
		ch.c.wg.Add(1)
		go ch.run()
	}
	ch.kick()
}

// hasSubscriptionsLocked reports whether anything is subscribed.
func (ch *channel) hasSubscriptionsLocked() bool {
	for _, ts := range ch.types {
		if ts.hasSubscriptionLocked() {
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
	st, err := ch.tr.NewStream(ctx, ch.proto.method())
	if err != nil {
		return false, fmt.Errorf("creating ADS stream: %w", err)
	}
	ch.c.mu.Lock()
	ss := ch.startStreamLocked()
	ch.c.mu.Unlock()
	ch.logger.Info("ADS stream started", xdslog.KeyStreamID, ss.id, "method", ch.proto.method())

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
// with subscriptions is sent again with its full subscription.
func (ch *channel) startStreamLocked() *streamState {
	ch.lastStreamID++
	ss := &streamState{id: ch.lastStreamID}
	ch.stream = ss
	for _, ts := range ch.types {
		ts.nonce = ""
		ts.sentOnStream = false
		ts.dirty = ts.hasSubscriptionLocked()
		ch.proto.streamStartedLocked(ts)
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
		for _, rs := range ts.entries {
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
		fc := ch.proto.handleResponse(ss, b)
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
			var req *outgoing
			if ch.stream == ss {
				req = ch.proto.nextRequestLocked(ss)
			}
			ch.c.mu.Unlock()
			if req == nil {
				break
			}
			b, err := proto.Marshal(req.msg)
			if err != nil {
				return fmt.Errorf("marshalling %s: %w", req.msg.ProtoReflect().Descriptor().Name(), err)
			}
			if err := st.Send(b); err != nil {
				return fmt.Errorf("sending %s: %w", req.msg.ProtoReflect().Descriptor().Name(), err)
			}
			ch.logger.Debug("sent request", append([]any{xdslog.KeyStreamID, ss.id, xdslog.KeyTypeURL, req.typeURL}, req.attrs...)...)
			ch.logger.Log(ctx, xdslog.LevelTrace, "sent request", "request", req.msg)
			ch.c.mu.Lock()
			ch.requestSentLocked(ss, req)
			ch.c.mu.Unlock()
		}
	}
}

// nodeLocked returns the node for the next request on ss: the node in the
// first request of the stream, nil afterwards.
func (ch *channel) nodeLocked(ss *streamState) *v3corepb.Node {
	if ss.sentFirst {
		return nil
	}
	ss.sentFirst = true
	return ch.c.node
}

// requestSentLocked arms the does-not-exist timer of every name req asks
// for that has no value and was not requested yet on a connected stream: a
// stream that accepted a request is connected. Cached resources are
// not timed, nor is the wildcard.
func (ch *channel) requestSentLocked(ss *streamState, req *outgoing) {
	if ch.stream != ss || ch.c.closed {
		return
	}
	ts := ch.types[req.typeURL]
	for _, name := range req.requested {
		rs := ts.entries[name]
		if rs == nil || len(rs.watchers) == 0 || rs.value != nil || rs.timerState != timerStarted {
			continue
		}
		ch.c.startTimerLocked(rs)
	}
}

// connectivityFailure tells every watcher of the channel's resources that
// the stream failed before any response: ResourceError when there is no
// cached value, AmbientError otherwise. WatchAll watchers get one
// AmbientError naming "*". These calls are not flow controlled.
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
		for _, name := range sortedKeys(ts.entries) {
			rs := ts.entries[name]
			rerr := c.resourceError(rs.typ, rs.name, cerr)
			for _, we := range rs.watchers {
				if rs.value == nil {
					c.scheduleLocked(we, nil, func(done func()) { we.resErr(rerr, done) })
				} else {
					c.scheduleLocked(we, nil, func(done func()) { we.ambErr(rerr, done) })
				}
			}
		}
		werr := c.resourceError(ts.typ, wildcardName, cerr)
		for _, we := range ts.wildcard {
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(werr, done) })
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
