// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/proxyless/xds/client"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// The exit codes of status beyond exitOK, exitFailure and exitUsage. When
// several apply, the first in this order wins.
const (
	exitNACKed       = 3 // a named resource is NACKED
	exitDoesNotExist = 4 // a named resource is DOES_NOT_EXIST
	exitNotReceived  = 5 // a named resource was not received within --wait
	exitStale        = 6 // a named resource is served only from the --persist-dir copy
)

// persistSettleMargin is how long after the persistence timeout status
// waits for the persisted values before settling on connection errors.
const persistSettleMargin = 250 * time.Millisecond

// statusWaitMargin is how much longer than the does-not-exist timer the
// default --wait is, so that a missing resource is reported as
// DOES_NOT_EXIST rather than still REQUESTED.
const statusWaitMargin = 5 * time.Second

var statusCommand = &command{
	name:     "status",
	synopsis: "[--bootstrap FILE | --server HOST:PORT | --rest URL | --file PATH | --csds ADDR] [--delta] [--per-type] [--persist-dir DIR [--persist-timeout D]] [--wait D] [-o text|json|yaml] [--resource-timeout D] TYPE/NAME...",
	summary:  "subscribe to resources, print the client's CSDS dump, and exit 0 only when all are ACKED",
	help: `Status subscribes to the named resources, waits until each of them has been
received, reported missing or invalid, or failed to connect, or until --wait
has passed, whichever comes first, and prints the client's CSDS dump (gRFC
A40): a table with the columns TYPE NAME STATUS VERSION SERVER LAST
UPDATED ERROR, or with --output json one line holding the protojson of
the envoy.service.status.v3.ClientConfig, with the proto field names
("generic_xds_configs", "client_status"; --output yaml: the same as one
YAML document). STATUS is REQUESTED (nothing received yet),
ACKED, ACKED(stale), NACKED or DOES_NOT_EXIST. SERVER is the management
server (server_uri) that sent the cached value, which with fallback
(gRFC A71) may be a lower-priority one; "-" when nothing is cached. LAST
UPDATED is when the client last received the resource (UTC, RFC 3339).
ERROR is the rejection of a NACKed resource, why a value is stale, or the
connection error of a resource still REQUESTED.

With --persist-dir DIR, the values received are saved in DIR; when no
management server answers within --persist-timeout (10s by default), the
saved values are served instead, shown as ACKED(stale) with the server
that sent them, and status waits for them before settling on connection
errors.

CSDS has no field for the server of a resource, so the JSON and YAML
output add one field after those of the ClientConfig:
  "origins": [{"type_url":"…","name":"…","server":"…","stale":true}, …]
one element per cached resource, in dump order, "stale" only when true;
the field is left out when nothing is cached. Read the output as a
ClientConfig with unknown fields ignored (protojson DiscardUnknown).

With --csds ADDR, status subscribes to nothing: it prints what the
process serving CSDS at ADDR reports for each of its clients (one table,
or one JSON line or YAML document, per client), limited to the TYPE/NAME
arguments when there are any, and exits with the codes below over the
resources of all its clients: every resource named must be ACKED in the
clients that have it, and at least one must have it (else 5); without
arguments, every resource reported must be ACKED. The server is not
known over CSDS: SERVER is "-" and there is no "origins"; a value this
library's client serves from persistence shows as ACKED(stale) (exit 6).

TYPE/* subscribes to every resource of the type (a wildcard) and waits for
the first one; each resource the server sends is a row.

The default --wait is the does-not-exist timer (--resource-timeout, 15s by
default) plus 5s, so that a resource the server does not have shows as
DOES_NOT_EXIST; status returns as soon as every resource has settled, so an
ACKED answer comes at once. Interrupting the wait (Ctrl-C) prints the dump
at once.

Exit status, for CI:
  0  every named resource is ACKED (for TYPE/*: at least one resource of
     the type was received, and every one is ACKED)
  1  a runtime failure, or every resource failed to connect to its
     management server (the dump is then not printed)
  2  a usage error
  3  a resource is NACKED
  4  a resource is DOES_NOT_EXIST
  5  a resource was not received within --wait (still REQUESTED)
  6  a resource is ACKED(stale): served only from the --persist-dir copy,
     no management server having answered
When several apply, the lowest of 3, 4, 5 and 6 is the exit status;
stderr names the resources at fault. A stale resource does not count as
ACKED for exit status 0.

` + resourceArgHelp,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var cf clientFlags
		cf.register(fs)
		out := registerOutput(fs)
		wait := fs.Duration("wait", 0, "the longest time to wait for the resources before printing; 0 means the does-not-exist timer plus 5s (20s by default)")
		csdsAddr := fs.String("csds", "", "print the status that the process serving CSDS at this `address` reports for its clients, instead of subscribing (TYPE/NAME arguments then filter)")
		return func(ctx context.Context, e *env, args []string) error {
			if *csdsAddr != "" {
				return runStatusCSDS(ctx, e, *csdsAddr, *out, args)
			}
			return runStatus(ctx, e, &cf, *wait, *out, args)
		}
	},
}

// runStatus implements the status command.
func runStatus(ctx context.Context, e *env, cf *clientFlags, wait time.Duration, out outputFormat, args []string) error {
	if wait < 0 {
		return usageErrorf("--wait must not be negative, got %v", wait)
	}
	refs, err := parseResourceArgs(args)
	if err != nil {
		return err
	}
	c, err := cf.newClient(e)
	if err != nil {
		return err
	}
	defer c.Close()
	if wait == 0 {
		wait = cf.expiry() + statusWaitMargin
	}

	persistWait, persisting := cf.persistSettle()
	t := newSettleTracker(refs, persisting)
	if persisting {
		// The client serves the persisted values persistWait after New
		// when no server has answered: until then, a connection error
		// settles nothing.
		release := time.AfterFunc(persistWait+persistSettleMargin, func() {
			t.releaseConnErrors(func(k resourceKey) bool {
				_, cached := clientOrigins(c)(k.typeURL, k.name)
				return cached
			})
		})
		defer release.Stop()
	}
	for _, r := range refs {
		key := r.key()
		defer r.watch(c, e, func(ev event) { t.record(key, r.wildcard(), ev) })()
	}
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	select {
	case <-waitCtx.Done():
		// --wait passed or interrupted: print what the client has.
	case <-t.settled:
	}
	cc := c.Dump()

	notes, failed := t.result(refs)
	if failed != nil {
		return fmt.Errorf("cannot reach the management server: %w", failed)
	}
	for _, r := range refs {
		if n, ok := notes[r.key()]; ok && !inDump(cc.GetGenericXdsConfigs(), r.key()) {
			fmt.Fprintf(e.stderr, "xdsctl: warning: %s\n", oneLine(n))
		}
	}
	if out.structured() {
		b, err := formatStatusStructured(out, cc, clientOrigins(c))
		if err != nil {
			return err
		}
		if _, err := e.stdout.Write(b); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	} else if err := formatStatusTable(e.stdout, cc, notes, clientOrigins(c)); err != nil {
		return err
	}
	return statusVerdict(refs, cc.GetGenericXdsConfigs(), clientOrigins(c), wait)
}

// statusVerdict returns nil when every resource of refs is ACKED in gs,
// and not stale by origins, and otherwise an *exitError with the status's
// exit code, naming the resources at fault. With no refs (status --csds
// without arguments), every resource of gs is judged. wait is the time the
// resources were given, for messages; 0 when unknown (--csds).
func statusVerdict(refs []resourceRef, gs []*v3statuspb.ClientConfig_GenericXdsConfig, origins originFunc, wait time.Duration) error {
	code := exitOK
	var faults []string
	fault := func(c int, typ, name, what string) {
		if code == exitOK || c < code {
			code = c
		}
		faults = append(faults, fmt.Sprintf("%s/%s %s", typ, name, what))
	}
	notReceived := "was not received"
	if wait > 0 {
		notReceived = fmt.Sprintf("was not received within %v", wait)
	}
	judge := func(typ string, g *v3statuspb.ClientConfig_GenericXdsConfig) {
		switch st := g.GetClientStatus(); st {
		case v3adminpb.ClientResourceStatus_ACKED:
			if origins == nil {
				return
			}
			if o, ok := origins(g.GetTypeUrl(), g.GetName()); ok && o.Stale {
				fault(exitStale, typ, g.GetName(), "is stale (served from the persisted copy only)")
			}
		case v3adminpb.ClientResourceStatus_NACKED:
			fault(exitNACKed, typ, g.GetName(), "is NACKED")
		case v3adminpb.ClientResourceStatus_DOES_NOT_EXIST:
			fault(exitDoesNotExist, typ, g.GetName(), "does not exist")
		default:
			fault(exitNotReceived, typ, g.GetName(), fmt.Sprintf("%s (%s)", notReceived, st))
		}
	}
	if len(refs) == 0 {
		for _, g := range gs {
			judge(typeArgName(g.GetTypeUrl()), g)
		}
	}
	for _, r := range refs {
		found := false
		for _, g := range gs {
			if !r.matches(g) {
				continue
			}
			found = true
			judge(r.kind.names[0], g)
		}
		if !found {
			fault(exitNotReceived, r.kind.names[0], r.name, notReceived)
		}
	}
	if code == exitOK {
		return nil
	}
	return &exitError{code: code, err: errors.New("status: " + strings.Join(faults, "; "))}
}

// typeArgName returns the TYPE that names resources of typeURL on the
// command line ("cluster"), or the short type name of a type xdsctl does
// not know.
func typeArgName(typeURL string) string {
	if k := kindOf(typeURL); k != nil {
		return k.names[0]
	}
	return shortTypeName(typeURL)
}

// clientOrigins returns the origins of the values c has cached
// (Client.ResourceOrigin), for the resources of c's dump, which name their
// type by type URL.
func clientOrigins(c *client.Client) originFunc {
	return func(typeURL, name string) (client.ResourceOrigin, bool) {
		k := kindOf(typeURL)
		if k == nil {
			return client.ResourceOrigin{}, false
		}
		return c.ResourceOrigin(k.typ, name)
	}
}

// settleTracker records, for each resource of a status command, whether it
// has settled: received, reported missing or invalid, or failed.
type settleTracker struct {
	settled chan struct{} // closed when every resource has settled

	mu        sync.Mutex
	pending   map[resourceKey]bool  // guarded by mu: resources not settled yet
	errs      map[resourceKey]error // guarded by mu: the last ResourceError, nil after a change
	holdConns bool                  // guarded by mu: connection errors settle nothing (persistence)
}

// newSettleTracker returns a tracker of refs. With holdConns, a
// connection error does not settle a named resource until
// releaseConnErrors: a persisted value may still come.
func newSettleTracker(refs []resourceRef, holdConns bool) *settleTracker {
	t := &settleTracker{
		settled:   make(chan struct{}),
		pending:   make(map[resourceKey]bool, len(refs)),
		errs:      make(map[resourceKey]error, len(refs)),
		holdConns: holdConns,
	}
	for _, r := range refs {
		t.pending[r.key()] = true
	}
	return t
}

// record notes ev for the resource key. Ambient errors settle nothing:
// they come after a change, which already did; except for a wildcard,
// whose connection failure before any response is an ambient error.
func (t *settleTracker) record(key resourceKey, wildcard bool, ev event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case ev.Kind == eventChanged:
		delete(t.errs, key)
	case ev.Kind == eventResourceError && !wildcard:
		t.errs[key] = ev.Err
		if t.holdConns && errors.Is(ev.Err, client.ErrConnection) {
			return
		}
	case wildcard && errors.Is(ev.Err, client.ErrConnection):
		t.errs[key] = ev.Err
	default:
		return
	}
	t.settleLocked(key)
}

func (t *settleTracker) settleLocked(key resourceKey) {
	if t.pending[key] {
		delete(t.pending, key)
		if len(t.pending) == 0 {
			close(t.settled)
		}
	}
}

// releaseConnErrors ends the hold of newSettleTracker: the resources with
// a connection error settle, except those cached says have a value, whose
// change event is on its way.
func (t *settleTracker) releaseConnErrors(cached func(resourceKey) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.holdConns = false
	for key := range t.pending {
		if errors.Is(t.errs[key], client.ErrConnection) && !cached(key) {
			t.settleLocked(key)
		}
	}
}

// result returns the errors to show for resources without a better status
// in the dump (connection errors, unsupported watches), and, when every
// resource failed to connect or could not be watched, the error of the
// first one.
func (t *settleTracker) result(refs []resourceRef) (notes map[resourceKey]string, failed error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	notes = make(map[resourceKey]string)
	allFailed := true
	for _, r := range refs {
		err := t.errs[r.key()]
		unreachable := errors.Is(err, client.ErrConnection) || errors.Is(err, client.ErrUnsupported)
		if !unreachable {
			allFailed = false
			continue
		}
		notes[r.key()] = err.Error()
		if failed == nil {
			failed = err
		}
	}
	if !allFailed {
		failed = nil
	}
	return notes, failed
}

// inDump reports whether gs has the resource key; for a wildcard key,
// whether it has any resource of the type.
func inDump(gs []*v3statuspb.ClientConfig_GenericXdsConfig, key resourceKey) bool {
	for _, g := range gs {
		if g.GetTypeUrl() == key.typeURL && (key.name == wildcardName || g.GetName() == key.name) {
			return true
		}
	}
	return false
}
