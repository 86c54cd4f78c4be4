// SPDX-License-Identifier: Apache-2.0

package client

import (
	"slices"
	"strings"

	"github.com/proxyless/xds/resources"
)

// This file implements xdstp glob collections (xRFC TP1, "Glob
// collections"; R-5): a Watch of a name such as
// "xdstp://authority/envoy.config.cluster.v3.Cluster/prefix/*" subscribes
// to that name on the stream of the authority's own servers (a wildcard
// scoped to the authority, which WatchAll, bound to the top-level servers,
// cannot be) and receives, as WatchAll does, every resource the server
// sends whose name is the glob's path with one more segment in place of
// "*" (and the same context parameters). Such resources are cached like
// those of a wildcard. TP1 defines glob collections for delta xDS, where
// removed_resources deletes members; the client subscribes them in SotW
// too, where a Listener or Cluster response that leaves out a cached
// member deletes it.

// isGlob reports whether name (canonical) is an xdstp glob collection:
// its path ends with the segment "*".
func isGlob(name string) bool {
	if !strings.HasPrefix(name, "xdstp://") {
		return false
	}
	p, _, _ := strings.Cut(name, "#")
	p, _, _ = strings.Cut(p, "?")
	return strings.HasSuffix(p, "/*")
}

// globMatch reports whether name (canonical) is a member of the glob
// collection glob (canonical): same authority, type, path prefix and
// context parameters, and exactly one more path segment.
func globMatch(glob, name string) bool {
	gp, gq, _ := strings.Cut(glob, "?")
	np, nq, _ := strings.Cut(name, "?")
	prefix := strings.TrimSuffix(gp, "*")
	id, ok := strings.CutPrefix(np, prefix)
	return ok && id != "" && !strings.ContainsAny(id, "/#") && gq == nq
}

// wantsLocked reports whether a received resource named name is wanted
// without a watch of its own: the wildcard is subscribed, or a watched glob
// collection holds it.
func (ts *typeState) wantsLocked(name string) bool {
	if len(ts.wildcard) > 0 {
		return true
	}
	for g := range ts.globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// collectionWatchersLocked returns the WatchAll watchers of ts and the
// watchers of the glob collections that hold name, in glob name order.
func (ts *typeState) collectionWatchersLocked(name string) []*watchEntry {
	if len(ts.globs) == 0 {
		return ts.wildcard
	}
	out := slices.Clone(ts.wildcard)
	for _, g := range sortedKeys(ts.globs) {
		if globMatch(g, name) {
			out = append(out, ts.globs[g]...)
		}
	}
	return out
}

// watchGlobLocked registers we for the glob collection name on the stream
// of the authority's servers (channelForLocked) and returns its cancel.
// The cached members are delivered at once, in name order.
func (c *Client) watchGlobLocked(rt resources.ResourceType, name string, we *watchEntry) func() {
	ch, _, err := c.channelForLocked(name)
	if err != nil {
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(c.resourceError(rt, name, err), done) })
		return func() {}
	}
	ts := ch.typeStateLocked(rt)
	if ts.globs == nil {
		ts.globs = make(map[string][]*watchEntry)
	}
	ts.globs[name] = append(ts.globs[name], we)
	if len(ts.globs[name]) == 1 {
		ch.subscriptionChangedLocked(ts, name, true)
	}
	for _, n := range sortedKeys(ts.entries) {
		if rs := ts.entries[n]; rs.value != nil && globMatch(name, n) {
			c.replayLocked(rs, we)
		}
	}
	return func() { c.unwatchGlob(ts, name, we) } // idempotent: a second call finds we gone
}

// unwatchGlob cancels a watch of a glob collection. The last one
// unsubscribes from it and forgets, once that is written, the members that
// nothing else wants.
func (c *Client) unwatchGlob(ts *typeState, name string, we *watchEntry) {
	we.target.Store(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := ts.globs[name]
	i := slices.Index(ws, we)
	if i < 0 {
		return
	}
	ws = slices.Delete(ws, i, i+1)
	if len(ws) > 0 {
		ts.globs[name] = ws
		return
	}
	delete(ts.globs, name)
	if c.closed {
		return
	}
	for n, rs := range ts.entries {
		if len(rs.watchers) == 0 && globMatch(name, n) && !ts.wantsLocked(n) {
			ts.unsubscribed = append(ts.unsubscribed, rs)
		}
	}
	ts.ch.subscriptionChangedLocked(ts, name, false)
}
