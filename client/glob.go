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

// watchCollectionLocked registers we for a collection: the wildcard ("*",
// WatchAll) of the top-level servers, or the glob collection name of its
// authority's servers, and returns its cancel. The cached members are
// delivered at once, in name order. It returns the error of a
// watch that cannot be served.
func (c *Client) watchCollectionLocked(rt resources.ResourceType, name string, we *watchEntry) (func(), error) {
	var (
		a   *authority
		err error
	)
	if name == wildcardName {
		a = c.authorityOfLocked(c.cfg.Servers)
	} else {
		a, err = c.authorityForLocked(name)
	}
	if err == nil {
		err = a.attachLocked()
	}
	if err != nil {
		return nil, err
	}
	tc := a.typeLocked(rt)
	var first bool
	if name == wildcardName {
		tc.wildcard = append(tc.wildcard, we)
		first = len(tc.wildcard) == 1
	} else {
		if tc.globs == nil {
			tc.globs = make(map[string][]*watchEntry)
		}
		tc.globs[name] = append(tc.globs[name], we)
		first = len(tc.globs[name]) == 1
	}
	if first {
		a.subscriptionChangedLocked(rt, name, true)
	}
	for _, n := range sortedKeys(tc.entries) {
		if e := tc.entries[n]; e.value != nil && (name == wildcardName || globMatch(name, n)) {
			c.replayLocked(e, we)
		}
	}
	if first {
		c.servePersistedCollectionLocked(a, tc)
	}
	return func() { c.unwatchCollection(a, tc, name, we) }, nil // idempotent: a second call finds we gone
}

// unwatchCollection cancels a watch of a collection. The last one
// unsubscribes from it, and the members that nothing else wants are
// unsubscribed: forgotten once that is written.
func (c *Client) unwatchCollection(a *authority, tc *typeCache, name string, we *watchEntry) {
	we.target.Store(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	var last bool
	if name == wildcardName {
		last = c.removeWatchLocked(&tc.wildcard, we)
	} else {
		ws := tc.globs[name]
		last = c.removeWatchLocked(&ws, we)
		if len(ws) > 0 {
			tc.globs[name] = ws
		} else {
			delete(tc.globs, name)
		}
	}
	if !last {
		return
	}
	for n, e := range tc.entries {
		if len(e.watchers) == 0 && !e.pending && (name == wildcardName || globMatch(name, n)) && !tc.wantsLocked(n) {
			c.unsubscribeEntryLocked(e)
		}
	}
	a.subscriptionChangedLocked(tc.typ, name, false)
}
