// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
)

// Exit codes of run.
const (
	exitOK      = 0 // success, including an interrupted demo, watch or resolve
	exitFailure = 1 // a runtime failure: bootstrap, connection, output
	exitUsage   = 2 // a usage error: unknown command, flag or resource type
)

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
var commands = []*command{demoCommand, watchCommand, resolveCommand, statusCommand, validateCommand}

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
		return fail(e, usageErrorf("%s: %w (run 'xdsctl help %s')", cmd.name, err, cmd.name))
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

// fail prints err on one line of stderr and returns its exit code.
func fail(e *env, err error) int {
	fmt.Fprintf(e.stderr, "xdsctl: %s\n", oneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
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
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-8s %s\n", "help", "print this text, or the help of a command")
	b.WriteString("\n" + resourceArgHelp + "\n")
	b.WriteString("Exit status: 0 on success (also when demo, watch or resolve is interrupted),\n")
	b.WriteString("1 on a runtime failure, 2 on a usage error.\n")
	io.WriteString(w, b.String())
}

// resourceArgHelp describes TYPE/NAME arguments.
const resourceArgHelp = `Resources are named TYPE/NAME, where TYPE is listener, route, cluster or
endpoints (or lds, rds, cds, eds) and NAME is everything after the first
"/", so xdstp names work: cluster/xdstp://auth/envoy.config.cluster.v3.Cluster/c1.
Without --bootstrap, the bootstrap is read from the file named by
GRPC_XDS_BOOTSTRAP, or from GRPC_XDS_BOOTSTRAP_CONFIG.
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
		// As flag.PrintDefaults, with the "--" spelling of the synopsis.
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n      %s", usage)
		if f.DefValue != "" && f.DefValue != "0s" {
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

// outputFormat is the value of --output.
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

// String implements flag.Value.
func (o *outputFormat) String() string { return string(*o) }

// Set implements flag.Value.
func (o *outputFormat) Set(s string) error {
	switch f := outputFormat(s); f {
	case outputText, outputJSON:
		*o = f
		return nil
	}
	return fmt.Errorf("want text or json, got %q", s)
}

// clientFlags are the flags of the commands that talk to a management
// server named by a bootstrap.
type clientFlags struct {
	bootstrap       string
	resourceTimeout time.Duration
	logLevel        string
	delta           bool
}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.bootstrap, "bootstrap", "", "the gRPC xDS bootstrap `file`; default: from GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG")
	fs.DurationVar(&f.resourceTimeout, "resource-timeout", 0, "how long to wait for a requested resource before it is reported not to exist; 0 means the client's default (15s)")
	fs.StringVar(&f.logLevel, "log-level", "", "log the client's activity to stderr at this `level` (debug, info, warn or error); default: no logs")
	fs.BoolVar(&f.delta, "delta", false, "speak incremental (delta) xDS to every management server (DeltaAggregatedResources); default: SotW, unless a server's bootstrap entry lists the \"delta_ads\" server feature")
}

// options validates the flags and returns the client options they ask for.
func (f *clientFlags) options(stderr io.Writer) ([]client.Option, error) {
	if f.resourceTimeout < 0 {
		return nil, usageErrorf("--resource-timeout must not be negative, got %v", f.resourceTimeout)
	}
	var opts []client.Option
	if f.resourceTimeout > 0 {
		opts = append(opts, client.WithWatchExpiryTimeout(f.resourceTimeout))
	}
	if f.delta {
		opts = append(opts, client.WithDelta())
	}
	if f.logLevel != "" {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
			return nil, usageErrorf("--log-level: want debug, info, warn or error, got %q", f.logLevel)
		}
		opts = append(opts, client.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))))
	}
	return opts, nil
}

// newClient loads the bootstrap and creates a client with the options of
// f. The caller must close the client.
func (f *clientFlags) newClient(e *env) (*client.Client, error) {
	opts, err := f.options(e.stderr)
	if err != nil {
		return nil, err
	}
	cfg, err := loadBootstrap(f.bootstrap)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the xDS client: %w", err)
	}
	return c, nil
}

// loadBootstrap parses the bootstrap file at path, or, when path is empty,
// the bootstrap named by the environment.
func loadBootstrap(path string) (*bootstrap.Config, error) {
	if path == "" {
		cfg, err := bootstrap.FromEnv()
		if err != nil {
			return nil, fmt.Errorf("no --bootstrap given, and the environment has none: %w", err)
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
