// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	// defaultTestTimeout bounds waits for things that must happen.
	defaultTestTimeout = 10 * time.Second
	// pollInterval is how often waitForOutput looks at the output.
	pollInterval = 5 * time.Millisecond
)

// testContext returns a context bounded by defaultTestTimeout.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// runSync runs xdsctl with args until it returns, bounded by ctx.
func runSync(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut testutil.LogBuffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// running is an xdsctl run in progress in its own goroutine.
type running struct {
	stdout, stderr testutil.LogBuffer
	cancel         context.CancelFunc // interrupts the run, as Ctrl-C does
	code           chan int           // receives the exit code
}

// startRun starts xdsctl with args in a goroutine. The test must call
// stop or wait before it ends.
func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{cancel: cancel, code: make(chan int, 1)}
	go func() { r.code <- run(ctx, args, &r.stdout, &r.stderr) }()
	return r
}

// stop interrupts the run and returns its exit code.
func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

// wait returns the exit code of the run once it returned on its own.
func (r *running) wait(t *testing.T) int {
	t.Helper()
	timer := time.NewTimer(defaultTestTimeout)
	defer timer.Stop()
	select {
	case code := <-r.code:
		return code
	case <-timer.C:
		r.cancel()
		t.Fatalf("xdsctl did not return within %v; stdout:\n%s\nstderr:\n%s", defaultTestTimeout, r.stdout.String(), r.stderr.String())
		return -1
	}
}

// waitForOutput polls buf until cond holds for its content, and returns
// that content. It fails the test when ctx is done first.
func waitForOutput(ctx context.Context, t *testing.T, buf *testutil.LogBuffer, what string, cond func(string) bool) string {
	t.Helper()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		s := buf.String()
		if cond(s) {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; output so far:\n%s", what, ctx.Err(), s)
		case <-ticker.C:
		}
	}
}

// containsAll returns a condition that holds when the output contains
// every one of subs.
func containsAll(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

// writeBootstrap writes the bootstrap of ms to a file in a temporary
// directory and returns its path.
func writeBootstrap(t *testing.T, ms *testutil.ManagementServer, opts testutil.BootstrapOptions) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, ms.Bootstrap(opts), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newChainServer starts a management server serving testutil.Chain for
// the listener "svc" (svc → route-svc → cluster-svc → eds-svc, version
// "1") to every node, and returns it with the path of its bootstrap.
func newChainServer(t *testing.T) (*testutil.ManagementServer, string) {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080, 8081}})
	chain.Version = "1"
	ms.Update("", chain)
	return ms, writeBootstrap(t, ms, testutil.BootstrapOptions{NodeID: "xdsctl-test"})
}

// checkOneLineError checks that stderr is one line starting "xdsctl: " and
// containing want.
func checkOneLineError(t *testing.T, stderr, want string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "xdsctl: ") || !strings.HasSuffix(stderr, "\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr = %q, want one line starting with \"xdsctl: \"", stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr, want)
	}
}
