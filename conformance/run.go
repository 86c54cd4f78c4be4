// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// maxParallel bounds how many checks run at once (each opens its own
// streams).
const maxParallel = 16

// Run runs the kit against the management server cfg describes, as part
// of a test: each check on each variant is a subtest of t named
// CHECK/VARIANT ("explicit_wildcard/sotw") that fails with what the
// server did wrong, is skipped with the reason, or passes with what was
// checked. Run calls t.Fatal when the server cannot be reached or cfg is
// invalid (see Check). With a testing.TB that is not a *testing.T, each
// failed check is reported with t.Errorf. The run is bounded as Check's.
func Run(t testing.TB, cfg Config) {
	t.Helper()
	rep, err := Check(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, n := range rep.Notes {
		t.Logf("conformance: %s", n)
	}
	tt, ok := t.(*testing.T)
	for _, res := range rep.Results {
		if !ok {
			if res.Status == Fail {
				t.Errorf("%s/%s (%s, %s): %s", res.Check, res.Variant, res.Rule, res.Source, res.Detail)
			}
			continue
		}
		tt.Run(res.Check+"/"+string(res.Variant), func(t *testing.T) {
			switch res.Status {
			case Fail:
				t.Errorf("%s (%s): %s", res.Rule, res.Source, res.Detail)
			case Skip:
				t.Skip(res.Detail)
			default:
				t.Log(res.Detail)
			}
		})
	}
}

// Check runs the kit against the management server cfg describes and
// returns the report. It first finds the resources to work with
// (Config.Listeners and the others, or a wildcard subscription and the
// references between resources), then runs the checks that do not
// change the server concurrently, each on its own streams, then the
// others one at a time, then judges every response received (the checks
// of responses).
//
// Every wait is bounded by Config.Timeout (for a response that must
// come) or Config.Quiet (to see that none comes), and each check waits a
// fixed number of times, so a run ends within a bounded time: with the
// defaults, under a minute against a server that answers at once, and at
// most a few minutes against one that never answers (docs/conformance.md,
// "How long a run takes").
//
// Check returns an error, and no report, when cfg is invalid, when the
// server cannot be reached (a stream cannot be opened, or fails before
// the first response with another status than UNIMPLEMENTED), or when ctx
// ends first.
func Check(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	k, err := newKit(cfg)
	if err != nil {
		return nil, err
	}
	defer k.close()
	if err := k.discover(ctx); err != nil {
		return nil, err
	}

	type job struct {
		c *check
		v Variant
	}
	var parallel, sequential []job
	outcomes := make(map[job]outcome)
	var mu sync.Mutex // guards outcomes while jobs run
	for _, c := range k.selected() {
		for _, v := range Variants() {
			if !slices.Contains(cfg.Variants, v) || !slices.Contains(c.Variants, v) {
				continue
			}
			j := job{c, v}
			switch {
			case k.unavailable[v] != "":
				outcomes[j] = skip("%s", k.unavailable[v])
			case c.responses:
			case c.NeedsChange && cfg.Change == nil:
				outcomes[j] = skip("needs a way to change the server's resources (Config.Change); xdsctl has none")
			case c.sequential:
				sequential = append(sequential, j)
			default:
				parallel = append(parallel, j)
			}
		}
	}
	runJob := func(j job) {
		o := k.runCheck(ctx, j.c, j.v)
		mu.Lock()
		outcomes[j] = o
		mu.Unlock()
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallel)
	for _, j := range parallel {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			runJob(j)
		}()
	}
	wg.Wait()
	for _, j := range sequential {
		runJob(j)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("conformance: run interrupted: %w", err)
	}

	rep := &Report{Resources: make(map[string][]string), Notes: k.notes}
	for _, t := range builtinTypes {
		if len(k.names[t]) > 0 {
			rep.Resources[t] = k.names[t]
		}
	}
	for _, c := range k.selected() {
		for _, v := range Variants() {
			if !slices.Contains(cfg.Variants, v) || !slices.Contains(c.Variants, v) {
				continue
			}
			o, ok := outcomes[job{c, v}]
			if !ok && c.responses {
				o = k.obs.verdict(v, c.Name)
			}
			rep.Results = append(rep.Results, Result{
				Check: c.Name, Variant: v, Status: o.status, Rule: c.Rule, Source: c.Source, Detail: o.detail,
			})
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// kit is the state of one run.
type kit struct {
	// Initialized by newKit and discover, read-only afterwards.
	cfg         Config
	tr          transport.Transport // Config.Transport, or one of Config.Server
	ownTr       bool                // tr was built here: close it
	http        *http.Client
	obs         *observer
	names       map[string][]string // by type URL: the resources to work with, sorted
	wild        map[string][]string // by type URL: what the legacy wildcard got in discovery
	unavailable map[Variant]string  // variants the server does not implement → why
	notes       []string            // what discovery noticed
}

func newKit(cfg Config) (*kit, error) {
	k := &kit{
		cfg: cfg, tr: cfg.Transport, http: cfg.HTTPClient, obs: newObserver(cfg.MaxResponseBytes),
		names: make(map[string][]string), wild: make(map[string][]string), unavailable: make(map[Variant]string),
	}
	if k.http == nil {
		k.http = &http.Client{}
	}
	if cfg.Server != "" {
		tr, err := grpctransport.NewBuilder(grpctransport.WithMaxRecvMsgSize(cfg.MaxResponseBytes)).Dial(&bootstrap.ServerConfig{
			ServerURI: cfg.Server, ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure},
		}, transport.BuildOptions{})
		if err != nil {
			return nil, fmt.Errorf("conformance: %s: %w", cfg.Server, err)
		}
		k.tr, k.ownTr = tr, true
	}
	return k, nil
}

func (k *kit) close() {
	if k.ownTr {
		k.tr.Close()
	}
}

// selected returns the checks of the run, in Catalog order.
func (k *kit) selected() []*check {
	if len(k.cfg.Checks) == 0 {
		return checks
	}
	var out []*check
	for _, c := range checks {
		if slices.Contains(k.cfg.Checks, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// runCheck runs c on v and closes the sessions it opened.
func (k *kit) runCheck(ctx context.Context, c *check, v Variant) outcome {
	r := &run{k: k, v: v, ctx: ctx}
	defer r.close()
	o := c.run(r)
	if ctx.Err() != nil {
		return fail("interrupted: %v", ctx.Err())
	}
	return o
}

// outcome is what a check concludes.
type outcome struct {
	status Status
	detail string
}

func pass(format string, args ...any) outcome {
	return outcome{Pass, fmt.Sprintf(format, args...)}
}

func fail(format string, args ...any) outcome {
	return outcome{Fail, fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) outcome {
	return outcome{Skip, fmt.Sprintf(format, args...)}
}

// setupFailed is the outcome of a check whose preparation failed: the
// server broke another rule (not answering, a stream that ended), which
// its own check reports.
func setupFailed(err error) outcome {
	if errors.Is(err, errNotAnswered) {
		return skip("could not set up: a request the check needs answered was %v", err)
	}
	return skip("could not set up: %v", err)
}

// check is one check of the kit.
type check struct {
	CheckInfo
	// sequential: the check runs alone, after the others, because it
	// changes the server's resources (or may).
	sequential bool
	// responses: a check of responses, judged from every response the
	// other checks received (observe.go); run is nil.
	responses bool
	run       func(r *run) outcome
}

// run is one check running on one variant.
type run struct {
	k        *kit
	v        Variant
	ctx      context.Context
	sessions []*session
}

// session opens a new client of the run's variant.
func (r *run) session() *session {
	s := r.k.newSession(r.ctx, r.v)
	r.sessions = append(r.sessions, s)
	return s
}

func (r *run) close() {
	for _, s := range r.sessions {
		s.close()
	}
}

// names returns the resources of typeURL the checks work with.
func (r *run) names(typeURL string) []string { return r.k.names[typeURL] }

// typesWith returns the types of candidates, in that order, that have at
// least n resources.
func (r *run) typesWith(n int, candidates ...string) []string {
	var out []string
	for _, t := range candidates {
		if len(r.names(t)) >= n {
			out = append(out, t)
		}
	}
	return out
}

// pick returns the first type of candidates with at least n resources.
func (r *run) pick(n int, candidates ...string) (string, bool) {
	ts := r.typesWith(n, candidates...)
	if len(ts) == 0 {
		return "", false
	}
	return ts[0], true
}

// change asks the server for a change (Config.Change).
func (r *run) change(op Op, typeURL, name string) error {
	if err := r.k.cfg.Change(r.ctx, Change{Op: op, TypeURL: typeURL, Name: name}); err != nil {
		return fmt.Errorf("Config.Change(%s %s %q): %w", op, typeName(typeURL), name, err)
	}
	return nil
}

// preferred is the order in which checks that need one type pick it:
// the types most servers have several resources of first.
var preferred = []string{resources.ClusterTypeURL, resources.EndpointsTypeURL, resources.ListenerTypeURL, resources.RouteConfigTypeURL}
