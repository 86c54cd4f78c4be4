// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestMTLS_TwoCommands runs the README's two commands: the xdsctl demo
// with --mtls, built and run as a program, writes its bootstrap; this
// example, with GRPC_XDS_BOOTSTRAP naming it, makes its RPCs over mutual
// TLS and succeeds. The demo then stops on an interrupt.
func TestMTLS_TwoCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/xdsctl")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command: ", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	xdsctl := filepath.Join(dir, "xdsctl")
	build := exec.CommandContext(ctx, goTool, "build", "-o", xdsctl, "./cmd/xdsctl")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/xdsctl: %v\n%s", err, out)
	}

	// Command 1, its output in a file that the test reads while it runs.
	bootstrapFile := filepath.Join(dir, "b.json")
	demoLog, err := os.Create(filepath.Join(dir, "demo.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer demoLog.Close()
	demoOut := func() string {
		b, _ := os.ReadFile(demoLog.Name()) // what was written so far
		return string(b)
	}
	demo := exec.Command(xdsctl, "demo", "--mtls", "--base-port", "0", "--bootstrap-out", bootstrapFile, "--interval", "1h")
	demo.Stdout, demo.Stderr = demoLog, demoLog
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- demo.Wait() }()
	waited := false // exited was read
	defer func() {
		if !waited {
			_ = demo.Process.Kill()
			<-exited
		}
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(demoOut(), "Bootstrap written to") {
		select {
		case <-ctx.Done():
			t.Fatalf("the demo wrote no bootstrap in time; its output:\n%s", demoOut())
		case err := <-exited:
			waited = true
			t.Fatalf("the demo exited: %v; its output:\n%s", err, demoOut())
		case <-tick.C:
		}
	}

	// Command 2.
	t.Setenv("GRPC_XDS_BOOTSTRAP", bootstrapFile)
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		"RPC 1: answered by backend-",
		"which proved it is spiffe://demo.example/backend and saw client spiffe://demo.example/client",
		"OK: mutual TLS from xDS",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the example's output lacks %q:\n%s", want, out.String())
		}
	}

	if err := demo.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Errorf("the demo exited with %v after an interrupt, want 0; its output:\n%s", err, demoOut())
		}
	case <-ctx.Done():
		t.Fatal("the demo did not exit after an interrupt")
	}
}
