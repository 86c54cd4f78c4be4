// SPDX-License-Identifier: Apache-2.0

// Package demotest runs "xdsctl demo" as a program, for the tests of the
// examples that are its second terminal (examples/grpc, examples/mtls):
// Build builds cmd/xdsctl, Start runs the demo on free ports with
// --bootstrap-out and waits for its bootstrap, and Stop interrupts it as
// Ctrl-C does and checks that it exits 0. Only tests import it.
package demotest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pollInterval is how often Start reads the demo's output.
const pollInterval = 10 * time.Millisecond

// Build builds cmd/xdsctl of this module into a temporary directory of
// t and returns the binary's path. It builds in this module's root, so
// that the tests of a nested module (examples/metrics) can run the demo. It skips the test with -short or
// without a go command, and fails it when the build fails.
func Build(ctx context.Context, t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/xdsctl")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command: ", err)
	}
	path := filepath.Join(t.TempDir(), "xdsctl")
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", path, "github.com/proxyless/xds/cmd/xdsctl")
	if _, file, _, ok := runtime.Caller(0); ok {
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..") // internal/demotest → the module's root
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/xdsctl: %v\n%s", err, out)
	}
	return path
}

// Demo is an xdsctl demo running as a program.
type Demo struct {
	// BootstrapFile is the bootstrap it wrote (--bootstrap-out).
	BootstrapFile string

	cmd     *exec.Cmd
	logFile string     // its stdout and stderr
	exited  chan error // receives Wait's error once
	waited  bool       // exited was read
}

// Start runs "xdsctl demo --base-port 0 --bootstrap-out FILE" with args
// added (the binary of Build), and returns once it wrote its bootstrap.
// It fails the test if the demo exits first or ctx is done. The demo is
// killed when the test ends unless Stop was called.
func Start(ctx context.Context, t *testing.T, xdsctl string, args ...string) *Demo {
	t.Helper()
	dir := t.TempDir()
	d := &Demo{BootstrapFile: filepath.Join(dir, "b.json"), logFile: filepath.Join(dir, "demo.log"), exited: make(chan error, 1)}
	log, err := os.Create(d.logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the child has its own descriptor
	d.cmd = exec.Command(xdsctl, append([]string{"demo", "--base-port", "0", "--bootstrap-out", d.BootstrapFile}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if !d.waited {
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	})
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for !strings.Contains(d.Output(), "Bootstrap written to") {
		select {
		case <-ctx.Done():
			t.Fatalf("the demo wrote no bootstrap in time; its output:\n%s", d.Output())
		case err := <-d.exited:
			d.waited = true
			t.Fatalf("the demo exited: %v; its output:\n%s", err, d.Output())
		case <-tick.C:
		}
	}
	return d
}

// Output returns what the demo printed so far, stdout and stderr.
func (d *Demo) Output() string {
	b, _ := os.ReadFile(d.logFile) // what was written so far
	return string(b)
}

// Stop interrupts the demo, as Ctrl-C does, and fails the test unless it
// exits 0 before ctx is done.
func (d *Demo) Stop(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		d.waited = true
		if err != nil {
			t.Errorf("the demo exited with %v after an interrupt, want 0; its output:\n%s", err, d.Output())
		}
	case <-ctx.Done():
		t.Fatal("the demo did not exit after an interrupt")
	}
}
