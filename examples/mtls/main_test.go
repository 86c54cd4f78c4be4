// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/internal/demotest"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestMTLS_TwoCommands runs the README's two commands: the xdsctl demo
// with --mtls, built and run as a program, writes its bootstrap; this
// example, with GRPC_XDS_BOOTSTRAP naming it, makes its RPCs over mutual
// TLS and succeeds. The demo then stops on an interrupt.
func TestMTLS_TwoCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	demo := demotest.Start(ctx, t, demotest.Build(ctx, t), "--mtls", "--interval", "1h")

	t.Setenv("GRPC_XDS_BOOTSTRAP", demo.BootstrapFile)
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
	demo.Stop(ctx, t)
}
