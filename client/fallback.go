// SPDX-License-Identifier: Apache-2.0

package client

import (
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// This file implements fallback and revert between the management servers
// of one server list (gRFC A71, R-15): the top-level xds_servers, or an
// authority's own.
//
// A resource belongs to one server list (resourceState.list) and is
// served by the list's active server (resourceState.ch): the responses of
// that server's stream update it, and that stream's failures are reported
// to its watchers. Every server of the list from the first (the primary)
// to the active one subscribes to every watched resource of the list: the
// higher-priority servers keep being retried, each with its full
// subscription, so that reverting requests every watched resource from
// the server reverted to, those first watched during fallback included.
//
// Fallback: when the active server's stream fails before any response
// while a watched resource of the list was never received (no
// value and not known not to exist, R-15.2; a value served from
// persistence does not count), and the list has a next
// server, that server becomes active: its channel subscribes to every
// watched resource of the list, and the watchers hear nothing of the
// failure. Cached values stay in use until the new
// server replaces or deletes them. With every watched resource cached,
// there is no fallback (gRFC A71), and watchers get the failure as usual.
// When the last server fails, watchers get the connectivity error of
// once per failed stream of that server.
//
// Revert: the first response a higher-priority server's stream accepts
// makes it active again, before the response is applied; the
// lower-priority servers unsubscribe the list's resources at once, and a
// channel left with no subscription is retired, its stream closed
// . While a lower-priority server is active, the higher-priority
// ones are retried at least every revertRetryInterval, so that a revert
// follows a recovery within seconds whatever the backoff had reached.
//
// Each resource records the server its cached value came from
// (ResourceOrigin). A response applies only to the resources its server
// serves, so a SotW omission deletes only those. WatchAll is not subject to
// fallback: the wildcard stays on the server that was active when it was
// first watched.

// revertRetryInterval caps the backoff of a server while a lower-priority
// server of one of its lists is active (see above).
const revertRetryInterval = 5 * time.Second

// serverList is one list of management servers of the bootstrap config, in
// priority order: the top-level xds_servers or an authority's. Guarded by
// c.mu, except servers, which is read-only.
type serverList struct {
	servers []*bootstrap.ServerConfig
	keys    []string // servers[i].Key()
	active  int      // index in servers of the server in use
	reached bool     // a server of the list accepted a response since New (persist.go)
	entries int      // cache entries whose list this is
}

// listKey identifies a server list of the (immutable) bootstrap config.
type listKey struct {
	first *bootstrap.ServerConfig
	n     int
}

// serverListLocked returns the state of servers, a list of the bootstrap
// config, creating it on first use. Each list of the config falls back on
// its own, as each authority does in gRFC A71.
func (c *Client) serverListLocked(servers []*bootstrap.ServerConfig) *serverList {
	key := listKey{servers[0], len(servers)}
	if l := c.lists[key]; l != nil {
		return l
	}
	l := &serverList{servers: servers, keys: make([]string, len(servers))}
	for i, sc := range servers {
		l.keys[i] = sc.Key()
	}
	c.lists[key] = l
	return l
}

// channelsLocked returns the existing channels of l's servers 0 to
// l.active (nil for a server without one), in priority order.
func (c *Client) channelsLocked(l *serverList) []*channel {
	chs := make([]*channel, l.active+1)
	for i := range chs {
		chs[i] = c.channels[l.keys[i]]
	}
	return chs
}

// subscribeAllLocked subscribes rs, which just got its first watcher, on
// the channel of every server of its list from the primary to the active
// one, creating channels as needed (rs.ch is the active one). A channel
// that cannot be built is skipped: its server counts as down.
func (c *Client) subscribeAllLocked(rs *resourceState) {
	l := rs.list
	if l == nil {
		rs.ch.subscribeLocked(rs)
		return
	}
	for i := 0; i <= l.active; i++ {
		ch := rs.ch
		if i != l.active {
			var err error
			if ch, err = c.channelLocked(l, i); err != nil {
				continue
			}
		}
		ch.subscribeLocked(rs)
	}
}

// adoptLocked gives rs, an entry received through a WatchAll or a glob
// collection (it has no server list) that gets its first watch by name,
// the server list of its name, when rs is served by that list's active
// server: the named watch then follows the list's fallback and revert
// as any other. An entry served by another server (a wildcard
// that stayed on a server no longer active, R-15.8) stays as it is.
func (c *Client) adoptLocked(rs *resourceState) {
	l, err := c.listForLocked(rs.name)
	if err == nil && l.keys[l.active] == rs.ch.key && c.channels[rs.ch.key] == rs.ch {
		rs.list = l
		l.entries++
	}
}

// unsubscribeAllLocked unsubscribes rs, which lost its last watcher, on
// every channel that subscribes it.
func (c *Client) unsubscribeAllLocked(rs *resourceState) {
	var buf [2]*channel
	for _, ch := range c.appendHoldersLocked(buf[:0], rs) {
		ch.unsubscribeLocked(rs)
	}
}

// appendHoldersLocked appends to out the channels whose cache holds rs: its
// serving channel and, for a list, the others of the list that subscribe
// it. Callers pass a small array's slice: one entry or two is the common
// case, and then nothing is allocated.
func (c *Client) appendHoldersLocked(out []*channel, rs *resourceState) []*channel {
	has := func(ch *channel) bool {
		ts := ch.types[rs.typ.TypeURL()]
		return ts != nil && ts.entries[rs.name] == rs
	}
	if rs.list != nil {
		for _, key := range rs.list.keys {
			if ch := c.channels[key]; ch != nil && has(ch) {
				out = append(out, ch)
			}
		}
	}
	if rs.ch != nil && has(rs.ch) && !containsChannel(out, rs.ch) {
		out = append(out, rs.ch)
	}
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func containsChannel(chs []*channel, ch *channel) bool {
	for _, c := range chs {
		if c == ch {
			return true
		}
	}
	return false
}

// neverReceived reports whether rs is watched and was never received: no
// value, and not known not to exist or to be invalid.
func (rs *resourceState) neverReceived() bool {
	return len(rs.watchers) > 0 && rs.value == nil && rs.status == statusRequested
}

// unanswered reports whether rs is watched and no server of its list has
// sent it: never received, only served from persistence,
// or expired. A stale value does not stop fallback: it is what the
// client serves while no server of the list answers, not an answer; nor
// does a value whose TTL ran out while its server was unreachable: it is
// no longer cached (gRFC A71 falls back for resources not cached).
func (rs *resourceState) unanswered() bool {
	return rs.neverReceived() || (len(rs.watchers) > 0 && (rs.stale || rs.ttlExpired))
}

// fallbackLocked is called when ch's stream failed before any response.
// For each list whose active server is ch and which has a watched resource
// never received and a next server, it makes the next server active and
// subscribes the list's watched resources there. It returns the lists
// that fell back: their resources are not told of the failure.
func (ch *channel) fallbackLocked() map[*serverList]bool {
	c := ch.c
	need := make(map[*serverList]bool)
	for _, ts := range ch.types {
		for _, rs := range ts.entries {
			if l := rs.list; l != nil && rs.ch == ch && l.active+1 < len(l.servers) && rs.unanswered() {
				need[l] = true
			}
		}
	}
	fell := make(map[*serverList]bool)
	for l := range need {
		next, err := c.channelLocked(l, l.active+1)
		if err != nil {
			ch.logger.Warn("cannot fall back to the next management server", xdslog.KeyError, err)
			continue
		}
		if next == ch {
			continue // the same server listed twice: nothing to fall back to
		}
		l.active++
		fell[l] = true
		ch.logger.Warn("management server unreachable with resources never received: falling back to the next server",
			"fallback_server_uri", next.sc.ServerURI)
		for _, rs := range c.allEntriesLocked() { // a copy: entries change servers
			if rs.list != l || len(rs.watchers) == 0 {
				continue
			}
			rs.ch = next
			next.subscribeLocked(rs)
		}
	}
	return fell
}

// entryDroppedLocked is called when rs leaves the cache. A list left with
// no entry (its last watch went, and its unsubscription was written or
// its streams closed, R-10.2, R-10.3) makes its primary active again: the
// next watch of the list then starts from the primary, as the first one
// did, and falls back again at once if the primary is still down (its
// failure is not counted again, R-21.3); otherwise a re-watch would go
// to the lower-priority server and to the primary both, and a primary
// back meanwhile would see its value replaced by the other server's
// first, then revert. grpc-go's authority likewise closes its channels
// and starts over from its first server.
func (c *Client) entryDroppedLocked(rs *resourceState) {
	l := rs.list
	if l == nil {
		return
	}
	if l.entries--; l.entries == 0 {
		l.active = 0
	}
}

// revertLocked is called when ch's stream accepted a response. Every list
// in which ch ranks above the active server reverts to ch: its resources
// are served by ch, which subscribes them already, and the lower-priority
// channels release them (and are retired when left with nothing). Every
// list of ch is marked reached.
func (ch *channel) revertLocked() {
	c := ch.c
	for _, l := range c.lists {
		if !l.reached && containsString(l.keys, ch.key) {
			l.reached = true
		}
		i := -1
		for j := 0; j < l.active; j++ {
			if l.keys[j] == ch.key {
				i = j
				break
			}
		}
		if i < 0 {
			continue
		}
		lower := c.channelsLocked(l)[i+1:]
		l.active = i
		ch.logger.Info("higher-priority management server reachable again: reverting to it")
		for _, rs := range c.allEntriesLocked() { // a copy: entries change servers
			if rs.list != l {
				continue
			}
			if len(rs.watchers) == 0 && rs.ch != ch {
				// Unwatched, its unsubscription not written yet:
				// the server it was unsubscribed from goes.
				c.dropEntryLocked(rs)
				continue
			}
			rs.ch = ch
			for _, lc := range lower {
				if lc != nil {
					lc.releaseLocked(rs)
				}
			}
		}
	}
}

// releaseLocked removes rs, which ch no longer serves, from ch's cache and
// subscription, without touching the entry itself; a channel left with no
// subscription is retired.
func (ch *channel) releaseLocked(rs *resourceState) {
	ts := ch.types[rs.typ.TypeURL()]
	if ts == nil || ts.entries[rs.name] != rs {
		return
	}
	delete(ts.entries, rs.name)
	if len(rs.watchers) == 0 {
		// Not subscribed here: its unsubscription is recorded already.
		ch.changedLocked(ts, rs.name, false)
		return
	}
	ts.subs--
	ch.subscriptionChangedLocked(ts, rs.name, false)
}

// standbyLocked reports whether ch ranks above the active server of one of
// its lists: it is then retried at least every revertRetryInterval.
func (ch *channel) standbyLocked() bool {
	for _, l := range ch.c.lists {
		for j := 0; j < l.active; j++ {
			if l.keys[j] == ch.key {
				return true
			}
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
// type typeURL named name (canonicalised like Watch's names), and false
// when nothing is cached for that name. Dump, and so the csds package,
// cannot say it: CSDS has no per-resource server field. It is safe for
// concurrent use.
func (c *Client) ResourceOrigin(typeURL, name string) (ResourceOrigin, bool) {
	name = resources.CanonicalName(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.entryLocked(typeURL, name)
	if rs == nil || rs.value == nil {
		return ResourceOrigin{}, false
	}
	return ResourceOrigin{ServerURI: rs.fromURI(), Stale: rs.stale}, true
}
