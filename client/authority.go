// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// This file holds the authority: one list of management servers of the
// bootstrap (the top-level xds_servers, or an xDS authority's own, R-5.1)
// and THE cache of the resources whose names map to it. Authorities of
// the bootstrap that name the same servers share one. An authority falls
// back and reverts between its servers on its own (gRFC A71, R-15):
//
// A resource is served by its authority's active server: the responses of
// that server's stream update it, and that stream's failures are reported
// to its watchers. Every server of the list from the first (the primary)
// to the active one subscribes to everything the authority subscribes
// (its watched names, its WatchAll wildcard and glob collections): the
// higher-priority servers keep being retried, each with the full
// subscription, so that reverting requests everything the authority
// watches, what was first watched during fallback included. The channels
// of those servers are the authority's attached channels.
//
// Fallback: when the active server's stream fails before any response
// and before it was healthy while a watched resource of
// the authority was never received, and the list has a next server, that server becomes active
// and subscribes to everything, and the watchers hear nothing of the
// failure. Cached values stay in use until the new
// server replaces or deletes them. With every watched resource cached,
// there is no fallback (gRFC A71), and watchers get the failure as usual.
//
// Revert: the first response a higher-priority server's stream accepts
// makes it active again, before the response is applied; the
// lower-priority servers detach at once, unsubscribing what the authority
// subscribed there, and a channel left with nothing is retired, its
// stream closed. While a lower-priority server is active, the
// higher-priority ones are retried at least every revertRetryInterval.
//
// WatchAll (the wildcard of the top-level servers) and glob collections
// are subscriptions of their authority like watched names: they follow
// its fallback and revert.
//
// An authority with nothing cached and nothing subscribed starts over from
// its primary: the next watch asks the primary alone.

// revertRetryInterval caps the backoff of a server while a lower-priority
// server of one of its authorities is active (see above).
const revertRetryInterval = 5 * time.Second

// authority is one server list and its cache. Guarded by Client.mu,
// except c, servers and keys, which are read-only.
type authority struct {
	c       *Client
	servers []*bootstrap.ServerConfig // in priority order
	keys    []string                  // servers[i].Key()

	active  int                   // index in servers of the server in use
	reached bool                  // a server of the list accepted a response since New (persist.go)
	types   map[string]*typeCache // by type URL; created on first use
	chans   []*channel            // attached: the channels of servers 0..active that exist, deduplicated, in priority order
}

// typeCache is an authority's cache and subscriptions of one type.
// Guarded by Client.mu.
type typeCache struct {
	typ resources.ResourceType // read-only
	// entries is the cache: see entry.
	entries map[string]*entry
	// watched counts the entries with watchers: their names are
	// subscribed.
	watched int
	// wildcard are the WatchAll watchers; the wildcard is subscribed while
	// it is not empty. Only the authority of the top-level servers has
	// them.
	wildcard []*watchEntry
	// globs are the watchers of xdstp glob collections, by glob name
	// (glob.go); each name is subscribed while it has watchers.
	globs map[string][]*watchEntry
}

// subscribed reports whether anything of the type is subscribed.
func (tc *typeCache) subscribed() bool {
	return tc.watched > 0 || len(tc.wildcard) > 0 || len(tc.globs) > 0
}

// wantsLocked reports whether a received resource named name is wanted
// without a watch of its own: the wildcard is subscribed, or a watched glob
// collection holds it.
func (tc *typeCache) wantsLocked(name string) bool {
	if len(tc.wildcard) > 0 {
		return true
	}
	for g := range tc.globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// collectionWatchersLocked returns the WatchAll watchers of tc and the
// watchers of the glob collections that hold name, in glob name order.
func (tc *typeCache) collectionWatchersLocked(name string) []*watchEntry {
	if len(tc.globs) == 0 {
		return tc.wildcard
	}
	out := slices.Clone(tc.wildcard)
	for _, g := range sortedKeys(tc.globs) {
		if globMatch(g, name) {
			out = append(out, tc.globs[g]...)
		}
	}
	return out
}

// listKey identifies a server list of the (immutable) bootstrap config.
type listKey struct {
	first *bootstrap.ServerConfig
	n     int
}

// authorityForLocked returns the authority of name: the top-level
// servers for old-style names, the servers of their authority for xdstp
// names; created on first use. A malformed xdstp name or an authority the
// bootstrap does not define is an error wrapping ErrUnsupported.
func (c *Client) authorityForLocked(name string) (*authority, error) {
	servers := c.cfg.Servers
	if strings.HasPrefix(name, "xdstp:") {
		n, err := resources.ParseName(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		if a := c.xdstp[n.Authority]; a != nil {
			return a, nil
		}
		servers, err = c.cfg.ServersForAuthority(n.Authority)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		if len(servers) == 0 {
			return nil, fmt.Errorf("%w: no management server for %q", ErrUnsupported, name)
		}
		a := c.authorityOfLocked(servers)
		// n.Authority is part of name: the key must own its bytes.
		c.xdstp[strings.Clone(n.Authority)] = a
		return a, nil
	}
	return c.authorityOfLocked(servers), nil
}

// knownAuthorityLocked returns the authority of name if one exists (a
// watch made it, or it is that of the same servers), else nil: the
// lookup of received resources. It never makes an authority and keeps
// nothing of name, which may be a view of a response's bytes (view). It
// does not parse the whole name.
func (c *Client) knownAuthorityLocked(name string) *authority {
	rest, ok := strings.CutPrefix(name, "xdstp://")
	if !ok {
		return c.top
	}
	auth, _, _ := strings.Cut(rest, "/")
	if a := c.xdstp[auth]; a != nil {
		return a
	}
	// An authority no watch named yet, whose servers may be those of an
	// authority in use (the top-level servers', whose wildcard receives
	// xdstp names too).
	servers, err := c.cfg.ServersForAuthority(auth)
	if err != nil || len(servers) == 0 {
		return nil
	}
	return c.auths[listKey{servers[0], len(servers)}]
}

// authorityOfLocked returns the authority of servers, a list of the
// bootstrap config, creating it on first use.
func (c *Client) authorityOfLocked(servers []*bootstrap.ServerConfig) *authority {
	key := listKey{servers[0], len(servers)}
	if a := c.auths[key]; a != nil {
		return a
	}
	a := &authority{c: c, servers: servers, keys: make([]string, len(servers)), types: make(map[string]*typeCache)}
	for i, sc := range servers {
		a.keys[i] = sc.Key()
	}
	c.auths[key] = a
	if key == (listKey{c.cfg.Servers[0], len(c.cfg.Servers)}) {
		c.top = a
	}
	return a
}

// entryLocked returns the entry of the resource of type typeURL named
// name, in the authority its name maps to, or nil.
func (c *Client) entryLocked(typeURL, name string) *entry {
	if a := c.knownAuthorityLocked(name); a != nil {
		return a.entryLocked(typeURL, name)
	}
	return nil
}

// The authority owns access to its cache: the code of other files finds,
// adds, walks and drops entries through the methods below, and asks them
// whether an entry is still cached (holdsLocked) and which channel serves
// the authority (servingLocked).

// typeLocked returns the cache of typ, creating it on first use.
func (a *authority) typeLocked(typ resources.ResourceType) *typeCache {
	tc := a.types[typ.TypeURL()]
	if tc == nil {
		tc = &typeCache{typ: typ, entries: make(map[string]*entry)}
		a.types[typ.TypeURL()] = tc
	}
	return tc
}

// cacheLocked returns the cache of typeURL, nil when a has none.
func (a *authority) cacheLocked(typeURL string) *typeCache { return a.types[typeURL] }

// entryLocked returns the entry of the resource of type typeURL named
// name, or nil.
func (a *authority) entryLocked(typeURL, name string) *entry {
	return a.types[typeURL].entryLocked(name)
}

// entryLocked returns the entry of name, or nil; tc may be nil.
func (tc *typeCache) entryLocked(name string) *entry {
	if tc == nil {
		return nil
	}
	return tc.entries[name]
}

// holdsLocked reports whether e is still in a's cache: not dropped, nor
// replaced by a new entry of its name. Every "is it still cached?" of the
// client asks it.
func (a *authority) holdsLocked(e *entry) bool {
	return a.entryLocked(e.typ.TypeURL(), e.name) == e
}

// newEntryLocked adds a new entry for name to tc (a cache of a), in
// stRequested.
func (a *authority) newEntryLocked(tc *typeCache, name string) *entry {
	e := &entry{typ: tc.typ, name: name, auth: a, state: stRequested}
	tc.entries[name] = e
	return e
}

// entriesLocked yields the entries of typeURL, in no order.
func (a *authority) entriesLocked(typeURL string) iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		tc := a.types[typeURL]
		if tc == nil {
			return
		}
		for _, e := range tc.entries {
			if !yield(e) {
				return
			}
		}
	}
}

// allEntriesLocked yields every entry of a, in no order.
func (a *authority) allEntriesLocked() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, tc := range a.types {
			for _, e := range tc.entries {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// sortedEntriesLocked returns the entries of typeURL, sorted by name.
func (a *authority) sortedEntriesLocked(typeURL string) []*entry {
	es := slices.Collect(a.entriesLocked(typeURL))
	slices.SortFunc(es, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
	return es
}

// sortedEntriesLocked returns the cache entries of type typeURL, of every
// authority, sorted by name.
func (c *Client) sortedEntriesLocked(typeURL string) []*entry {
	var out []*entry
	for _, a := range c.auths {
		out = slices.AppendSeq(out, a.entriesLocked(typeURL))
	}
	slices.SortFunc(out, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
	return out
}

// stopTimersLocked stops the timers of every entry of a (Close).
func (a *authority) stopTimersLocked() {
	for e := range a.allEntriesLocked() {
		e.stopTimerLocked()
		e.stopTTLLocked()
	}
}

// watchLocked adds we to the watchers of the resource typ/name, making its
// entry as needed, and reports whether it is the first: the name then
// joins what a subscribes.
func (a *authority) watchLocked(typ resources.ResourceType, name string, we *watchEntry) (e *entry, first bool) {
	tc := a.typeLocked(typ)
	if e = tc.entries[name]; e == nil {
		e = a.newEntryLocked(tc, name)
	}
	e.watchers = append(e.watchers, we)
	if len(e.watchers) == 1 {
		tc.watched++
		return e, true
	}
	return e, false
}

// unwatchLocked removes we from the watchers of e and reports whether it
// was the last of an entry still cached, the client being open: the name
// then leaves what a subscribes.
func (a *authority) unwatchLocked(e *entry, we *watchEntry) (last bool) {
	if !a.removeWatchLocked(&e.watchers, we) || !a.holdsLocked(e) {
		return false
	}
	a.types[e.typ.TypeURL()].watched--
	return true
}

// watchCollectionLocked adds we to the watchers of the collection name
// of typ (the wildcard "*", or a glob collection) and reports whether it
// is the first: the collection then joins what a subscribes.
func (a *authority) watchCollectionLocked(typ resources.ResourceType, name string, we *watchEntry) (first bool) {
	tc := a.typeLocked(typ)
	if name == wildcardName {
		tc.wildcard = append(tc.wildcard, we)
		return len(tc.wildcard) == 1
	}
	if tc.globs == nil {
		tc.globs = make(map[string][]*watchEntry)
	}
	tc.globs[name] = append(tc.globs[name], we)
	return len(tc.globs[name]) == 1
}

// unwatchCollectionLocked removes we from the watchers of the collection
// name of typeURL and reports whether it was the last, the client being
// open: the collection then leaves what a subscribes.
func (a *authority) unwatchCollectionLocked(typeURL, name string, we *watchEntry) (last bool) {
	tc := a.types[typeURL]
	if name == wildcardName {
		return a.removeWatchLocked(&tc.wildcard, we)
	}
	ws := tc.globs[name]
	last = a.removeWatchLocked(&ws, we)
	if len(ws) > 0 {
		tc.globs[name] = ws
	} else {
		delete(tc.globs, name)
	}
	return last
}

// hasCollectionsLocked reports whether a collection of typeURL is
// subscribed: the wildcard, or a glob collection.
func (a *authority) hasCollectionsLocked(typeURL string) bool {
	tc := a.types[typeURL]
	return tc != nil && (len(tc.wildcard) > 0 || len(tc.globs) > 0)
}

// removeWatchLocked removes we from *ws and reports whether it was the
// last watch there, the client being open: the subscription then changes.
func (a *authority) removeWatchLocked(ws *[]*watchEntry, we *watchEntry) (last bool) {
	i := slices.Index(*ws, we)
	if i < 0 {
		return false
	}
	*ws = slices.Delete(*ws, i, i+1)
	return len(*ws) == 0 && !a.c.closed
}

// wantsLocked reports whether a received resource of typeURL named name
// is wanted without a watch of its own: a collection of a holds it.
func (a *authority) wantsLocked(typeURL, name string) bool {
	tc := a.types[typeURL]
	return tc != nil && tc.wantsLocked(name)
}

// watchersLocked returns the watchers of e: its own, in registration
// order, then the WatchAll and glob collection watchers of a that hold
// its name.
func (a *authority) watchersLocked(e *entry) []*watchEntry {
	tc := a.types[e.typ.TypeURL()]
	if tc == nil || (len(tc.wildcard) == 0 && len(tc.globs) == 0) {
		return e.watchers
	}
	coll := tc.collectionWatchersLocked(e.name)
	if len(coll) == 0 {
		return e.watchers
	}
	all := make([]*watchEntry, 0, len(e.watchers)+len(coll))
	return append(append(all, e.watchers...), coll...)
}

// releaseLocked forgets e unless something keeps it: a watcher, an
// unsubscription not written yet, or a collection of a that
// holds its cached value.
func (a *authority) releaseLocked(e *entry) {
	if len(e.watchers) > 0 || e.guard.owed() {
		return
	}
	if e.value != nil && a.wantsLocked(e.typ.TypeURL(), e.name) {
		return
	}
	a.dropEntryLocked(e)
}

// dropEntryLocked forgets e: it leaves the cache, its timers
// stopped; a left with nothing starts over (tidyLocked).
func (a *authority) dropEntryLocked(e *entry) {
	e.stopTimerLocked()
	e.stopTTLLocked()
	if !a.holdsLocked(e) {
		return
	}
	delete(a.types[e.typ.TypeURL()].entries, e.name)
	a.tidyLocked()
}

// Subscriptions, as the channels attached to a ask for them.

// subscribesLocked reports whether a subscribes to anything of typeURL.
func (a *authority) subscribesLocked(typeURL string) bool {
	tc := a.types[typeURL]
	return tc != nil && tc.subscribed()
}

// subscribesAnythingLocked reports whether a subscribes to anything.
func (a *authority) subscribesAnythingLocked() bool {
	for _, tc := range a.types {
		if tc.subscribed() {
			return true
		}
	}
	return false
}

// wildcardLocked reports whether a subscribes to the wildcard of typeURL.
func (a *authority) wildcardLocked(typeURL string) bool {
	tc := a.types[typeURL]
	return tc != nil && len(tc.wildcard) > 0
}

// subscribedCountLocked returns about how many names a subscribes of
// typeURL: its watched names, glob collections and one for the wildcard.
func (a *authority) subscribedCountLocked(typeURL string) int {
	tc := a.types[typeURL]
	if tc == nil {
		return 0
	}
	return tc.watched + len(tc.globs) + 1
}

// appendNamesLocked appends to names the names a subscribes of typeURL
// other than the wildcard: its glob collections and watched names, in no
// order.
func (a *authority) appendNamesLocked(names []string, typeURL string) []string {
	tc := a.types[typeURL]
	if tc == nil {
		return names
	}
	for g := range tc.globs {
		names = append(names, g)
	}
	if tc.watched == 0 {
		return names
	}
	for name, e := range tc.entries {
		if len(e.watchers) > 0 {
			names = append(names, name)
		}
	}
	return names
}

// subscribedNamesLocked returns the names a subscribes of typeURL: the
// wildcard first, if subscribed, then its glob collections and watched
// names, in no order.
func (a *authority) subscribedNamesLocked(typeURL string) []string {
	var names []string
	if a.wildcardLocked(typeURL) {
		names = append(names, wildcardName)
	}
	return a.appendNamesLocked(names, typeURL)
}

// eachCollectionLocked calls f with the name and watchers of each
// collection of typeURL that a subscribes: the wildcard ("*"), then the
// glob collections in name order.
func (a *authority) eachCollectionLocked(typeURL string, f func(name string, ws []*watchEntry)) {
	tc := a.types[typeURL]
	if tc == nil {
		return
	}
	if len(tc.wildcard) > 0 {
		f(wildcardName, tc.wildcard)
	}
	for _, g := range sortedKeys(tc.globs) {
		f(g, tc.globs[g])
	}
}

// servingLocked returns the channel that serves a: its active server's,
// attached to a; nil when it has none (it could not be built, or a
// starts over). The responses of its streams update a's resources, and
// their failures are reported to a's watchers. servesLocked asks it.
func (a *authority) servingLocked() *channel {
	ch := a.c.channels[a.keys[a.active]]
	if ch == nil || ch.retired || !slices.Contains(a.chans, ch) {
		return nil
	}
	return ch
}

// servesLocked reports whether ch is the channel that serves a.
func (a *authority) servesLocked(ch *channel) bool { return ch != nil && a.servingLocked() == ch }

// attachLocked attaches a to the channels of servers 0 to active,
// creating them as needed, so that each subscribes to what a subscribes.
// A channel that cannot be built is skipped (its server counts as down),
// unless it is the active server's: then the error is returned.
func (a *authority) attachLocked() error {
	c := a.c
	for i := 0; i <= a.active; i++ {
		ch, err := c.channelLocked(a.servers[i], a.keys[i])
		if err != nil {
			if i == a.active {
				return err
			}
			continue
		}
		if !slices.Contains(a.chans, ch) {
			a.chans = append(a.chans, ch)
			ch.attachLocked(a)
		}
	}
	return nil
}

// detachLocked detaches a from ch: ch no longer subscribes to what a
// subscribes, and drops what it owed a.
func (a *authority) detachLocked(ch *channel) {
	i := slices.Index(a.chans, ch)
	if i < 0 {
		return
	}
	a.chans = slices.Delete(a.chans, i, i+1)
	ch.detachLocked(a)
}

// subscriptionChangedLocked tells every attached channel that name (an
// entry's, "*" for the wildcard, or a glob) of type typ joined or left
// what a subscribes.
func (a *authority) subscriptionChangedLocked(typ resources.ResourceType, name string, subscribed bool) {
	// A channel may retire, and detach, when a name leaves: walk a copy,
	// on the stack for the usual few channels.
	var buf [4]*channel
	for _, ch := range append(buf[:0], a.chans...) {
		ch.changedLocked(typ, name, subscribed)
	}
}

// emptyLocked reports whether a caches and subscribes nothing.
func (a *authority) emptyLocked() bool {
	for _, tc := range a.types {
		if len(tc.entries) > 0 || tc.subscribed() {
			return false
		}
	}
	return true
}

// tidyLocked starts a over from its primary once it caches and subscribes
// nothing: its channels are detached, and the next watch attaches
// the primary alone, which falls back again at once if it is still down
// (its failure is not counted again, R-21.3); otherwise a re-watch would
// go to the lower-priority server and to the primary both, and a primary
// back meanwhile would see its value replaced by the other server's
// first, then revert. grpc-go's authority likewise closes its channels
// and starts over from its first server.
func (a *authority) tidyLocked() {
	if !a.emptyLocked() {
		return
	}
	for _, ch := range slices.Clone(a.chans) {
		a.detachLocked(ch)
	}
	a.active = 0
}

// fallbackLocked is called when the stream of ch for the types carried by
// s failed. Each authority ch serves that has a
// watched resource of those types never received and a next
// server makes that server active: it attaches there, subscribing to
// everything. It returns the authorities that fell back: their watchers
// are not told of the failure.
func (ch *channel) fallbackLocked(s *slot) map[*authority]bool {
	c := ch.c
	var fell map[*authority]bool
	for _, a := range slices.Clone(ch.auths) {
		if !a.servesLocked(ch) || a.active+1 >= len(a.servers) || !a.unansweredLocked(s) {
			continue
		}
		next, err := c.channelLocked(a.servers[a.active+1], a.keys[a.active+1])
		if err != nil {
			ch.logger.Warn("cannot fall back to the next management server", xdslog.KeyError, err)
			continue
		}
		if next == ch {
			continue // the same server listed twice: nothing to fall back to
		}
		a.active++
		if fell == nil {
			fell = make(map[*authority]bool)
		}
		fell[a] = true
		ch.logger.Warn("management server unreachable with resources never received: falling back to the next server",
			xdslog.KeyFallbackServerURI, next.sc.ServerURI)
		if !slices.Contains(a.chans, next) {
			a.chans = append(a.chans, next)
			next.attachLocked(a)
		}
	}
	return fell
}

// unansweredLocked reports whether a has a watched resource, of a type s
// carries, that no server of its list has sent (entry.unanswered).
func (a *authority) unansweredLocked(s *slot) bool {
	for url, tc := range a.types {
		if !s.carries(url) {
			continue
		}
		for _, e := range tc.entries {
			if e.unanswered() {
				return true
			}
		}
	}
	return false
}

// revertLocked is called when ch's stream accepted a response. Every
// authority in which ch ranks above the active server reverts to ch: its
// resources are served by ch, which subscribes them already, and the
// lower-priority channels detach (and are retired when left with nothing);
// the unsubscriptions they owed the authority are dropped with them.
// Every authority whose list holds ch is marked reached.
func (ch *channel) revertLocked() {
	c := ch.c
	for _, a := range c.auths {
		if !a.reached && slices.Contains(a.keys, ch.key) {
			a.reached = true
		}
		i := slices.Index(a.keys[:a.active], ch.key)
		if i < 0 || !slices.Contains(a.chans, ch) {
			continue
		}
		a.active = i
		ch.logger.Info("higher-priority management server reachable again: reverting to it")
		for _, lc := range slices.Clone(a.chans) {
			if j := slices.Index(a.keys, lc.key); j > i {
				a.detachLocked(lc)
			}
		}
		for e := range a.allEntriesLocked() {
			if e.guard.owed() {
				// Unwatched, its unsubscription not written yet: the
				// server it was unsubscribed from goes.
				a.dropEntryLocked(e)
			}
		}
	}
}

// standbyLocked reports whether ch ranks above the active server of one of
// its authorities: it is then retried at least every revertRetryInterval.
func (ch *channel) standbyLocked() bool {
	for _, a := range ch.auths {
		if slices.Contains(a.keys[:a.active], ch.key) {
			return true
		}
	}
	return false
}

// ResourceOrigin says where the cached value of a resource came from.
type ResourceOrigin struct {
	// ServerURI is the server_uri of the management server that sent the
	// value. With fallback (gRFC A71, R-15) it may be a lower-priority
	// server of the resource's server list.
	ServerURI string
	// Stale says the value was loaded from persistence (WithStore) because
	// no server could be reached, and no server has sent the resource
	// since.
	Stale bool
}

// ResourceOrigin returns the origin of the cached value of the resource of
// type typ named name (canonicalised like Watch's names), and false when
// nothing is cached for that name or typ is nil. typ is the type a watch
// names (resources.ClusterType; any type of the same type URL finds the
// same resource). Dump, and so the csds package, cannot say it: CSDS has
// no per-resource server field. It is safe for concurrent use.
func (c *Client) ResourceOrigin(typ resources.ResourceType, name string) (ResourceOrigin, bool) {
	if typ == nil {
		return ResourceOrigin{}, false
	}
	name = resources.CanonicalName(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(typ.TypeURL(), name)
	if e == nil || e.value == nil {
		return ResourceOrigin{}, false
	}
	return ResourceOrigin{ServerURI: e.fromURI(), Stale: e.stale()}, true
}
