// SPDX-License-Identifier: Apache-2.0

// Command http sends HTTP requests through xDS with net/http: an
// http.Client whose Transport is an xdshttp.Transport routes, balances,
// retries and secures each request as the management server's
// configuration of its URL host says, as a sidecar would, without one. In
// two terminals:
//
//	go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json   # terminal 1
//	GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/http  # terminal 2
//
// It reads the bootstrap from the environment (GRPC_XDS_BOOTSTRAP, or
// GRPC_XDS_BOOTSTRAP_CONFIG), makes an xDS client and
//
//	hc := &http.Client{Transport: xdshttp.NewTransport(c)}
//
// and sends --requests GET requests (default 20) to --url (default
// http://web/hello, the demo's HTTP service: Listener "web"), one every
// --interval (default 250ms); every fourth request carries
// "x-canary: always", which the demo's route sends to its canary. For
// each it prints the backend that answered (the X-Backend header) and
// its answer; at the end, how many requests each backend answered.
// Against "xdsctl demo --mtls" it works unchanged: the Transport does the
// mutual TLS each Cluster asks for.
//
// A request that fails is printed with what the error is (errors.Is
// against xdshttp's errors: no route, cluster unavailable, no healthy
// endpoint, timeout, …). It exits 0 when every request got a response; 1
// when the bootstrap is missing or unusable or a request failed; 2 on a
// bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/xdshttp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line.
type usageError struct{ error }

// run parses args, sends the requests and prints each to out; it prints
// the usage to errOut when args are bad.
func run(ctx context.Context, out, errOut io.Writer, args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	fs.SetOutput(errOut)
	url := fs.String("url", "http://web/hello", "the URL to GET; its host names the Listener")
	requests := fs.Int("requests", 20, "how many requests to send")
	interval := fs.Duration("interval", 250*time.Millisecond, "the pause between requests")
	timeout := fs.Duration("timeout", 10*time.Second, "the deadline of each request")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	bad := func(format string, args ...any) error {
		err := fmt.Errorf(format, args...)
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case *requests < 1:
		return bad("--requests must be at least 1, got %d", *requests)
	case *interval < 0:
		return bad("--interval must not be negative, got %v", *interval)
	case *timeout <= 0:
		return bad("--timeout must be positive, got %v", *timeout)
	}

	cfg, err := bootstrap.FromEnv()
	if errors.Is(err, bootstrap.ErrNoBootstrap) {
		return fmt.Errorf("%w: start the demo with \"go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json\", then set GRPC_XDS_BOOTSTRAP=/tmp/b.json", err)
	}
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close() // after the Transport

	// The one line: an http.RoundTripper that does what xDS says.
	tr := xdshttp.NewTransport(c)
	defer tr.Close()
	hc := &http.Client{Transport: tr, Timeout: *timeout}
	fmt.Fprintf(out, "%s, through the management server %s as node %q:\n", *url, cfg.Servers[0].ServerURI, cfg.Node.ID)

	answered := map[string]int{}
	var tick *time.Ticker
	if *interval > 0 {
		tick = time.NewTicker(*interval)
		defer tick.Stop()
	}
	for i := range *requests {
		if i > 0 && tick != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
		req, err := http.NewRequestWithContext(ctx, "GET", *url, nil)
		if err != nil {
			return bad("--url: %v", err)
		}
		canary := i%4 == 3
		if canary {
			req.Header.Set("x-canary", "always")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("request %d: %s: %w", i+1, classify(err), err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("request %d: reading the response: %w", i+1, err)
		}
		backend := resp.Header.Get("X-Backend")
		answered[backend]++
		header := ""
		if canary {
			header = " (x-canary: always)"
		}
		fmt.Fprintf(out, "GET %2d%s -> %d from %s: %s\n", i+1, header, resp.StatusCode, backend, strings.TrimSpace(string(body)))
	}
	var parts []string
	for _, b := range slices.Sorted(maps.Keys(answered)) {
		parts = append(parts, fmt.Sprintf("%s %d", b, answered[b]))
	}
	fmt.Fprintf(out, "answered by: %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(out, "OK: every request got a response (%d)\n", *requests)
	return nil
}

// classify names what a request's error is, as errors.Is tells.
func classify(err error) string {
	for _, c := range []struct {
		target error
		what   string
	}{
		{client.ErrResourceNotFound, "the Listener or its RouteConfiguration does not exist"},
		{client.ErrConnection, "no connection to the management server"},
		{depmgr.ErrNoVirtualHost, "no virtual host for the request's Host"},
		{xdshttp.ErrNoRoute, "no route matches"},
		{xdshttp.ErrRouteAction, "the route does not forward"},
		{xdshttp.ErrClusterUnavailable, "the cluster is unavailable"},
		{xdshttp.ErrNoHealthyEndpoint, "no healthy endpoint"},
		{xdshttp.ErrCircuitBreakerOpen, "circuit breaker open"},
		{xdshttp.ErrFaultAbort, "aborted by fault injection"},
		{xdshttp.ErrTimeout, "route timeout"},
		{context.DeadlineExceeded, "deadline exceeded; is the demo of the bootstrap running?"},
	} {
		if errors.Is(err, c.target) {
			return c.what
		}
	}
	return "failed"
}
