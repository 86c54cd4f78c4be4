// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
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

// typeLocked returns the cache of typ, creating it on first use.
func (a *authority) typeLocked(typ resources.ResourceType) *typeCache {
	tc := a.types[typ.TypeURL()]
	if tc == nil {
		tc = &typeCache{typ: typ, entries: make(map[string]*entry)}
		a.types[typ.TypeURL()] = tc
	}
	return tc
}

// entryLocked returns the cache entry of the resource of type typeURL named
// name, or nil.
func (c *Client) entryLocked(typeURL, name string) *entry {
	a := c.knownAuthorityLocked(name)
	if a == nil {
		return nil
	}
	if tc := a.types[typeURL]; tc != nil {
		return tc.entries[name]
	}
	return nil
}

// servingLocked returns the channel of the active server, nil when it has
// none (it could not be built).
func (a *authority) servingLocked() *channel {
	ch := a.c.channels[a.keys[a.active]]
	if ch != nil && slices.Contains(a.chans, ch) {
		return ch
	}
	return nil
}

// serves reports whether ch is a's active server.
func (a *authority) serves(ch *channel) bool { return a.keys[a.active] == ch.key && !ch.retired }

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

// newEntryLocked adds a new entry for name to tc, in phase p.
func (a *authority) newEntryLocked(tc *typeCache, name string, p phase) *entry {
	e := &entry{typ: tc.typ, name: name, auth: a, phase: p}
	tc.entries[name] = e
	return e
}

// dropEntryLocked forgets e: it leaves the cache.
func (c *Client) dropEntryLocked(e *entry) {
	e.stopTimerLocked()
	e.stopTTLLocked()
	e.pending = false
	tc := e.auth.types[e.typ.TypeURL()]
	if tc == nil || tc.entries[e.name] != e {
		return
	}
	delete(tc.entries, e.name)
	e.auth.tidyLocked()
}

// releaseLocked forgets e unless something keeps it: a watcher, an
// unsubscription not written yet, or a collection of its
// authority that holds its cached value.
func (c *Client) releaseLocked(e *entry) {
	if len(e.watchers) > 0 || e.pending {
		return
	}
	if e.value != nil && e.auth.types[e.typ.TypeURL()].wantsLocked(e.name) {
		return
	}
	c.dropEntryLocked(e)
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
		if !a.serves(ch) || a.active+1 >= len(a.servers) || !a.unansweredLocked(s) {
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
		for _, tc := range a.types {
			for _, e := range tc.entries {
				if len(e.watchers) == 0 && e.pending {
					// Unwatched, its unsubscription not written yet: the
					// server it was unsubscribed from goes.
					c.dropEntryLocked(e)
				}
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
