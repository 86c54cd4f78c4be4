// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"
	"github.com/proxyless/xds/transport/mixed"
	"github.com/proxyless/xds/transport/rest"
)

// Exit codes of run. status adds its own (exitNACKed, …, exitStale; see
// status.go).
const (
	exitOK      = 0 // success, including an interrupted demo, watch or resolve
	exitFailure = 1 // a runtime failure: bootstrap, connection, output
	exitUsage   = 2 // a usage error: unknown command, flag or resource type
)

// exitError is an error with its own exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// command is one xdsctl subcommand. To add a command, write a value of this
// type and list it in commands.
type command struct {
	name     string // as typed on the command line
	synopsis string // the arguments after the name, for usage lines
	summary  string // one line for the command list
	help     string // paragraphs printed by "xdsctl help NAME", before the flags

	// setup defines the command's flags on fs and returns the function
	// that runs the command once fs has been parsed, with the positional
	// arguments. It is also called, without running the command, to print
	// the command's help.
	setup func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

// commands lists the subcommands, in the order usage shows them. Each
// command lives in its own file.
var commands = []*command{demoCommand, watchCommand, resolveCommand, statusCommand, validateCommand, conformanceCommand}

// env is what a command writes to and reads the time from.
type env struct {
	stdout io.Writer        // safe for concurrent use
	stderr io.Writer        // safe for concurrent use
	now    func() time.Time // the clock for event timestamps
}

// usageError is an error in how xdsctl was called; run exits with
// exitUsage for it.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a *usageError with a formatted message.
func usageErrorf(format string, a ...any) error {
	return &usageError{fmt.Errorf(format, a...)}
}

// run runs xdsctl with args (without the program name), writing output to
// stdout and diagnostics to stderr, and returns the exit code: exitOK,
// exitFailure or exitUsage. Errors are reported as one line on stderr,
// prefixed "xdsctl: ". Commands that run until interrupted return when ctx
// is done, after releasing everything they started.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: &syncWriter{w: stdout}, stderr: &syncWriter{w: stderr}, now: time.Now}
	if len(args) == 0 {
		printUsage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			printUsage(e.stdout)
			return exitOK
		}
		cmd := lookupCommand(args[1])
		if cmd == nil {
			return fail(e, usageErrorf("help: unknown command %q (run 'xdsctl help')", args[1]))
		}
		printCommandUsage(e.stdout, cmd)
		return exitOK
	}
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return fail(e, usageErrorf("unknown command %q (run 'xdsctl help')", args[0]))
	}
	fs := newFlagSet(cmd.name)
	runCmd := cmd.setup(fs)
	pos, err := parseFlags(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(e.stdout, cmd)
		return exitOK
	}
	if err != nil {
		return fail(e, usageErrorf("%s: %s (run 'xdsctl help %s')", cmd.name, flagErrorText(err), cmd.name))
	}
	if err := runCmd(ctx, e, pos); err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			err = usageErrorf("%s: %w (run 'xdsctl help %s')", cmd.name, err, cmd.name)
		}
		return fail(e, err)
	}
	return exitOK
}

// fail prints err on one line of stderr and returns its exit code:
// exitUsage for a *usageError, the code of an *exitError, exitFailure
// otherwise.
func fail(e *env, err error) int {
	fmt.Fprintf(e.stderr, "xdsctl: %s\n", oneLine(errString(err)))
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// flagDashRE finds the flag names in the errors of package flag, which
// spells them with one dash ("-output").
var flagDashRE = regexp.MustCompile(`(^|[ :])-([A-Za-z][A-Za-z0-9-]+)`)

// flagErrorText returns the message of a flag parsing error with the flag
// names spelled as users type them and as help prints them: "--output",
// "-o".
func flagErrorText(err error) string {
	return flagDashRE.ReplaceAllString(err.Error(), "$1--$2")
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// newFlagSet returns a flag set that reports errors instead of printing
// them: run prints them as one line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("xdsctl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs, allowing flags after positional
// arguments (`watch cluster/c1 --output json`), and returns the positional
// arguments. Everything after "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// printUsage prints the command list.
func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("xdsctl looks at an xDS management server the way a proxyless gRPC client sees it.\n\n")
	b.WriteString("Usage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  xdsctl %s %s\n", c.name, c.synopsis)
	}
	b.WriteString("  xdsctl help [COMMAND]\n\nCommands:\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-11s %s\n", "help", "print this text, or the help of a command")
	b.WriteString("\n" + resourceArgHelp + "\n")
	b.WriteString(outputHelp + "\n")
	b.WriteString("Exit status: 0 on success (also when demo, watch or resolve is interrupted),\n")
	b.WriteString("1 on a runtime failure, 2 on a usage error; status: 3 NACKED, 4 DOES_NOT_EXIST,\n")
	b.WriteString("5 not received, 6 stale: served from --persist-dir only (see 'xdsctl help status').\n")
	io.WriteString(w, b.String())
}

// resourceArgHelp describes TYPE/NAME arguments.
const resourceArgHelp = `Resources are named TYPE/NAME, where TYPE is listener, route, cluster or
endpoints (or lds, rds, cds, eds, or the type names the output prints:
Listener, RouteConfiguration, Cluster, ClusterLoadAssignment; any case)
and NAME is everything after the first "/", so xdstp names work:
cluster/xdstp://auth/envoy.config.cluster.v3.Cluster/c1.
TYPE/* (quote it for the shell: 'cds/*') names every resource of the type.
Without --bootstrap or --server, the bootstrap is read from the file named
by GRPC_XDS_BOOTSTRAP, or from GRPC_XDS_BOOTSTRAP_CONFIG. --server
HOST:PORT talks to one management server without a bootstrap file.
`

// outputHelp describes --output, the same for every command (the
// contract of output.go).
const outputHelp = `Every command takes -o text|json|yaml (--output). text is for people;
json prints one JSON object per line (per record) and nothing else on
stdout; yaml prints the same records as YAML documents, each starting with
"---". Keys are snake_case everywhere, protos included (their proto field
names: "generic_xds_configs", "api_listener"). Messages go to stderr.
`

// printCommandUsage prints the help of cmd with its flags.
func printCommandUsage(w io.Writer, cmd *command) {
	fs := newFlagSet(cmd.name)
	cmd.setup(fs)
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: xdsctl %s %s\n\n%s\n", cmd.name, cmd.synopsis, strings.TrimRight(cmd.help, "\n"))
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			b.WriteString("\nFlags:\n")
			first = false
		}
		// As flag.PrintDefaults, with the "--" spelling of the synopsis
		// ("-o" for one-letter flags).
		name, usage := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		fmt.Fprintf(&b, "  %s%s", dashes, f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n      %s", usage)
		if f.DefValue != "" && f.DefValue != "0s" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	io.WriteString(w, b.String())
}

// syncWriter serializes writes to w: watcher callbacks and the demo's
// updater goroutine share stdout.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer // guarded by mu
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// outputFormat is the value of --output (-o).
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
	outputYAML outputFormat = "yaml"
)

// String implements flag.Value.
func (o *outputFormat) String() string { return string(*o) }

// Set implements flag.Value.
func (o *outputFormat) Set(s string) error {
	switch f := outputFormat(s); f {
	case outputText, outputJSON, outputYAML:
		*o = f
		return nil
	}
	return fmt.Errorf("want text, json or yaml, got %q", s)
}

// structured reports whether o is a machine-readable format (JSON or
// YAML), as opposed to text for people.
func (o outputFormat) structured() bool { return o == outputJSON || o == outputYAML }

// outputFlagUsage is the usage of --output, shared by every command.
const outputFlagUsage = "output `format`: text, json (one object per line, snake_case keys) or yaml (one document per record)"

// registerOutput defines --output and its short form -o on fs, with the
// default text, and returns the value they set.
func registerOutput(fs *flag.FlagSet) *outputFormat {
	out := outputText
	fs.Var(&out, "output", outputFlagUsage)
	fs.Var(&out, "o", "short for --output: `format` text, json or yaml")
	return &out
}

// clientFlags are the flags of the commands that talk to a management
// server: watch, resolve and status.
type clientFlags struct {
	bootstrap       string
	server          string // --server HOST:PORT, instead of a bootstrap
	node            string // --node, with --server
	insecure        bool   // --insecure, with --server (the default)
	tls             bool   // --tls, with --server
	tlsCAFile       string // --tls-ca-file, with --server; implies --tls
	tlsCertFile     string // --tls-cert-file, with --server; implies --tls
	tlsKeyFile      string // --tls-key-file, with --server; implies --tls
	resourceTimeout time.Duration
	maxRecvMsgSize  int // bytes; 0 means the default
	logLevel        string
	delta           bool
	perType         bool          // --per-type: one stream per type URL on the type's own service
	rest            string        // --rest URL: REST-JSON polling instead of gRPC
	restInterval    time.Duration // --rest-interval, with --rest
	file            string        // --file PATH: a filesystem subscription instead of a server
	persistDir      string        // --persist-dir DIR: last-known-good persistence (client.WithPersistence)
	persistTimeout  time.Duration // --persist-timeout, with --persist-dir (client.WithPersistenceTimeout)
}

// defaultServerNode is the node id --server sends without --node.
const defaultServerNode = "xdsctl"

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.bootstrap, "bootstrap", "", "the gRPC xDS bootstrap `file`; default: from GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG")
	fs.StringVar(&f.server, "server", "", "talk to the management server at `HOST:PORT` without a bootstrap file (see --node, --insecure, --tls)")
	fs.StringVar(&f.node, "node", "", "with --server, --rest or --file: the node `id` to send (default \""+defaultServerNode+"\")")
	fs.BoolVar(&f.insecure, "insecure", false, "with --server: connect without TLS (the default)")
	fs.BoolVar(&f.tls, "tls", false, "with --server: connect with TLS, verifying the server against the system roots or --tls-ca-file")
	fs.StringVar(&f.tlsCAFile, "tls-ca-file", "", "with --server: PEM `file` of the roots to verify the server with; implies --tls")
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "with --server: PEM `file` of the client certificate chain for mTLS, with --tls-key-file; implies --tls")
	fs.StringVar(&f.tlsKeyFile, "tls-key-file", "", "with --server: PEM `file` of the client's private key for mTLS, with --tls-cert-file; implies --tls")
	fs.DurationVar(&f.resourceTimeout, "resource-timeout", 0, "how long to wait for a requested resource before it is reported not to exist; 0 means the client's default (15s)")
	fs.IntVar(&f.maxRecvMsgSize, "max-recv-msg-size", 0, "the largest response, in `bytes`, accepted from a management server; 0 means the default (4194304, 4 MiB)")
	fs.StringVar(&f.logLevel, "log-level", "", "log the client's activity to stderr at this `level` (trace, debug, info, warn or error; trace adds every message sent and received); default: no logs")
	fs.BoolVar(&f.delta, "delta", false, "speak incremental (delta) xDS to every management server (DeltaAggregatedResources); default: SotW, unless a server's bootstrap entry lists the \"delta_ads\" server feature")
	fs.BoolVar(&f.perType, "per-type", false, "open one stream per resource type on the type's own service (StreamListeners, …; with --delta, DeltaListeners, …) instead of one ADS stream; a server's bootstrap entry can ask for it with the server feature \"xds_per_type\"")
	fs.StringVar(&f.rest, "rest", "", "poll the management server's REST-JSON endpoints at this base `URL` (http://HOST:PORT) instead of opening gRPC streams; SotW only")
	fs.DurationVar(&f.restInterval, "rest-interval", 0, "with --rest: how often to poll when nothing changes (default 30s, jittered ±20%)")
	fs.StringVar(&f.persistDir, "persist-dir", "", "save the values received in this `directory` and, when no management server answers within --persist-timeout of the start, serve the saved ones, marked stale (gRFC A71 last-known-good; R-10.5)")
	fs.DurationVar(&f.persistTimeout, "persist-timeout", 0, "with --persist-dir: how long to wait for a management server before serving the saved values (default 10s)")
	fs.StringVar(&f.file, "file", "", "read the resources from this `path`, a file holding one DiscoveryResponse (.json, .yaml, .textpb or .pb) or a directory of such files, re-read when replaced; no server, no bootstrap")
}

// expiry returns the does-not-exist timeout the client will use.
func (f *clientFlags) expiry() time.Duration {
	if f.resourceTimeout > 0 {
		return f.resourceTimeout
	}
	return defaultResourceTimeout
}

// persistSettle returns how long after the client's start the persisted
// values of --persist-dir are served when no server answers, and false
// without --persist-dir.
func (f *clientFlags) persistSettle() (time.Duration, bool) {
	if f.persistDir == "" {
		return 0, false
	}
	if f.persistTimeout > 0 {
		return f.persistTimeout, true
	}
	return client.DefaultPersistenceTimeout, true
}

// defaultResourceTimeout is the client's does-not-exist timer.
const defaultResourceTimeout = 15 * time.Second

// parseLogLevel parses --log-level: a slog level name, or trace
// (client.LevelTrace).
func parseLogLevel(s string) (slog.Level, error) {
	if strings.EqualFold(s, "trace") {
		return client.LevelTrace, nil
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(s)); err != nil {
		return 0, usageErrorf("--log-level: want trace, debug, info, warn or error, got %q", s)
	}
	return lvl, nil
}

// options validates the flags and returns the client options they ask for.
func (f *clientFlags) options(stderr io.Writer) ([]client.Option, error) {
	if f.resourceTimeout < 0 {
		return nil, usageErrorf("--resource-timeout must not be negative, got %v", f.resourceTimeout)
	}
	if f.maxRecvMsgSize < 0 {
		return nil, usageErrorf("--max-recv-msg-size must not be negative, got %d", f.maxRecvMsgSize)
	}
	if f.persistTimeout < 0 {
		return nil, usageErrorf("--persist-timeout must not be negative, got %v", f.persistTimeout)
	}
	if f.persistTimeout > 0 && f.persistDir == "" {
		return nil, usageErrorf("--persist-timeout needs --persist-dir")
	}
	var opts []client.Option
	if f.persistDir != "" {
		opts = append(opts, client.WithPersistence(f.persistDir), client.WithPersistenceTimeout(f.persistTimeout))
	}
	if f.resourceTimeout > 0 {
		opts = append(opts, client.WithWatchExpiryTimeout(f.resourceTimeout))
	}
	if f.maxRecvMsgSize > 0 {
		opts = append(opts, client.WithMaxRecvMsgSize(f.maxRecvMsgSize))
	}
	if f.delta {
		opts = append(opts, client.WithDelta())
	}
	if f.logLevel != "" {
		lvl, err := parseLogLevel(f.logLevel)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl, ReplaceAttr: nameTrace}))))
	}
	return opts, nil
}

// nameTrace is the slog ReplaceAttr of --log-level: it names the level of
// whole protocol messages, client.LevelTrace, "TRACE", as --log-level
// does, where slog would print "DEBUG-4".
func nameTrace(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok && l == client.LevelTrace {
			a.Value = slog.StringValue("TRACE")
		}
	}
	return a
}

// newClient loads the bootstrap and creates a client with the options of
// f. The caller must close the client.
func (f *clientFlags) newClient(e *env) (*client.Client, error) {
	opts, err := f.options(e.stderr)
	if err != nil {
		return nil, err
	}
	cfg, b, err := f.source()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, append(opts, client.WithTransportBuilder(b))...)
	if err != nil {
		return nil, fmt.Errorf("creating the xDS client: %w", err)
	}
	return c, nil
}

// source returns the bootstrap and the transport builder the flags ask
// for: a filesystem subscription (--file), REST-JSON polling (--rest), or
// gRPC servers from a bootstrap (--server, --bootstrap or the environment)
// reached by the transport each server entry asks for (transport/mixed:
// file:// and http(s):// server URIs, the "xds_per_type" server feature,
// else ADS; --per-type for every gRPC server).
func (f *clientFlags) source() (*bootstrap.Config, transport.Builder, error) {
	if f.restInterval < 0 {
		return nil, nil, usageErrorf("--rest-interval must not be negative, got %v", f.restInterval)
	}
	if f.restInterval > 0 && f.rest == "" {
		return nil, nil, usageErrorf("--rest-interval needs --rest")
	}
	if f.rest != "" || f.file != "" {
		if f.rest != "" && f.file != "" {
			return nil, nil, usageErrorf("--file and --rest exclude each other")
		}
		flag := "--rest"
		if f.file != "" {
			flag = "--file"
		}
		excluded := map[string]bool{
			"--bootstrap": f.bootstrap != "", "--server": f.server != "", "--delta": f.delta, "--per-type": f.perType,
		}
		for _, name := range slices.Sorted(maps.Keys(excluded)) {
			if excluded[name] {
				return nil, nil, usageErrorf("%s and %s exclude each other", flag, name)
			}
		}
		var (
			cfg *bootstrap.Config
			b   transport.Builder
			err error
		)
		if f.file != "" {
			cfg, b, err = file.Bootstrap(f.file)
		} else {
			var ropts []rest.Option
			if f.restInterval > 0 {
				ropts = append(ropts, rest.WithInterval(f.restInterval))
			}
			cfg, b, err = rest.Bootstrap(f.rest, ropts...)
		}
		if err != nil {
			return nil, nil, usageErrorf("%s: %w", flag, err)
		}
		if f.node != "" {
			cfg.Node.ID = f.node
		}
		return cfg, b, nil
	}
	cfg, err := f.loadBootstrap()
	if err != nil {
		return nil, nil, err
	}
	var mopts []mixed.Option // the client's options (--max-recv-msg-size, its logger) reach every transport
	if f.perType {
		mopts = append(mopts, mixed.WithPerType())
	}
	return cfg, mixed.NewBuilder(mopts...), nil
}

// loadBootstrap returns the bootstrap the flags name: the one --server
// describes, the file --bootstrap names, or the one the environment names.
func (f *clientFlags) loadBootstrap() (*bootstrap.Config, error) {
	serverOnly := map[string]bool{
		"--node": f.node != "", "--insecure": f.insecure, "--tls": f.tls,
		"--tls-ca-file": f.tlsCAFile != "", "--tls-cert-file": f.tlsCertFile != "", "--tls-key-file": f.tlsKeyFile != "",
	}
	if f.server == "" {
		for _, name := range slices.Sorted(maps.Keys(serverOnly)) {
			if serverOnly[name] {
				return nil, usageErrorf("%s needs --server", name)
			}
		}
		return loadBootstrap(f.bootstrap)
	}
	if f.bootstrap != "" {
		return nil, usageErrorf("--server and --bootstrap exclude each other")
	}
	data, err := f.serverBootstrap()
	if err != nil {
		return nil, err
	}
	cfg, err := bootstrap.Parse(data)
	if err != nil {
		return nil, usageErrorf("--server: %w", err)
	}
	return cfg, nil
}

// serverBootstrap returns the bootstrap JSON that --server and its
// companion flags describe.
func (f *clientFlags) serverBootstrap() ([]byte, error) {
	if _, _, err := net.SplitHostPort(f.server); err != nil {
		return nil, usageErrorf("--server: want HOST:PORT, got %q", f.server)
	}
	useTLS := f.tls || f.tlsCAFile != "" || f.tlsCertFile != "" || f.tlsKeyFile != ""
	if useTLS && f.insecure {
		return nil, usageErrorf("--insecure and --tls exclude each other")
	}
	if (f.tlsCertFile == "") != (f.tlsKeyFile == "") {
		return nil, usageErrorf("--tls-cert-file and --tls-key-file go together")
	}
	creds := map[string]any{"type": "insecure"}
	if useTLS {
		config := map[string]string{}
		for key, file := range map[string]string{
			"ca_certificate_file": f.tlsCAFile, "certificate_file": f.tlsCertFile, "private_key_file": f.tlsKeyFile,
		} {
			if file != "" {
				config[key] = file
			}
		}
		creds = map[string]any{"type": "tls", "config": config}
	}
	node := f.node
	if node == "" {
		node = defaultServerNode
	}
	return json.Marshal(map[string]any{
		"xds_servers": []any{map[string]any{"server_uri": f.server, "channel_creds": []any{creds}}},
		"node":        map[string]string{"id": node},
	})
}

// loadBootstrap parses the bootstrap file at path, or, when path is empty,
// the bootstrap named by the environment. When the environment names one
// that cannot be used, the error says which variable, which file and why
// (bootstrap.FromEnv's error).
func loadBootstrap(path string) (*bootstrap.Config, error) {
	if path == "" {
		cfg, err := bootstrap.FromEnv()
		switch {
		case errors.Is(err, bootstrap.ErrNoBootstrap):
			return nil, fmt.Errorf("no --bootstrap or --server given, and neither %s nor %s is set", bootstrap.EnvBootstrapFile, bootstrap.EnvBootstrapConfig)
		case err != nil:
			return nil, fmt.Errorf("no --bootstrap or --server given, and the bootstrap the environment names is unusable: %w", err)
		}
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the bootstrap: %w", err)
	}
	cfg, err := bootstrap.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("bootstrap %s: %w", path, err)
	}
	return cfg, nil
}
