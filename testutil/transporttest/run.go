// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
)

// The cells of the suite, by subtest name. Each runs as
// Run's subtest "Cell/Type" for every type it applies to (Type is
// Listener, RouteConfiguration, Cluster or ClusterLoadAssignment); the
// package doc says what each checks.
const (
	CellNamedWatch       = "NamedWatch"
	CellWildcard         = "Wildcard"
	CellWildcardAndNamed = "WildcardAndNamed"
	CellCancelAndRewatch = "CancelAndRewatch"
	CellDeletion         = "Deletion"
	CellNACK             = "NACK"
	CellReconnectReplay  = "ReconnectReplay"
	CellDuplicateNames   = "DuplicateNames"
	CellOversize         = "Oversize"
	CellHostileNames     = "HostileNames"
)

const (
	// timeout bounds every cell: what must happen happens well within it.
	timeout = 10 * time.Second
	// shortExpiry is the watch expiry timeout of the client that checks
	// that a missing resource is reported as not found.
	shortExpiry = 200 * time.Millisecond
	// oversizeLimit is the client's response size limit in CellOversize.
	oversizeLimit = 64 << 10
	// loopWindow is how long CellOversize counts reconnection attempts
	// after the first error: a client that retries with backoff (R-11.1:
	// 1 s, then 1.6 s, ±20 %) makes at most two in it.
	loopWindow = time.Second
	// maxAttemptsInWindow is the most stream attempts (errors reported,
	// and requests of the type) CellOversize accepts in loopWindow: more
	// is a reconnection loop without backoff.
	maxAttemptsInWindow = 3
)

// HostileNameLength is the length of the over-long resource name that
// CellHostileNames watches: 1 MiB, longer than the client's documented
// maximum.
const HostileNameLength = 1 << 20

// Option configures Run.
type Option func(*options)

type options struct {
	skip map[string]string
}

// Skip makes Run skip cells, with t.Skip and the reason given: keys are a
// cell ("Wildcard") or a cell for one type ("Wildcard/RouteConfiguration").
// It is for known defects of the transport under test, kept in the suite
// until they are fixed; cells the transport cannot support belong in
// Features.Unsupported instead. The map is copied; several Skip options
// add up.
func Skip(cells map[string]string) Option {
	return func(c *options) {
		if c.skip == nil {
			c.skip = make(map[string]string)
		}
		maps.Copy(c.skip, cells)
	}
}

// env is what a cell runs with.
type env struct {
	h   Harness
	f   Features
	k   *kind
	ctx context.Context // ends after timeout
}

// cell is one row of the suite.
type cell struct {
	name  string
	kinds []*kind // the types it runs for
	run   func(t *testing.T, e *env)
}

// cells is the suite, in the order Run runs it.
var cells = []cell{
	{CellNamedWatch, kinds, namedWatch},
	{CellWildcard, kinds, wildcard},
	{CellWildcardAndNamed, kinds, wildcardAndNamed},
	{CellCancelAndRewatch, kinds, cancelAndRewatch},
	{CellDeletion, kinds, deletion},
	{CellNACK, kinds, nack},
	{CellReconnectReplay, kinds, reconnectReplay},
	{CellDuplicateNames, kinds, duplicateNames},
	// The size limit is the transport's, whatever the type.
	{CellOversize, []*kind{clusterKind}, oversize},
	{CellHostileNames, kinds, hostileNames},
}

// Run runs the conformance suite on the transport of h: for each cell,
// a subtest per resource type it applies to ("Cell/Type"), in parallel
// with one another (t.Parallel), each on a server of its own from
// h.NewServer. A cell in h.Features().Unsupported, or in a Skip option,
// is skipped with its reason. See the package doc for the cells.
func Run(t *testing.T, h Harness, opts ...Option) {
	t.Helper()
	var cfg options
	for _, o := range opts {
		o(&cfg)
	}
	f := h.Features()
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := f.Unsupported[c.name]; ok && c.name != CellNACK {
				t.Skip(reason)
			}
			if reason, ok := cfg.skip[c.name]; ok {
				t.Skip(reason)
			}
			for _, k := range c.kinds {
				t.Run(k.name, func(t *testing.T) {
					if reason, ok := f.Unsupported[c.name+"/"+k.name]; ok && c.name != CellNACK {
						t.Skip(reason)
					}
					if reason, ok := cfg.skip[c.name+"/"+k.name]; ok {
						t.Skip(reason)
					}
					t.Parallel()
					ctx, cancel := context.WithTimeout(t.Context(), timeout)
					defer cancel()
					c.run(t, &env{h: h, f: f, k: k, ctx: ctx})
				})
			}
		})
	}
}

// setup starts a server for the cell and returns it with a client of it.
func (e *env) setup(t *testing.T, o ClientOptions) (Server, *client.Client) {
	t.Helper()
	srv := e.h.NewServer(t)
	return srv, srv.NewClient(t, o)
}

// set makes the server serve version, holding ms (all of the cell's type).
func (e *env) set(t *testing.T, srv Server, version string, ms ...proto.Message) {
	t.Helper()
	srv.SetResources(t, e.k.resourcesOf(version, ms...))
}

// watch watches name (the wildcard for "*") with a new recorder, until
// the test ends.
func (e *env) watch(t *testing.T, c *client.Client, name string) *recorder {
	t.Helper()
	r, _ := e.watchCancel(t, c, name)
	return r
}

// watchCancel is watch, with a func that cancels the watch before the
// test ends (once: later calls do nothing).
func (e *env) watchCancel(t *testing.T, c *client.Client, name string) (*recorder, func()) {
	t.Helper()
	var r *recorder
	var cancel func()
	if name == "*" {
		r = newRecorder("WatchAll(%s)", e.k.name)
		cancel = e.k.watchAll(c, r)
	} else {
		r = newRecorder("Watch(%s, %.40q)", e.k.name, name)
		cancel = e.k.watch(c, name, r)
	}
	cancel = sync.OnceFunc(cancel)
	t.Cleanup(cancel)
	return r, cancel
}

// checkRequests runs check on the server's requests, if it logs them, and
// fails the test with its error.
func checkRequests(t *testing.T, srv Server, what string, check func([]*testutil.Request) error) {
	t.Helper()
	log := srv.Requests()
	if log == nil {
		return
	}
	if err := check(log.Requests()); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func version(n int) string { return fmt.Sprintf("v%d", n) }
