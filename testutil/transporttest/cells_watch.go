// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
)

// namedWatch: a watch of one name gets its value and each new version of
// it, and nothing of the other names; a watch of a name the server does
// not have gets a ResourceError wrapping client.ErrResourceNotFound once
// the watch expiry timeout passed.
func namedWatch(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
	a := e.watch(t, c, "a")
	a.wantValue(e.ctx, t, "a", k.tag(1))
	e.set(t, srv, version(2), k.valid("a", 2), k.valid("b", 2))
	a.wantValue(e.ctx, t, "a", k.tag(2))

	// Another client, so that the short expiry cannot race the first
	// response of "a".
	short := srv.NewClient(t, ClientOptions{Options: []client.Option{client.WithWatchExpiryTimeout(shortExpiry)}})
	missing := e.watch(t, short, "missing")
	missing.wantError(e.ctx, t, resourceError, "missing", client.ErrResourceNotFound)
}

// wildcard: a wildcard watch alone (WatchAll) gets every resource of the
// type, then the changed and the added ones of a new version; on the
// wire, the wildcard is subscribed in a form the xDS protocol defines for
// the type ("*", or the legacy empty list for Listener and Cluster only).
func wildcard(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
	all := e.watch(t, c, "*")
	all.wantValues(e.ctx, t, map[string]string{"a": k.tag(1), "b": k.tag(1)})
	e.set(t, srv, version(2), k.valid("a", 2), k.valid("b", 1), k.valid("c", 1))
	all.wantValues(e.ctx, t, map[string]string{"a": k.tag(2), "c": k.tag(1)})
	checkRequests(t, srv, "wildcard subscription", func(reqs []*testutil.Request) error {
		return checkSubscribed(reqs, k, true)
	})
}

// wildcardAndNamed: a wildcard watch and a named watch on one client, the
// wildcard watched first (so that it may be subscribed in the legacy
// form) or second (so that it is added to a subscription of names): the
// wildcard watch gets every resource, the named watch only its own, both
// get updates, and the named watch keeps getting them once the wildcard
// watch is cancelled. On the wire both are subscribed.
func wildcardAndNamed(t *testing.T, e *env) {
	for _, wildcardFirst := range []bool{true, false} {
		k := e.k
		srv, c := e.setup(t, ClientOptions{})
		e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
		var (
			all, named             *recorder
			cancelAll, cancelNamed func()
		)
		if wildcardFirst {
			all, cancelAll = e.watchCancel(t, c, "*")
			all.wantValues(e.ctx, t, map[string]string{"a": k.tag(1), "b": k.tag(1)})
			named, cancelNamed = e.watchCancel(t, c, "a")
			named.wantValue(e.ctx, t, "a", k.tag(1))
		} else {
			named, cancelNamed = e.watchCancel(t, c, "a")
			named.wantValue(e.ctx, t, "a", k.tag(1))
			all, cancelAll = e.watchCancel(t, c, "*")
			all.wantValues(e.ctx, t, map[string]string{"a": k.tag(1), "b": k.tag(1)})
		}

		e.set(t, srv, version(2), k.valid("a", 2), k.valid("b", 2))
		all.wantValues(e.ctx, t, map[string]string{"a": k.tag(2), "b": k.tag(2)})
		named.wantValue(e.ctx, t, "a", k.tag(2))
		checkRequests(t, srv, "wildcard and named subscription", func(reqs []*testutil.Request) error {
			return checkSubscribed(reqs, k, true, "a")
		})

		cancelAll()
		e.set(t, srv, version(3), k.valid("a", 3), k.valid("b", 3))
		named.wantValue(e.ctx, t, "a", k.tag(3))
		cancelNamed()
	}
}

// cancelAndRewatch: a name watched, cancelled (and unsubscribed on the
// wire, where the server sees streams) and watched again gets its
// current value and later updates; the same holds for a wildcard watch.
func cancelAndRewatch(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
	first, cancelFirst := e.watchCancel(t, c, "a")
	first.wantValue(e.ctx, t, "a", k.tag(1))
	keep := e.watch(t, c, "b") // keeps the type subscribed
	keep.wantValue(e.ctx, t, "b", k.tag(1))
	cancelFirst()
	if log := srv.Requests(); log != nil && streamed(log.Requests(), k) {
		if _, err := log.WaitForRequest(e.ctx, func(r *testutil.Request) bool {
			return typeURLOf(r) == k.typeURL && unsubscribes(r, "a")
		}); err != nil {
			t.Fatalf("no request unsubscribing %q after its watch was cancelled: %v", "a", err)
		}
	}

	e.set(t, srv, version(2), k.valid("a", 2), k.valid("b", 1))
	again := e.watch(t, c, "a")
	again.wantLatest(e.ctx, t, "a", k.tag(2))
	e.set(t, srv, version(3), k.valid("a", 3), k.valid("b", 1))
	again.wantValue(e.ctx, t, "a", k.tag(3))

	all, cancelAll := e.watchCancel(t, c, "*")
	all.wantValues(e.ctx, t, map[string]string{"a": k.tag(3), "b": k.tag(1)})
	cancelAll()
	allAgain := e.watch(t, c, "*")
	allAgain.wantValues(e.ctx, t, map[string]string{"a": k.tag(3), "b": k.tag(1)})
	e.set(t, srv, version(4), k.valid("a", 4), k.valid("b", 1), k.valid("c", 1))
	allAgain.wantValues(e.ctx, t, map[string]string{"a": k.tag(4), "c": k.tag(1)})
	again.wantValue(e.ctx, t, "a", k.tag(4))
}

// streamed reports whether the requests of k's type in reqs came on
// streams, which tell unsubscription apart (REST-JSON polls do not: a
// poll simply stops naming the name).
func streamed(reqs []*testutil.Request, k *kind) bool {
	for _, r := range reqs {
		if typeURLOf(r) == k.typeURL {
			return r.StreamID != 0
		}
	}
	return false
}

// unsubscribes reports whether r no longer subscribes to name: a delta
// request that unsubscribes it, or a SotW request that does not name it
// (and subscribes to no wildcard, which would cover it).
func unsubscribes(r *testutil.Request, name string) bool {
	if r.Delta != nil {
		for _, n := range r.Delta.GetResourceNamesUnsubscribe() {
			if n == name {
				return true
			}
		}
		return false
	}
	names := r.Req.GetResourceNames()
	for _, n := range names {
		if n == name || n == "*" {
			return false
		}
	}
	return len(names) > 0
}
