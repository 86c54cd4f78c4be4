// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"errors"
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
	"github.com/proxyless/xds/transport/grpctransport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// channel is the client's link to one management server: its transport and
// the one ADS stream shared by every type and authority served there. A
// goroutine (run) owns the stream, and reconnects with backoff when the
// stream fails. When the last subscription of the channel goes, the
// channel is retired: its stream is closed, its cache entries
// dropped, and the next watch of the server makes a new channel (a new
// stream, first requests with empty versions) on the same transport.
//
// The channel owns what both variants of the protocol share: the stream's
// lifecycle, backoff, connectivity failures, the send loop, does-not-exist
// timers armed on send, and flow control. The wire protocol, SotW
// (ads_sotw.go) or incremental (ads_delta.go), is behind proto.
type channel struct {
	// Initialized at creation time and read-only afterwards.
	c      *Client
	sc     *bootstrap.ServerConfig
	key    string // sc.Key()
	tr     transport.Transport
	proto  adsProtocol        // SotW or delta; chosen once per channel
	notify chan struct{}      // cap 1: wakes the send loop
	ctx    context.Context    // ends when the channel is retired or the client closed
	cancel context.CancelFunc // retires the channel
	logger *slog.Logger

	// Guarded by c.mu.
	running      bool                  // the run goroutine was started
	retired      bool                  // nothing is subscribed any more: the channel is done
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
	// or left the wire subscription of ts (subscribedNamesLocked), once
	// per change, never for a name that did not change; name is
	// wildcardName for the wildcard.
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
	requested []string         // the names this request asks the server for: their does-not-exist timers start once it is sent
	drop      []*resourceState // entries unsubscribed by this request: dropped once it is written
	attrs     []any            // for the Debug log line
}

// wildcardName is the resource name of the wildcard subscription (xDS
// protocol, "How the client specifies what resources to return").
const wildcardName = "*"

// typeState is the per type URL state of a channel. Guarded by c.mu.
type typeState struct {
	typ resources.ResourceType // read-only
	ch  *channel               // read-only; the channel it belongs to

	// entries are the cache entries of the type held by this channel:
	// those with watchers, whose names are subscribed, those received
	// through the wildcard only, and those whose last watcher left while
	// the request that unsubscribes them is not written yet.
	// Those it serves (resourceState.ch) are the client's cache: see
	// Client.entryLocked.
	entries map[string]*resourceState
	// subs counts the entries with watchers.
	subs int
	// wildcard are the WatchAll watchers; the wildcard is subscribed while
	// it is not empty.
	wildcard []*watchEntry
	// globs are the watchers of xdstp glob collections, by glob name
	// (glob.go); each name is subscribed while it has watchers.
	globs map[string][]*watchEntry
	// unsubscribed are the entries that lost their last watcher (or, for
	// wildcard-only entries, the wildcard) since the last request of the
	// type was built. The request built next, which no longer names them,
	// takes those still unwatched (outgoing.drop, takeUnsubscribedLocked),
	// and they are dropped once it is written, unless watched again
	// meanwhile: until then a new watch of the name gets the cached value,
	// since the server, which never heard of the unsubscription, will not
	// send it again.
	unsubscribed []*resourceState

	// names caches subscribedNamesLocked; nil when the subscription
	// changed since. Requests share it (read-only), so it is replaced,
	// never modified: SotW ACKs of a large subscription then cost no sort.
	names []string

	nonce        string // nonce last received on the current stream
	sentOnStream bool   // a request of this type was sent on the current stream
	dirty        bool   // the subscription changed since the last request
	// changeAt is the current stream's streamState.responses when dirty
	// was last set by a subscription change: see holdChangesLocked.
	changeAt uint64
	// legacyWildcard: the type's first request on the current stream
	// subscribed to the wildcard in its legacy form, an empty name list
	// (R-6.2, R-11.5; xDS protocol, "How the client specifies what
	// resources to return"), which old servers such as go-control-plane
	// v0.14's snapshot cache need: they take "*" for a name. An empty list
	// keeps meaning the wildcard on that stream, so it cannot say
	// "nothing": when the wildcard goes, the stream is restarted.
	legacyWildcard bool

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
	names := make([]string, 0, len(ts.entries)+1+len(ts.globs))
	if len(ts.wildcard) > 0 {
		names = append(names, wildcardName)
	}
	for g := range ts.globs {
		names = append(names, g)
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
	return len(ts.wildcard) > 0 || ts.subs > 0 || len(ts.globs) > 0
}

// takeUnsubscribedLocked returns the entries the request being built
// unsubscribes from, for outgoing.drop, and empties ts.unsubscribed. An
// entry that lost its last watcher and was watched again before the build
// is left out (so is one a collection watch wants again, cached): the
// request names it, so writing it unsubscribes nothing. Were it kept, an
// entry that loses its watcher again after the build, whose
// unsubscription belongs to the next request, would be dropped when this
// one is written, while the server still has the name subscribed and will
// not send it again: a re-watch would then wait for nothing.
// An entry unsubscribed twice since the last build may be returned twice;
// dropUnsubscribedLocked handles it once.
func (ts *typeState) takeUnsubscribedLocked() []*resourceState {
	drop := ts.unsubscribed[:0]
	for _, rs := range ts.unsubscribed {
		if ts.entries[rs.name] == rs && len(rs.watchers) == 0 && (rs.value == nil || !ts.wantsLocked(rs.name)) {
			drop = append(drop, rs)
		}
	}
	ts.unsubscribed = nil
	return drop
}

// streamState is the state of one ADS stream. Guarded by c.mu.
type streamState struct {
	id          int64
	cancel      context.CancelFunc // ends the stream
	acks        []ackIntent        // ACKs/NACKs not sent yet, in response order
	sentFirst   bool               // the first request (with the node) was sent
	gotResponse bool               // a message was received
	accepted    bool               // a response of a requested type was processed (ACKed or NACKed)
	restart     bool               // ended on purpose, to be replaced at once (see typeState.legacyWildcard)
	maxSent     int                // the size of the largest request written, in bytes

	// For the coalescing of subscription changes (holdChangesLocked):
	// responses counts the responses the stream started handling, handled
	// those it finished handling (decoded, applied, and every watcher call
	// they caused done).
	responses, handled uint64
}

// changesPendingLocked reports whether a subscription change is waiting
// to be sent.
func (ch *channel) changesPendingLocked() bool {
	for _, ts := range ch.types {
		if ts.dirty {
			return true
		}
	}
	return false
}

// holdChangesLocked reports whether the send loop holds back the
// subscription changes owed on ss: it does while each type with changes
// to send got its first one during a response that is still being
// handled, decoding and watcher calls included. A response that adds
// many names (a CDS response naming 10,000 EDS services, each watched
// from a callback; a RouteConfiguration naming 10,000 clusters) then
// leads to one request per type instead of dozens, each with the whole
// name list so far in SotW. ACKs and NACKs are never held; they
// carry the changes of their own type. Changes made while no response is
// handled go out at once, and changes made during one response are not
// held by the next, so a busy stream cannot starve them. Holding delays
// no resource: the stream reads nothing while a response is handled
// and does-not-exist timers start when a name is sent.
func (ch *channel) holdChangesLocked(ss *streamState) bool {
	for _, ts := range ch.types {
		if ts.dirty && ts.changeAt <= ss.handled {
			return false
		}
	}
	return true
}

// ackIntent is the answer owed to one response.
type ackIntent struct {
	typeURL string
	version string           // SotW: response version for an ACK; last ACKed for a NACK
	nonce   string           // the response's nonce
	detail  *statuspb.Status // non-nil for a NACK
}

func newChannel(c *Client, sc *bootstrap.ServerConfig, key string, tr transport.Transport) *channel {
	ctx, cancel := context.WithCancel(c.ctx)
	ch := &channel{
		c:      c,
		sc:     sc,
		key:    key,
		tr:     tr,
		ctx:    ctx,
		cancel: cancel,
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
	ts.subs++
	if rs.ch == ch && rs.value != nil {
		// Only a cached value can be deleted by a response that leaves
		// the name out; one that was never received is not, and
		// its first value proves the server was asked for it.
		rs.notRequested = true
	}
	ch.subscriptionChangedLocked(ts, rs.name, true)
}

// unsubscribeLocked removes the name of rs, which lost its last watcher,
// from the subscription. The entry stays until the request that no longer
// names it is written, or for good while the wildcard is
// subscribed and rs is cached: it is then received through the wildcard.
func (ch *channel) unsubscribeLocked(rs *resourceState) {
	ts := ch.types[rs.typ.TypeURL()]
	ts.subs--
	ts.unsubscribed = append(ts.unsubscribed, rs)
	ch.subscriptionChangedLocked(ts, rs.name, false)
}

// subscriptionChangedLocked records that name joined (subscribed) or left
// the subscription of ts, marks ts for a request and wakes the stream,
// starting it when it is not running. When nothing is subscribed any more,
// the channel is retired.
func (ch *channel) subscriptionChangedLocked(ts *typeState, name string, subscribed bool) {
	ch.proto.subscriptionChangedLocked(ts, name, subscribed)
	ch.changedLocked(ts, name, subscribed)
}

// changedLocked is subscriptionChangedLocked without the protocol's record
// of the change: for an entry that leaves ts's cache, whose name already
// left the subscription (releaseLocked).
func (ch *channel) changedLocked(ts *typeState, name string, subscribed bool) {
	if !ts.dirty {
		ts.dirty, ts.changeAt = true, 0
		if ch.stream != nil {
			ts.changeAt = ch.stream.responses
		}
	}
	ts.names = nil
	if subscribed && !ch.running && !ch.c.closed {
		ch.running = true
		ch.c.wg.Add(1)
		go ch.run()
	}
	if !subscribed {
		if !ch.hasSubscriptionsLocked() {
			ch.retireLocked()
			return
		}
		if name == wildcardName && ts.legacyWildcard && len(ts.wildcard) == 0 {
			ch.restartStreamLocked()
			return
		}
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

// retireLocked ends the channel, whose last subscription just went: its
// stream is closed, which unsubscribes from everything at once,
// and its cache entries, none of which has a watcher, are dropped. The
// next watch of the server makes a new channel. A server list left with
// no entry starts over from its primary (entryDroppedLocked, R-15).
func (ch *channel) retireLocked() {
	c := ch.c
	ch.retired = true
	if c.channels[ch.key] == ch {
		delete(c.channels, ch.key)
	}
	for _, ts := range ch.types {
		for _, rs := range ts.entries {
			if rs.ch == ch {
				c.dropEntryLocked(rs)
			}
		}
		ts.unsubscribed = nil
	}
	ch.stream = nil // nothing more is sent on it
	ch.cancel()
	ch.logger.Info("nothing is watched on this management server any more: closing the ADS stream")
}

// restartStreamLocked ends the current stream on purpose; run opens the
// next one at once, without backoff, asking for what is still subscribed
// . Used when the legacy wildcard of a type must go (see
// typeState.legacyWildcard).
func (ch *channel) restartStreamLocked() {
	if ss := ch.stream; ss != nil {
		ss.restart = true
		ss.cancel()
		ch.stream = nil
	}
}

// run opens streams until the channel is retired or the client closed.
// Streams are retried after a backoff of 1 s × 1.6ⁿ ± 20 %, at most 120 s
// which starts over after a stream that processed a response
// (ACKed or NACKed one of a requested type: the server answered), as in
// grpc-go: that stream's end is not an error, and the next stream
// is opened at once. So a server that drops every stream after answering
// is reconnected to at once each time, however often it does. The
// exception is a stream that failed on the client's own receive limit (a
// response above it, transport.ErrMessageTooLarge), whose server would
// send the same response again: it goes on with the backoff, whatever it
// received before, so that a server whose answer is too large is not
// reconnected to in a loop (gRFC A88, "Open issues"). A stream that failed
// before any response is reported to the watchers, and so is one
// whose failure is the client's own receive limit, or a request the server
// refused as too large, whenever it happens (see connectivityFailure): at
// most one error per watcher per failed stream.
func (ch *channel) run() {
	defer ch.c.wg.Done()
	ctx := ch.ctx
	bo := backoff.NewStreamBackoff()
	for {
		if ctx.Err() != nil {
			return
		}
		res := ch.runStream(ctx)
		tooLarge := errors.Is(res.err, transport.ErrMessageTooLarge)
		switch {
		case ctx.Err() != nil:
			return
		case res.restart:
			ch.logger.Info("restarting the ADS stream")
			continue
		case res.accepted && !tooLarge:
			// the server answered; start over, at once.
			ch.logger.Info("ADS stream ended after receiving responses; reconnecting", xdslog.KeyError, res.err)
			bo.Reset()
			continue
		case res.gotResponse && !tooLarge:
			// messages, none processed (unknown types, undecodable):
			// not reported, but the server did not answer either: backoff.
			ch.logger.Warn("ADS stream failed after receiving only ignored messages", xdslog.KeyError, res.err)
		default:
			ch.logger.Warn("ADS stream failed", xdslog.KeyError, res.err)
			ch.connectivityFailure(res.err)
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
	accepted    bool // a response of a requested type was processed (ACKed or NACKed); see run
	restart     bool // ended on purpose by restartStreamLocked
}

// runStream runs one ADS stream until it fails or ctx ends.
func (ch *channel) runStream(parent context.Context) streamResult {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st, err := ch.tr.NewStream(ctx, ch.proto.method())
	if err != nil {
		return streamResult{err: fmt.Errorf("creating ADS stream: %w", err)}
	}
	ch.c.mu.Lock()
	ss := ch.startStreamLocked(cancel)
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
	defer ch.c.mu.Unlock()
	res := streamResult{
		err:         recvErr,
		gotResponse: ss.gotResponse,
		accepted:    ss.accepted,
		restart:     ss.restart,
	}
	if res.err == nil {
		res.err = sendErr
	}
	if errors.Is(res.err, transport.ErrMessageTooLarge) {
		res.err = ch.tooLargeError(res.err, ss.maxSent)
	}
	ch.endStreamLocked(ss)
	return res
}

// tooLargeError explains a stream failure caused by a message above a size
// limit: a response above the client's receive limit, or a request above
// the server's.
func (ch *channel) tooLargeError(err error, maxSent int) error {
	limit := ch.c.opts.maxRecvMsgSize
	if limit <= 0 {
		limit = grpctransport.DefaultMaxRecvMsgSize
	}
	return fmt.Errorf("%w (the client accepts responses of at most %d bytes: raise the limit with client.WithMaxRecvMsgSize or xdsctl --max-recv-msg-size BYTES; "+
		"the largest request sent on the stream was %d bytes: the server may limit requests too)", err, limit, maxSent)
}

// startStreamLocked makes a new stream current: nonces are reset, versions
// kept, queued requests of the old stream dropped, and every type
// with subscriptions is sent again with its full subscription.
// Entries waiting for their unsubscription to be written are dropped: the
// new stream never names them.
func (ch *channel) startStreamLocked(cancel context.CancelFunc) *streamState {
	ch.lastStreamID++
	ss := &streamState{id: ch.lastStreamID, cancel: cancel}
	ch.stream = ss
	ch.streamCreatedLocked()
	for _, ts := range ch.types {
		ch.dropUnsubscribedLocked(ts, ts.takeUnsubscribedLocked())
		ts.nonce = ""
		ts.sentOnStream = false
		ts.legacyWildcard = false
		ts.dirty, ts.changeAt = ts.hasSubscriptionLocked(), 0
		ch.proto.streamStartedLocked(ts)
	}
	ch.kick()
	return ss
}

// endStreamLocked stops every running does-not-exist timer; the resources
// are timed afresh once requested on the next stream. Entries
// waiting for their unsubscription are dropped: the server forgets the
// stream's subscriptions with it.
func (ch *channel) endStreamLocked(ss *streamState) {
	if ch.stream == ss {
		ch.stream = nil
	}
	for _, ts := range ch.types {
		ch.dropUnsubscribedLocked(ts, ts.takeUnsubscribedLocked())
		for _, rs := range ts.entries {
			if rs.ch == ch && rs.timerState == timerRequested {
				rs.stopTimerLocked()
				rs.timerState = timerStarted
			}
		}
	}
}

// dropUnsubscribedLocked drops the entries of drop that are still
// unwatched, once the request that unsubscribes them was written or can no
// longer matter. An entry watched again meanwhile stays; so does
// a cached one while the wildcard is subscribed (received through it).
func (ch *channel) dropUnsubscribedLocked(ts *typeState, drop []*resourceState) {
	for _, rs := range drop {
		if ts.entries[rs.name] != rs {
			continue
		}
		if len(rs.watchers) > 0 {
			if rs.ch == ch {
				rs.unsubWritten = rs.notRequested
			}
			continue
		}
		if rs.value != nil && ts.wantsLocked(rs.name) {
			continue
		}
		if rs.ch != ch {
			// A higher-priority server's copy of the subscription
			// (fallback.go): the serving channel decides.
			delete(ts.entries, rs.name)
			continue
		}
		ch.c.dropEntryLocked(rs)
	}
}

// recvLoop reads responses until the stream fails. After each one it waits
// until every watcher called done. It counts the responses it
// handles, for the coalescing of subscription changes (holdChangesLocked).
func (ch *channel) recvLoop(ctx context.Context, st transport.Stream, ss *streamState) error {
	for {
		b, err := st.Recv()
		if err != nil {
			return err
		}
		ch.c.mu.Lock()
		ss.responses++
		ch.c.mu.Unlock()
		if fc := ch.proto.handleResponse(ss, b); fc != nil {
			if err := fc.wait(ctx); err != nil {
				return err
			}
		}
		ch.c.mu.Lock()
		ss.handled++
		held := ch.changesPendingLocked()
		ch.c.mu.Unlock()
		if held {
			ch.kick() // the changes it held
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
			if ch.stream == ss && (len(ss.acks) > 0 || !ch.holdChangesLocked(ss)) {
				req = ch.proto.nextRequestLocked(ss)
			}
			ch.c.mu.Unlock()
			if req == nil {
				break
			}
			b, err := proto.Marshal(req.msg)
			if err == nil {
				err = st.Send(b)
			}
			if err != nil {
				ch.c.mu.Lock()
				ch.dropUnsubscribedLocked(ch.types[req.typeURL], req.drop)
				ch.c.mu.Unlock()
				return fmt.Errorf("sending %s of %d bytes: %w", req.msg.ProtoReflect().Descriptor().Name(), len(b), err)
			}
			if ch.logger.Enabled(ctx, slog.LevelDebug) { // the arguments allocate
				ch.logger.Debug("sent request", append([]any{xdslog.KeyStreamID, ss.id, xdslog.KeyTypeURL, req.typeURL}, req.attrs...)...)
			}
			ch.logger.Log(ctx, xdslog.LevelTrace, "sent request", "request", req.msg)
			ch.c.mu.Lock()
			ss.maxSent = max(ss.maxSent, len(b))
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

// requestSentLocked drops the entries req unsubscribed from and
// arms the does-not-exist timer of every name req asks for that has no
// value and was not requested yet on a connected stream: a stream that
// accepted a request is connected. Cached resources are not timed
// nor is the wildcard.
func (ch *channel) requestSentLocked(ss *streamState, req *outgoing) {
	ts := ch.types[req.typeURL]
	ch.dropUnsubscribedLocked(ts, req.drop)
	if ch.stream != ss || ch.c.closed {
		return
	}
	var et *expiryTimer // one timer for the names this request starts timing
	for _, name := range req.requested {
		rs := ts.entries[name]
		if rs == nil || rs.ch != ch {
			continue
		}
		if rs.notRequested && rs.unsubWritten {
			rs.skipDeletion = true
		}
		rs.notRequested, rs.unsubWritten = false, false
		if len(rs.watchers) == 0 || rs.value != nil || rs.timerState != timerStarted {
			continue
		}
		ch.c.timeLocked(&et, rs)
	}
	ch.c.startExpiryLocked(et)
}

// connectivityFailure tells every watcher of the channel's resources that
// the stream failed before any response: ResourceError when there is no
// cached value, AmbientError otherwise. WatchAll watchers get one
// AmbientError naming "*". These calls are not flow controlled.
// Resources this channel does not serve (fallback.go), and those of the
// server lists that fall back to their next server now, are not
// told.
func (ch *channel) connectivityFailure(err error) {
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	ch.serverFailedLocked()
	fell := ch.fallbackLocked()
	cerr := fmt.Errorf("%w: ADS stream to %s: %w", ErrConnection, ch.sc.ServerURI, err)
	for _, t := range c.registry.Types() {
		ts := ch.types[t.TypeURL()]
		if ts == nil {
			continue
		}
		for _, name := range sortedKeys(ts.entries) {
			rs := ts.entries[name]
			if rs.ch != ch || fell[rs.list] {
				continue
			}
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
		for _, g := range sortedKeys(ts.globs) {
			gerr := c.resourceError(ts.typ, g, cerr)
			for _, we := range ts.globs[g] {
				c.scheduleLocked(we, nil, func(done func()) { we.ambErr(gerr, done) })
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
