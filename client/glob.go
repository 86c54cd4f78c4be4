// SPDX-License-Identifier: Apache-2.0

package client

import "strings"

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
// member deletes it. A glob collection is watched as the
// wildcard is (watch.go), and is a subscription of its authority
// (authority.go).

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
