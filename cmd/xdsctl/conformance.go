// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/proxyless/xds/conformance"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// conformanceDeadline bounds a whole conformance run, whatever the server
// does: with the default --timeout and --quiet a run against a server
// that never answers takes a few minutes (docs/conformance.md, "How long
// a run takes"); this is a safety net above that.
const conformanceDeadline = 10 * time.Minute

var conformanceCommand = &command{
	name:     "conformance",
	synopsis: "(--server HOST:PORT [--node ID] [--insecure | --tls …] | --bootstrap FILE) [--listener NAME]... [--variant sotw|delta|both] [--per-type] [--rest URL] [--timeout D] [--quiet D] [-o table|json|yaml]",
	summary:  "check a management server against the xDS protocol (R-28) and exit 1 when it breaks a rule",
	help: `Conformance connects to a management server as an xDS client of its own,
finds resources to work with (a wildcard Listener and Cluster subscription
and what they name, or the Listeners given with --listener and what they
name), and runs every check of package conformance on every variant asked
for: the explicit and the legacy wildcard, subsets, ACKs, NACKs, stale
nonces, unsubscribing and subscribing again, delta's removed_resources and
initial_resource_versions, and the form of every response. Each check
cites its rule (docs/protocol.md R-28, from the xDS protocol text);
docs/conformance.md explains them and how known servers fare.

The output is a table (CHECK VARIANT RESULT RULE DETAIL) and a summary
line, or with -o json one object per check and variant, keys "check",
"variant", "result" (pass, fail or skip), "rule", "source" and "detail",
then a summary object {"summary": {"pass": N, "fail": N, "skip": N},
"result": "pass"|"fail", "duration_seconds": S, "resources": [{"type_url": …, "names": […]}, …], "notes":
[…]}. A check that does not apply is skipped, saying why: a variant the
server does not implement, too few resources, and every check that needs
the server to change a resource (update_pushed, resource_deleted, …),
which only the Go API (conformance.Config.Change) can ask for.

--variant picks SotW, delta (incremental) or both (the default) on the
aggregated stream; --per-type adds the same checks on the per-type
services (StreamListeners, DeltaListeners, …); --rest URL adds REST-JSON
polling at that base URL. The node is --node (default "xds-conformance"),
or the bootstrap's. Credentials are those of --server (--insecure, the
default, or --tls with --tls-ca-file, --tls-cert-file, --tls-key-file) or
of the bootstrap's first server.

A response that must come is waited for --timeout; to see that none comes,
conformance waits --quiet, which must exceed the server's usual response
time. The run ends within a bounded time: seconds against a server that
answers at once, at most a few minutes against one that never does, and
never more than 10 minutes.

Exit status: 0 when no check failed, 1 when one did, 2 when the run could
not be made (bad flags, the server cannot be reached).`,
	setup: func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error {
		var f conformanceFlags
		f.register(fs)
		return f.run
	},
}

// conformanceFlags are the flags of xdsctl conformance.
type conformanceFlags struct {
	conn      clientFlags // only the server, node, TLS and bootstrap flags are used
	listeners stringList
	variant   string
	perType   bool
	rest      string
	timeout   time.Duration
	quiet     time.Duration
	output    string
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func (f *conformanceFlags) register(fs *flag.FlagSet) {
	c := &f.conn
	fs.StringVar(&c.bootstrap, "bootstrap", "", "check the first management server of this bootstrap `file`, with its credentials and node")
	fs.StringVar(&c.server, "server", "", "check the management server at `HOST:PORT`")
	fs.StringVar(&c.node, "node", "", "with --server: the node `id` to send (default \""+conformance.DefaultNodeID+"\")")
	fs.BoolVar(&c.insecure, "insecure", false, "with --server: connect without TLS (the default)")
	fs.BoolVar(&c.tls, "tls", false, "with --server: connect with TLS, verifying the server against the system roots or --tls-ca-file")
	fs.StringVar(&c.tlsCAFile, "tls-ca-file", "", "with --server: PEM `file` of the roots to verify the server with; implies --tls")
	fs.StringVar(&c.tlsCertFile, "tls-cert-file", "", "with --server: PEM `file` of the client certificate chain for mTLS, with --tls-key-file; implies --tls")
	fs.StringVar(&c.tlsKeyFile, "tls-key-file", "", "with --server: PEM `file` of the client's private key for mTLS, with --tls-cert-file; implies --tls")
	fs.Var(&f.listeners, "listener", "work with this Listener `name` (repeatable) and what it names, instead of a wildcard subscription")
	fs.StringVar(&f.variant, "variant", "both", "the protocol `variant` to check: sotw, delta or both")
	fs.BoolVar(&f.perType, "per-type", false, "also check the per-type services (StreamListeners, …; DeltaListeners, …)")
	fs.StringVar(&f.rest, "rest", "", "also check REST-JSON polling at this base `URL` (http://HOST:PORT)")
	fs.DurationVar(&f.timeout, "timeout", conformance.DefaultTimeout, "how long to wait for a response the server must send")
	fs.DurationVar(&f.quiet, "quiet", conformance.DefaultQuiet, "how long to wait to see that the server sends nothing")
	fs.StringVar(&f.output, "output", "table", "output `format`: table (or text), json (one object per line, snake_case keys) or yaml")
	fs.StringVar(&f.output, "o", "table", "short for --output: `format` table, json or yaml")
}

// config validates the flags and returns the kit's Config, with the
// transport it must close.
func (f *conformanceFlags) config() (conformance.Config, func(), error) {
	var cfg conformance.Config
	switch f.output {
	case "table", "text", "json", "yaml":
	default:
		return cfg, nil, usageErrorf("--output: want table, json or yaml, got %q", f.output)
	}
	switch f.variant {
	case "sotw":
		cfg.Variants = []conformance.Variant{conformance.SotW}
	case "delta":
		cfg.Variants = []conformance.Variant{conformance.Delta}
	case "both":
		cfg.Variants = []conformance.Variant{conformance.SotW, conformance.Delta}
	default:
		return cfg, nil, usageErrorf("--variant: want sotw, delta or both, got %q", f.variant)
	}
	if f.perType {
		for _, v := range cfg.Variants {
			if v == conformance.SotW {
				cfg.Variants = append(cfg.Variants, conformance.SotWPerType)
			} else {
				cfg.Variants = append(cfg.Variants, conformance.DeltaPerType)
			}
		}
	}
	if f.rest != "" {
		if !strings.HasPrefix(f.rest, "http://") && !strings.HasPrefix(f.rest, "https://") {
			return cfg, nil, usageErrorf("--rest: want http://HOST:PORT or https://HOST:PORT, got %q", f.rest)
		}
		cfg.REST = f.rest
		cfg.Variants = append(cfg.Variants, conformance.REST)
	}
	if f.timeout <= 0 || f.quiet <= 0 {
		return cfg, nil, usageErrorf("--timeout and --quiet must be positive")
	}
	cfg.Timeout, cfg.Quiet = f.timeout, f.quiet
	cfg.Listeners = f.listeners
	if f.conn.server == "" && f.conn.bootstrap == "" {
		return cfg, nil, usageErrorf("--server or --bootstrap is needed")
	}
	boot, err := f.conn.loadBootstrap()
	if err != nil {
		return cfg, nil, err
	}
	if f.conn.server != "" && f.conn.node == "" {
		boot.Node.ID = conformance.DefaultNodeID
	}
	cfg.Node = boot.Node.Proto()
	tr, err := grpctransport.NewBuilder(grpctransport.WithMaxRecvMsgSize(conformance.DefaultMaxResponseBytes)).Dial(boot.Servers[0], transport.BuildOptions{})
	if err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", boot.Servers[0].ServerURI, err)
	}
	cfg.Transport = tr
	return cfg, tr.Close, nil
}

func (f *conformanceFlags) run(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q", args[0])
	}
	cfg, done, err := f.config()
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, conformanceDeadline)
	defer cancel()
	rep, err := conformance.Check(ctx, cfg)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := writeConformance(e.stdout, outputFormatOf(f.output), rep); err != nil {
		return err
	}
	if f.output == "table" || f.output == "text" {
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stderr, "note: %s\n", n)
		}
	}
	if rep.Failed() {
		return &exitError{code: exitFailure, err: fmt.Errorf("conformance: %d checks failed", rep.Counts()[conformance.Fail])}
	}
	return nil
}

func outputFormatOf(s string) outputFormat {
	if s == "table" {
		return outputText
	}
	return outputFormat(s)
}

// conformanceRecord is one line of -o json: a check on a variant.
type conformanceRecord struct {
	Check   string `json:"check"`
	Variant string `json:"variant"`
	Result  string `json:"result"`
	Rule    string `json:"rule"`
	Source  string `json:"source"`
	Detail  string `json:"detail"`
}

// conformanceSummary is the last line of -o json.
type conformanceSummary struct {
	Summary         map[string]int         `json:"summary"`
	Result          string                 `json:"result"`
	DurationSeconds float64                `json:"duration_seconds"`
	Resources       []conformanceResources `json:"resources"`
	Notes           []string               `json:"notes,omitempty"`
}

// conformanceResources are the resources of one type the checks worked
// with.
type conformanceResources struct {
	TypeURL string   `json:"type_url"`
	Names   []string `json:"names"`
}

// writeConformance prints rep in format out.
func writeConformance(w io.Writer, out outputFormat, rep *conformance.Report) error {
	if !out.structured() {
		_, err := io.WriteString(w, rep.String())
		return err
	}
	var records []any
	for _, r := range rep.Results {
		records = append(records, conformanceRecord{
			Check: r.Check, Variant: string(r.Variant), Result: string(r.Status), Rule: r.Rule, Source: r.Source, Detail: r.Detail,
		})
	}
	n := rep.Counts()
	result := "pass"
	if rep.Failed() {
		result = "fail"
	}
	sum := conformanceSummary{
		Summary: map[string]int{"pass": n[conformance.Pass], "fail": n[conformance.Fail], "skip": n[conformance.Skip]},
		Result:  result, DurationSeconds: rep.Duration.Seconds(), Resources: []conformanceResources{}, Notes: rep.Notes,
	}
	for _, t := range slices.Sorted(maps.Keys(rep.Resources)) {
		sum.Resources = append(sum.Resources, conformanceResources{TypeURL: t, Names: rep.Resources[t]})
	}
	records = append(records, sum)
	for _, rec := range records {
		b, err := encodeRecord(out, rec)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
