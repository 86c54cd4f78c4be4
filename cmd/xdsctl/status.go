// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/proxyless/xds/client"

	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// defaultStatusWait is the default of status --wait.
const defaultStatusWait = 5 * time.Second

var statusCommand = &command{
	name:     "status",
	synopsis: "[--bootstrap FILE] [--delta] [--wait D] [--output text|json] [--resource-timeout D] TYPE/NAME...",
	summary:  "subscribe to resources and print the client's CSDS dump",
	help: `Status subscribes to the named resources, waits until each of them has been
received, reported missing or invalid, or failed to connect, or until --wait
has passed, whichever comes first, and prints the client's CSDS dump (gRFC
A40): a table with the columns TYPE NAME STATUS VERSION ERROR, or with
--output json the protojson of the envoy.service.status.v3.ClientConfig,
indented by two spaces. STATUS is REQUESTED (nothing received yet), ACKED,
NACKED or DOES_NOT_EXIST. ERROR is the rejection of a NACKed resource, or
the connection error of a resource still REQUESTED.

Interrupting the wait (Ctrl-C) prints the dump at once. Status fails (exit
1) without printing the dump when every resource failed to connect to its
management server.

` + resourceArgHelp,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var cf clientFlags
		cf.register(fs)
		out := outputText
		fs.Var(&out, "output", "output `format`: text or json")
		wait := fs.Duration("wait", defaultStatusWait, "the longest time to wait for the resources before printing")
		csdsAddr := fs.String("csds", "", "print the status that the process serving CSDS at this `address` reports for its clients, instead of subscribing (TYPE/NAME arguments then filter)")
		return func(ctx context.Context, e *env, args []string) error {
			if *csdsAddr != "" {
				return runStatusCSDS(ctx, e, *csdsAddr, out, args)
			}
			return runStatus(ctx, e, &cf, *wait, out, args)
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

	t := newSettleTracker(refs)
	for _, r := range refs {
		key := r.key()
		defer r.watch(c, e, func(ev event) { t.record(key, ev) })()
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
	if out == outputJSON {
		b, err := formatStatusJSON(cc)
		if err != nil {
			return err
		}
		if _, err := e.stdout.Write(b); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		return nil
	}
	return formatStatusTable(e.stdout, cc, notes)
}

// settleTracker records, for each resource of a status command, whether it
// has settled: received, reported missing or invalid, or failed.
type settleTracker struct {
	settled chan struct{} // closed when every resource has settled

	mu      sync.Mutex
	pending map[resourceKey]bool  // guarded by mu: resources not settled yet
	errs    map[resourceKey]error // guarded by mu: the last ResourceError, nil after a change
}

func newSettleTracker(refs []resourceRef) *settleTracker {
	t := &settleTracker{
		settled: make(chan struct{}),
		pending: make(map[resourceKey]bool, len(refs)),
		errs:    make(map[resourceKey]error, len(refs)),
	}
	for _, r := range refs {
		t.pending[r.key()] = true
	}
	return t
}

// record notes ev for the resource key. Ambient errors settle nothing:
// they come after a change, which already did.
func (t *settleTracker) record(key resourceKey, ev event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case eventChanged:
		delete(t.errs, key)
	case eventResourceError:
		t.errs[key] = ev.Err
	default:
		return
	}
	if t.pending[key] {
		delete(t.pending, key)
		if len(t.pending) == 0 {
			close(t.settled)
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

// inDump reports whether gs has the resource key.
func inDump(gs []*v3statuspb.ClientConfig_GenericXdsConfig, key resourceKey) bool {
	for _, g := range gs {
		if g.GetTypeUrl() == key.typeURL && g.GetName() == key.name {
			return true
		}
	}
	return false
}
