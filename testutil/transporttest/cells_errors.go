// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"strings"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
)

// deletion: a resource the server removes is reported to its watcher as
// a ResourceError wrapping client.ErrResourceNotFound, the other names
// are untouched, and the resource comes back when the server has it
// again. In SotW the server removes a resource by leaving it out, which
// deletes only Listeners and Clusters; the cell is skipped for
// the other types. In delta the server names it in removed_resources
//
func deletion(t *testing.T, e *env) {
	k := e.k
	if !e.f.Delta && !k.deletesInSotW {
		t.Skipf("in SotW a response that leaves out a %s does not delete it: only Listener and Cluster responses carry every resource (R-14.1)", k.name)
	}
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1))
	a := e.watch(t, c, "a")
	b := e.watch(t, c, "b")
	a.wantValue(e.ctx, t, "a", k.tag(1))
	b.wantValue(e.ctx, t, "b", k.tag(1))

	e.set(t, srv, version(2), k.valid("b", 2))
	a.wantError(e.ctx, t, resourceError, "a", client.ErrResourceNotFound)
	b.wantValue(e.ctx, t, "b", k.tag(2))

	e.set(t, srv, version(3), k.valid("a", 3), k.valid("b", 2))
	a.wantValue(e.ctx, t, "a", k.tag(3))
}

// nack: a resource that fails validation is reported as invalid
// (client.ErrResourceInvalid) to its watcher, as a ResourceError without a
// value and as an AmbientError, the value kept, with one; a later valid
// version is applied; and the NACK reaches the server with an
// error_detail that names the resource.
func nack(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	e.set(t, srv, version(1), k.valid("a", 1), k.invalid("bad"))
	a := e.watch(t, c, "a")
	bad := e.watch(t, c, "bad")
	a.wantValue(e.ctx, t, "a", k.tag(1))
	bad.wantError(e.ctx, t, resourceError, "bad", client.ErrResourceInvalid)

	e.set(t, srv, version(2), k.invalid("a"), k.invalid("bad"))
	a.wantError(e.ctx, t, ambientError, "a", client.ErrResourceInvalid)
	e.set(t, srv, version(3), k.valid("a", 3), k.valid("bad", 3))
	a.wantValue(e.ctx, t, "a", k.tag(3))
	bad.wantValue(e.ctx, t, "bad", k.tag(3))

	if reason, ok := e.f.Unsupported[CellNACK]; ok {
		t.Skip(reason)
	}
	log := srv.Requests()
	if log == nil {
		t.Skip("the harness cannot tell what requests the server received (Server.Requests is nil)")
	}
	for _, name := range []string{"bad", "a"} {
		r, err := log.WaitForRequest(e.ctx, func(r *testutil.Request) bool {
			return typeURLOf(r) == k.typeURL && strings.Contains(errorDetail(r), `"`+name+`"`)
		})
		if err != nil {
			t.Fatalf("no NACK of %s %q reached the server (an error_detail naming it): %v", k.name, name, err)
		}
		t.Logf("NACK of %q: %s", name, errorDetail(r))
	}
}

// errorDetail returns the message of r's error_detail, "" without one.
func errorDetail(r *testutil.Request) string {
	if r.Delta != nil {
		return r.Delta.GetErrorDetail().GetMessage()
	}
	return r.Req.GetErrorDetail().GetMessage()
}

// duplicateNames: a response that names a resource twice is NACKed:
// the watcher of that name gets an error wrapping
// client.ErrResourceInvalid, whatever its copies hold, every other
// resource of the response is applied, and the next response without the
// duplicate is applied too.
func duplicateNames(t *testing.T, e *env) {
	k := e.k
	srv, c := e.setup(t, ClientOptions{})
	a := e.watch(t, c, "a")
	b := e.watch(t, c, "b")
	e.set(t, srv, version(1), k.valid("a", 1), k.valid("b", 1), k.valid("a", 2))
	a.wantError(e.ctx, t, resourceError, "a", client.ErrResourceInvalid)
	b.wantValue(e.ctx, t, "b", k.tag(1))

	e.set(t, srv, version(2), k.valid("a", 3), k.valid("b", 1))
	// A server that keeps one version per name may resend one of the
	// copies alone first (testutil's delta server does when its push
	// races the first request): a valid response, applied.
	a.wantLatest(e.ctx, t, "a", k.tag(3))

	if _, ok := e.f.Unsupported[CellNACK]; ok {
		return
	}
	if log := srv.Requests(); log != nil {
		if _, err := log.WaitForRequest(e.ctx, func(r *testutil.Request) bool {
			return typeURLOf(r) == k.typeURL && strings.Contains(errorDetail(r), `"a"`)
		}); err != nil {
			t.Fatalf("no NACK naming %q reached the server: %v", "a", err)
		}
	}
}
