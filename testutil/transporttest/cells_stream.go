// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
)

// reconnectReplay: after the server breaks the stream (Server.Break), the
// client asks again for its whole subscription, and updates keep
// arriving, including a resource added after the break: first with a
// wildcard watch alone (the legacy form, where it is defined, is the
// subscription most easily lost by a transport that replays requests),
// then with a named watch beside it. On the wire, where the server sees
// streams or polls, a request after each break subscribes to the
// wildcard (and the name). The failures are not reported to watchers:
// the stream had responses.
func reconnectReplay(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
	all := e.watch(t, c, "*")
	all.wantValues(e.ctx, t, map[string]string{"a": k.tag(1), "b": k.tag(1)})

	mark := markRequests(srv)
	srv.Break(t)
	e.set(t, srv, version(2), k.valid("a", 2), k.valid("b", 1), k.valid("c", 1))
	all.wantValues(e.ctx, t, map[string]string{"a": k.tag(2), "c": k.tag(1)})
	checkRequests(t, srv, "wildcard subscription after the break", func(reqs []*testutil.Request) error {
		return checkSubscribed(mark.after(reqs), k, true)
	})

	named := e.watch(t, c, "a")
	named.wantValue(e.ctx, t, "a", k.tag(2))
	mark = markRequests(srv)
	srv.Break(t)
	e.set(t, srv, version(3), k.valid("a", 3), k.valid("b", 1), k.valid("c", 3))
	named.wantValue(e.ctx, t, "a", k.tag(3))
	all.wantValues(e.ctx, t, map[string]string{"a": k.tag(3), "c": k.tag(3)})
	checkRequests(t, srv, "wildcard and named subscription after the second break", func(reqs []*testutil.Request) error {
		return checkSubscribed(mark.after(reqs), k, true, "a")
	})
}

// markRequests returns a marker at the end of srv's request log (the zero
// marker when it has none).
func markRequests(srv Server) marker {
	if log := srv.Requests(); log != nil {
		return markOf(log.Requests())
	}
	return marker{}
}

// oversize: a response larger than the client's limit
// (ClientOptions.MaxResponseBytes) fails the stream with an error that
// wraps transport.ErrMessageTooLarge and names the limit, reported to the
// watchers (R-11.3: an AmbientError for a cached resource); the client
// retries with backoff, not in a loop (at most maxAttemptsInWindow errors
// and requests of the type within loopWindow of the first error); and it
// recovers once the server's response fits again.
func oversize(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{MaxResponseBytes: oversizeLimit})
	e.set(t, srv, version(1), k.valid("a", 1))
	a := e.watch(t, c, "a")
	a.wantValue(e.ctx, t, "a", k.tag(1))

	e.set(t, srv, version(2), k.oversize("a", 2*oversizeLimit))
	err := a.wantError(e.ctx, t, ambientError, "", nil)
	limit := strconv.Itoa(oversizeLimit)
	if !errors.Is(err, transport.ErrMessageTooLarge) || !strings.Contains(err.Error(), limit) {
		t.Errorf("error for a response over the %s-byte limit: %v; want one wrapping transport.ErrMessageTooLarge and naming the limit (%s)", limit, err, limit)
	}

	// No loop: count the attempts for loopWindow. This waits on purpose:
	// it observes what must not happen.
	var before int
	log := srv.Requests()
	if log != nil {
		before = countType(log.Requests(), k)
	}
	window := time.NewTimer(loopWindow)
	errs := 1
	for waiting := true; waiting; {
		select {
		case ev := <-a.events:
			if ev.kind == changed {
				t.Fatalf("%s: got %v, want nothing but errors while the response is over the limit", a.desc, ev)
			}
			errs++
		case <-window.C:
			waiting = false
		case <-e.ctx.Done():
			t.Fatal(e.ctx.Err())
		}
	}
	if errs > maxAttemptsInWindow {
		t.Errorf("%d errors reported within %v of the first one; want at most %d (reconnection without backoff)", errs, loopWindow, maxAttemptsInWindow)
	}
	if log != nil {
		if n := countType(log.Requests(), k) - before; n > maxAttemptsInWindow {
			t.Errorf("%d requests of %s within %v of the first error; want at most %d (reconnection without backoff)", n, k.name, loopWindow, maxAttemptsInWindow)
		}
	}

	e.set(t, srv, version(3), k.valid("a", 3))
	for {
		ev := a.waitFor(e.ctx, t, "the value that fits the limit again", func(ev event) bool {
			return ev.kind == ambientError || (ev.kind == changed && ev.name == "a" && ev.tag == k.tag(3))
		}, nil)
		if ev.kind == changed {
			break
		}
	}
}

// countType returns the number of requests of k's type in reqs.
func countType(reqs []*testutil.Request, k *kind) int {
	n := 0
	for _, r := range reqs {
		if typeURLOf(r) == k.typeURL {
			n++
		}
	}
	return n
}

// hostileNames: a watch of a name that is not valid UTF-8, or longer than
// the client's maximum (HostileNameLength), gets a ResourceError for that
// watcher alone, and every other watch keeps working: the values of
// watches made before and after it keep arriving, without errors.
func hostileNames(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
	good := e.watch(t, c, "a")
	good.wantValue(e.ctx, t, "a", k.tag(1))

	for _, name := range []string{"bad-\xff\xfe-utf8", strings.Repeat("n", HostileNameLength)} {
		bad := e.watch(t, c, name)
		err := bad.wantError(e.ctx, t, resourceError, "", nil)
		var re *client.ResourceError
		if !errors.As(err, &re) || errors.Is(err, client.ErrConnection) {
			t.Errorf("%s: error %.300v; want a *client.ResourceError about the name, not a connection error", bad.desc, err)
		}
	}

	e.set(t, srv, version(2), k.valid("a", 2), k.valid("b", 2))
	good.wantValue(e.ctx, t, "a", k.tag(2))
	later := e.watch(t, c, "b")
	later.wantValue(e.ctx, t, "b", k.tag(2))
}
