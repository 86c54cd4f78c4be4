// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// channel is the client's link to one management server: its transport,
// what it subscribes there, and the streams that carry it (stream.go): one
// aggregated stream for every type (ADS), or one per type when the
// transport says so (transport.XDS.PerType). The channel subscribes to
// what its attached authorities subscribe (authority.go). When nothing is
// subscribed any more, the channel is retired: its streams are
// closed, the entries it owed an unsubscription dropped, and the next
// watch of the server makes a new channel (a new stream, first requests
// with empty versions) on the same transport.
//
// The wire protocol, SotW (sotw.go) or incremental (delta.go), is behind
// proto; responses of either go through one pipeline (pipeline.go).
type channel struct {
	// Initialized at creation time and read-only afterwards.
	c       *Client
	sc      *bootstrap.ServerConfig
	key     string // sc.Key()
	xds     transport.XDS
	perType bool         // one stream per type
	proto   wireProtocol // SotW or delta; chosen once per channel
	ctx     context.Context
	cancel  context.CancelFunc // retires the channel
	logger  *slog.Logger

	// Guarded by c.mu.
	retired      bool
	auths        []*authority         // attached: see authority.chans
	types        map[string]*chanType // by type URL; created on first subscription
	slots        map[string]*slot     // by the type URL a slot carries, "" for the aggregated one
	lastStreamID int64
	// For the coalescing of subscription changes (holdChangesLocked):
	// responses counts the responses the channel's streams started
	// handling, handled those they finished handling (decoded, applied,
	// and every watcher call they caused done).
	responses, handled uint64
}

// wireProtocol is the wire protocol of a channel's streams: how the
// subscription becomes requests and responses become the pipeline's
// update. Methods ending in Locked are called with c.mu held; translate
// is called without it.
type wireProtocol interface {
	delta() bool

	// changedLocked records that name joined (subscribed) or left the
	// subscription of ct, once per change; name is wildcardName for the
	// wildcard.
	changedLocked(ct *chanType, name string, subscribed bool)

	// streamStartedLocked resets the per-stream state of ct when a new
	// stream carrying it becomes current.
	streamStartedLocked(ct *chanType)

	// requestLocked returns the request of ct's type to send on ss: the
	// answer to a, if not nil, with the subscription changes of the type;
	// else the subscription change of the type; nil when there is nothing
	// to send.
	requestLocked(ss *stream, ct *chanType, a *ackIntent) *outgoing

	// translate turns a response into the pipeline's update, and returns
	// its type URL; nil for a response of an unknown type URL, or one that
	// could not be decoded, which the pipeline ignores.
	translate(resp *transport.Response) (u *update, typeURL string)

	// answerLocked returns the ACK or NACK of u, applied with the
	// per-resource errors resErrs.
	answerLocked(ct *chanType, u *update, resErrs map[string]error) ackIntent
}

// wildcardName is the resource name of the wildcard subscription (xDS
// protocol, "How the client specifies what resources to return").
const wildcardName = "*"

// legacyWildcard reports whether the wildcard of typeURL may be
// subscribed in its legacy form, an empty name list: the xDS protocol
// defines it for Listener and Cluster only ("How the client specifies
// what resources to return"); other types subscribe to "*".
func legacyWildcard(typeURL string) bool {
	return typeURL == resources.ListenerTypeURL || typeURL == resources.ClusterTypeURL
}

// chanType is a channel's state of one type URL. Guarded by c.mu.
type chanType struct {
	typ resources.ResourceType // read-only

	// names caches subscribedNamesLocked; nil when the subscription
	// changed since. Requests share it (read-only), so it is replaced,
	// never modified: SotW ACKs of a large subscription then cost no sort.
	names []string
	// pending are the entries this channel serves that lost their last
	// watcher (or the collection that held them) since the last request
	// of the type was built. The request built next, which no longer
	// names them, takes those still unwatched (outgoing.drop,
	// takePendingLocked), and they are dropped once it is written, unless
	// watched again meanwhile: until then a new watch of the name gets
	// the cached state, since the server, which never heard of the
	// unsubscription, will not send it again.
	pending []*entry
	// version is the version_info last ACKed (SotW); kept across streams
	//
	version string

	// The state of the type on the current stream that carries it; reset
	// when a stream starts.
	nonce    string // nonce last received
	sent     bool   // a request of this type was sent
	dirty    bool   // the subscription changed since the last request
	changeAt uint64 // channel.responses when dirty was last set by a change: see holdChangesLocked
	// legacy: the type's first request on the stream subscribed to the
	// wildcard in its legacy form, an empty name list,
	// which old servers such as go-control-plane v0.14's snapshot cache
	// need: they take "*" for a name. An empty list keeps meaning the
	// wildcard on that stream, so it cannot say "nothing": when the
	// wildcard goes, the stream is restarted.
	legacy bool
	delta  deltaWire // the delta protocol's part
}

func newChannel(c *Client, sc *bootstrap.ServerConfig, key string, xds transport.XDS) *channel {
	ctx, cancel := context.WithCancel(c.ctx)
	ch := &channel{
		c:       c,
		sc:      sc,
		key:     key,
		xds:     xds,
		perType: xds.PerType(),
		ctx:     ctx,
		cancel:  cancel,
		logger:  c.logger.With(xdslog.KeyServerURI, sc.ServerURI),
		types:   make(map[string]*chanType),
		slots:   make(map[string]*slot),
	}
	if c.opts.delta || sc.DeltaADS() {
		ch.proto = &deltaProtocol{ch: ch}
	} else {
		ch.proto = &sotwProtocol{ch: ch}
	}
	return ch
}

// channelLocked returns the channel of server sc (key sc.Key()), creating
// it (and its transport) if needed: on first use, and again after the
// last one was retired because nothing it served was watched any more
// the transport (for gRPC, one connection) is kept until Close.
func (c *Client) channelLocked(sc *bootstrap.ServerConfig, key string) (*channel, error) {
	if ch, ok := c.channels[key]; ok {
		return ch, nil
	}
	x := c.transports[key]
	if x == nil {
		var err error
		if x, err = c.builder.Build(sc, c.buildOptions(sc)); err != nil {
			return nil, fmt.Errorf("%w: building transport to %s: %w", ErrConnection, sc.ServerURI, err)
		}
		c.transports[key] = x
	}
	ch := newChannel(c, sc, key, x)
	c.channels[key] = ch
	return ch, nil
}

// typeLocked returns the state of typ, creating it on first use.
func (ch *channel) typeLocked(typ resources.ResourceType) *chanType {
	ct := ch.types[typ.TypeURL()]
	if ct == nil {
		ct = &chanType{typ: typ}
		ch.types[typ.TypeURL()] = ct
	}
	return ct
}

// subscribedNamesLocked returns the names ct's subscription asks for,
// sorted: the names every attached authority watches, its glob
// collections and, if one subscribes it, the wildcard "*" (which sorts
// first). The slice is shared and must not be modified.
func (ch *channel) subscribedNamesLocked(ct *chanType) []string {
	if ct.names != nil {
		return ct.names
	}
	n := 0
	for _, a := range ch.auths {
		if tc := a.types[ct.typ.TypeURL()]; tc != nil {
			n += tc.watched + len(tc.globs) + 1
		}
	}
	names := make([]string, 0, n)
	wildcard := false
	for _, a := range ch.auths {
		tc := a.types[ct.typ.TypeURL()]
		if tc == nil {
			continue
		}
		wildcard = wildcard || len(tc.wildcard) > 0
		for g := range tc.globs {
			names = append(names, g)
		}
		if tc.watched == 0 {
			continue
		}
		for name, e := range tc.entries {
			if len(e.watchers) > 0 {
				names = append(names, name)
			}
		}
	}
	if wildcard {
		names = append(names, wildcardName)
	}
	slices.Sort(names)
	ct.names = names
	return names
}

// subscribedLocked reports whether an attached authority subscribes to
// anything of typeURL.
func (ch *channel) subscribedLocked(typeURL string) bool {
	for _, a := range ch.auths {
		if tc := a.types[typeURL]; tc != nil && tc.subscribed() {
			return true
		}
	}
	return false
}

// wildcardLocked reports whether an attached authority subscribes to the
// wildcard of typeURL.
func (ch *channel) wildcardLocked(typeURL string) bool {
	for _, a := range ch.auths {
		if tc := a.types[typeURL]; tc != nil && len(tc.wildcard) > 0 {
			return true
		}
	}
	return false
}

// hasSubscriptionsLocked reports whether anything is subscribed.
func (ch *channel) hasSubscriptionsLocked() bool {
	for _, a := range ch.auths {
		for _, tc := range a.types {
			if tc.subscribed() {
				return true
			}
		}
	}
	return false
}

// servedLocked yields the entries of typeURL that ch serves: those of
// the authorities whose active server it is.
func (ch *channel) servedLocked(typeURL string, yield func(*entry)) {
	for _, a := range ch.auths {
		if !a.serves(ch) {
			continue
		}
		if tc := a.types[typeURL]; tc != nil {
			for _, e := range tc.entries {
				yield(e)
			}
		}
	}
}

// attachLocked makes ch subscribe to what a subscribes (authority.go).
func (ch *channel) attachLocked(a *authority) {
	ch.auths = append(ch.auths, a)
	for _, t := range ch.c.registry.Types() {
		tc := a.types[t.TypeURL()]
		if tc == nil || !tc.subscribed() {
			continue
		}
		for _, name := range a.subscribedNamesLocked(tc) {
			ch.noteChangeLocked(t, name, true)
		}
		ch.settleLocked(t, "", true)
	}
}

// detachLocked makes ch stop subscribing to what a subscribes; entries of
// a that ch owed an unsubscription are forgotten by the caller.
func (ch *channel) detachLocked(a *authority) {
	i := slices.Index(ch.auths, a)
	if i < 0 {
		return
	}
	var names map[string][]string
	for _, t := range ch.c.registry.Types() {
		if tc := a.types[t.TypeURL()]; tc != nil && tc.subscribed() {
			if names == nil {
				names = make(map[string][]string)
			}
			names[t.TypeURL()] = a.subscribedNamesLocked(tc)
		}
	}
	ch.auths = slices.Delete(ch.auths, i, i+1)
	if ch.retired {
		return
	}
	for _, t := range ch.c.registry.Types() {
		ns, ok := names[t.TypeURL()]
		if !ok {
			continue
		}
		for _, name := range ns {
			ch.noteChangeLocked(t, name, false)
		}
		if ch.retired {
			return
		}
		ch.settleLocked(t, wildcardName, false)
	}
}

// subscribedNamesLocked returns the names a subscribes of tc's type: its
// watched names, glob collections and the wildcard, in no order.
func (a *authority) subscribedNamesLocked(tc *typeCache) []string {
	var names []string
	if len(tc.wildcard) > 0 {
		names = append(names, wildcardName)
	}
	for g := range tc.globs {
		names = append(names, g)
	}
	for name, e := range tc.entries {
		if len(e.watchers) > 0 {
			names = append(names, name)
		}
	}
	return names
}

// changedLocked records that name joined (subscribed) or left what an
// attached authority subscribes of typ, marks the type for a request and
// wakes the stream that carries it, starting it when it is not running.
// When nothing is subscribed any more, the channel is retired.
func (ch *channel) changedLocked(typ resources.ResourceType, name string, subscribed bool) {
	ch.noteChangeLocked(typ, name, subscribed)
	ch.settleLocked(typ, name, subscribed)
}

// noteChangeLocked records a change of the subscription of typ for the
// next request.
func (ch *channel) noteChangeLocked(typ resources.ResourceType, name string, subscribed bool) {
	ct := ch.typeLocked(typ)
	ch.proto.changedLocked(ct, name, subscribed)
	ch.markDirtyLocked(ct)
	ct.names = nil
}

// markDirtyLocked marks ct for a request.
func (ch *channel) markDirtyLocked(ct *chanType) {
	if !ct.dirty {
		ct.dirty, ct.changeAt = true, ch.responses
	}
}

// settleLocked acts on a change of the subscription of typ: it starts the
// stream that carries typ, retires the channel (or, with one stream per
// type, the type's stream) when nothing is subscribed any more, restarts
// the stream when a legacy wildcard went (chanType.legacy), and wakes the
// stream for the request.
func (ch *channel) settleLocked(typ resources.ResourceType, name string, subscribed bool) {
	if ch.retired || ch.c.closed {
		return
	}
	s := ch.slotLocked(typ.TypeURL())
	if subscribed {
		s.startLocked()
		s.kick()
		return
	}
	if !ch.hasSubscriptionsLocked() {
		ch.retireLocked()
		return
	}
	ct := ch.types[typ.TypeURL()]
	switch {
	case ch.perType && !ch.subscribedLocked(typ.TypeURL()):
		s.retireLocked()
		return
	case name == wildcardName && ct != nil && ct.legacy && !ch.wildcardLocked(typ.TypeURL()):
		s.restartLocked()
		return
	}
	s.kick()
}

// retireLocked ends the channel, whose last subscription just went: its
// streams are closed, which unsubscribes from everything at
// once, and the entries it owed an unsubscription are dropped. The next
// watch of the server makes a new channel.
func (ch *channel) retireLocked() {
	c := ch.c
	ch.retired = true
	if c.channels[ch.key] == ch {
		delete(c.channels, ch.key)
	}
	for _, s := range ch.slots {
		s.retireLocked()
	}
	for _, ct := range ch.types {
		ch.dropPendingLocked(ct, ct.takePendingLocked())
	}
	for _, a := range slices.Clone(ch.auths) {
		a.detachLocked(ch)
		a.tidyLocked()
	}
	ch.cancel()
	ch.logger.Info("nothing is watched on this management server any more: closing its streams")
}

// pendingLocked records that e, which ch serves, lost its last watcher
// (or the collection that held it): the next request of its type
// unsubscribes it. An entry already pending is listed once.
func (ch *channel) pendingLocked(e *entry) {
	if e.pending {
		return
	}
	ct := ch.typeLocked(e.typ)
	e.pending = true
	ct.pending = append(ct.pending, e)
}

// takePendingLocked returns the entries the request being built
// unsubscribes from, for outgoing.drop, and empties ct.pending. An entry
// that lost its last watcher and was watched again before the build is
// left out (so is one a collection wants again, cached): the request
// names it, so writing it unsubscribes nothing. Were it kept, an entry
// that loses its watcher again after the build, whose unsubscription
// belongs to the next request, would be dropped when this one is written,
// while the server still has the name subscribed and will not send it
// again: a re-watch would then wait for nothing. The entries
// returned stay pending until dropPendingLocked settles them.
func (ct *chanType) takePendingLocked() []*entry {
	drop := ct.pending[:0]
	for _, e := range ct.pending {
		tc := e.auth.types[e.typ.TypeURL()]
		if !e.pending || tc.entries[e.name] != e {
			continue
		}
		if len(e.watchers) > 0 || (e.value != nil && tc.wantsLocked(e.name)) {
			e.pending = false
			continue
		}
		drop = append(drop, e)
	}
	ct.pending = nil
	return drop
}

// dropPendingLocked forgets the entries of drop that are still unwatched,
// once the request that unsubscribes them was written or can no longer
// matter. An entry watched again meanwhile stays (evUnsubWritten:
// the server may answer the unsubscription); so does a cached one that a
// collection wants.
func (ch *channel) dropPendingLocked(ct *chanType, drop []*entry) {
	for _, e := range drop {
		tc := e.auth.types[e.typ.TypeURL()]
		if tc == nil || tc.entries[e.name] != e {
			continue
		}
		e.pending = false
		if len(e.watchers) > 0 {
			if e.auth.serves(ch) {
				ch.c.transitionLocked(e, evUnsubWritten, nil, nil)
			}
			continue
		}
		ch.c.releaseLocked(e)
	}
}

// connectivityFailure tells every watcher of the resources ch serves, of
// the types s carries, that the stream failed before any response:
// ResourceError when there is no cached value, AmbientError otherwise
// . WatchAll watchers get one AmbientError naming "*", glob
// watchers one naming the glob. These calls are not flow controlled
// . The authorities that fall back to their next server now
// are not told.
func (ch *channel) connectivityFailure(s *slot, err error) {
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	ch.serverFailedLocked()
	fell := ch.fallbackLocked(s)
	cerr := fmt.Errorf("%w: %s, server %s: %w", ErrConnection, s.name(), ch.sc.ServerURI, err)
	for _, t := range c.registry.Types() {
		if !s.carries(t.TypeURL()) {
			continue
		}
		var es []*entry
		var colls []*typeCache
		for _, a := range ch.auths {
			if !a.serves(ch) || fell[a] {
				continue
			}
			tc := a.types[t.TypeURL()]
			if tc == nil {
				continue
			}
			for _, e := range tc.entries {
				es = append(es, e)
			}
			colls = append(colls, tc)
		}
		slices.SortFunc(es, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
		for _, e := range es {
			rerr := c.resourceError(e.typ, e.name, cerr)
			for _, we := range e.watchers {
				if e.value == nil {
					c.scheduleLocked(we, nil, func(done func()) { we.resErr(rerr, done) })
				} else {
					c.scheduleLocked(we, nil, func(done func()) { we.ambErr(rerr, done) })
				}
			}
		}
		for _, tc := range colls {
			werr := c.resourceError(tc.typ, wildcardName, cerr)
			for _, we := range tc.wildcard {
				c.scheduleLocked(we, nil, func(done func()) { we.ambErr(werr, done) })
			}
			for _, g := range sortedKeys(tc.globs) {
				gerr := c.resourceError(tc.typ, g, cerr)
				for _, we := range tc.globs[g] {
					c.scheduleLocked(we, nil, func(done func()) { we.ambErr(gerr, done) })
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
