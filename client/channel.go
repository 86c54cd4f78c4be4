// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"slices"

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
	// of the type was built: owed (guardOwed). The request built next,
	// which no longer names them, takes those still owed (outgoing.drop,
	// takePendingLocked), and they are dropped once it is written, unless
	// watched again meanwhile: until then a new watch of the name gets
	// the cached state, since the server, which never heard of the
	// unsubscription, will not send it again.
	pending []*entry
	// version is the version_info last ACKed (SotW); kept across streams
	//
	version string
	// answered: a stream of the channel accepted a response of the type
	// (awaitingLocked).
	answered bool

	// The state of the type on the current stream that carries it; reset
	// when a stream starts.
	nonce    string // nonce last received
	sent     bool   // a request of this type was sent
	dirty    bool   // the subscription changed since the last request
	changeAt uint64 // the responses count of the slot carrying the type when dirty was last set by a change: see holdChangesLocked
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
	url := ct.typ.TypeURL()
	n := 0
	for _, a := range ch.auths {
		n += a.subscribedCountLocked(url)
	}
	names := make([]string, 0, n)
	wildcard := false
	for _, a := range ch.auths {
		wildcard = wildcard || a.wildcardLocked(url)
		names = a.appendNamesLocked(names, url)
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
	return slices.ContainsFunc(ch.auths, func(a *authority) bool { return a.subscribesLocked(typeURL) })
}

// wildcardLocked reports whether an attached authority subscribes to the
// wildcard of typeURL.
func (ch *channel) wildcardLocked(typeURL string) bool {
	return slices.ContainsFunc(ch.auths, func(a *authority) bool { return a.wildcardLocked(typeURL) })
}

// hasSubscriptionsLocked reports whether anything is subscribed.
func (ch *channel) hasSubscriptionsLocked() bool {
	return slices.ContainsFunc(ch.auths, (*authority).subscribesAnythingLocked)
}

// servedLocked yields the entries of typeURL of the authorities ch
// serves (authority.servingLocked).
func (ch *channel) servedLocked(typeURL string) iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, a := range ch.auths {
			if !a.servesLocked(ch) {
				continue
			}
			for e := range a.entriesLocked(typeURL) {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// attachLocked makes ch subscribe to what a subscribes (authority.go).
func (ch *channel) attachLocked(a *authority) {
	ch.auths = append(ch.auths, a)
	for _, t := range ch.c.registry.Types() {
		if !a.subscribesLocked(t.TypeURL()) {
			continue
		}
		for _, name := range a.subscribedNamesLocked(t.TypeURL()) {
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
		if a.subscribesLocked(t.TypeURL()) {
			if names == nil {
				names = make(map[string][]string)
			}
			names[t.TypeURL()] = a.subscribedNamesLocked(t.TypeURL())
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
	if ct.dirty {
		return
	}
	ct.dirty, ct.changeAt = true, 0
	if s := ch.slots[ch.slotKey(ct.typ.TypeURL())]; s != nil {
		ct.changeAt = s.responses
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
		ch.dropPendingLocked(ch.takePendingLocked(ct))
	}
	for _, a := range slices.Clone(ch.auths) {
		a.detachLocked(ch)
		a.tidyLocked()
	}
	ch.cancel()
	ch.logger.Info("nothing is watched on this management server any more: closing its streams")
}

// pendingLocked records that e, which ch serves, lost its last watcher
// (or the collection that held it) and is owed (guardOwed): the next
// request of its type unsubscribes it. An entry watched again
// and unwatched again before that request is built may be listed twice;
// the second is skipped once the first settled.
func (ch *channel) pendingLocked(e *entry) {
	ct := ch.typeLocked(e.typ)
	ct.pending = append(ct.pending, e)
}

// takePendingLocked returns the entries the request being built
// unsubscribes from, for outgoing.drop, and empties ct.pending: those
// still owed. An entry watched again before the build is left out (so is
// one a collection wants again, cached: evKept): the request names it, so
// writing it unsubscribes nothing. Were it kept, an entry that loses its
// watcher again after the build, whose unsubscription belongs to the next
// request, would be dropped when this one is written, while the server
// still has the name subscribed and will not send it again: a re-watch
// would then wait for nothing. The entries returned stay owed
// until dropPendingLocked settles them.
func (ch *channel) takePendingLocked(ct *chanType) []*entry {
	drop := ct.pending[:0]
	for _, e := range ct.pending {
		if !e.guard.owed() || !e.auth.holdsLocked(e) {
			continue
		}
		if e.value != nil && e.auth.wantsLocked(e.typ.TypeURL(), e.name) {
			ch.c.stepLocked(e, evKept, &input{}, nil)
			continue
		}
		drop = append(drop, e)
	}
	ct.pending = nil
	return drop
}

// dropPendingLocked settles the entries of drop once the request that
// unsubscribes them was written, or can no longer matter: one
// still owed goes, unless a collection keeps its cached value; one
// watched again meanwhile stays, guarded (the server may answer the
// unsubscription, evUnsubWritten).
func (ch *channel) dropPendingLocked(drop []*entry) {
	for _, e := range drop {
		if !e.auth.holdsLocked(e) {
			continue
		}
		if e.guard.owed() || (len(e.watchers) > 0 && e.auth.servesLocked(ch)) {
			ch.c.stepLocked(e, evUnsubWritten, &input{}, nil)
		}
	}
}

// connectivityFailure tells every watcher of the resources ch serves, of
// the types s carries, that the stream failed: ResourceError
// when there is no cached value, AmbientError otherwise. WatchAll
// watchers get one AmbientError naming "*", glob watchers one naming the
// glob. These calls are not flow controlled. The authorities
// that fall back to their next server now are not told.
func (ch *channel) connectivityFailure(s *slot, err error) {
	c := ch.c
	c.mu.Lock()
	defer c.unlockAndRecord() // the server failure
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
		var told []*authority
		var es []*entry
		for _, a := range ch.auths {
			if !a.servesLocked(ch) || fell[a] {
				continue
			}
			told = append(told, a)
			es = slices.AppendSeq(es, a.entriesLocked(t.TypeURL()))
		}
		c.tellFailureLocked(t, es, told, cerr)
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
