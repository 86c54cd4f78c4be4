// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/demotest"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// rpcLine matches a line of run's output for one RPC: the method, the
// backend and cluster that answered, its port, and its security.
var rpcLine = regexp.MustCompile(`(?m)^RPC +\d+  (\w+) +route .* -> (\S+) of (\S+) at 127\.0\.0\.1:(\d+), (plaintext|TLS as \S+?)(?:: "|$)`)

// demoPorts matches the demo's line that lists its backends' ports.
var demoPorts = regexp.MustCompile(`on 127\.0\.0\.1 ports (\d+), (\d+), (\d+), (\d+) and (\d+)[.:]`)

// TestGRPC_TwoTerminals runs the README's two-terminal flow, with and
// without --mtls:
//
//  1. The xdsctl demo, built and run as a program, writes its bootstrap.
//  2. run, with GRPC_XDS_BOOTSTRAP naming it, makes 400 RPCs: 200
//     SayHello, 200 UnaryCall.
//  3. Every RPC is answered by a backend of the demo (its name, and a port
//     the demo lists) over the transport the mesh asks for (plaintext, or
//     TLS with the backends' SPIFFE ID).
//  4. The split follows the demo's routes: both cluster-svc and
//     cluster-svc-canary answer SayHello (/helloworld.Greeter/, 90/10;
//     the canary misses 200 RPCs with probability 0.9^200 < 1e-9), only
//     cluster-svc answers UnaryCall.
//  5. The demo exits 0 on an interrupt.
func TestGRPC_TwoTerminals(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	xdsctl := demotest.Build(ctx, t)
	for _, tc := range []struct {
		name     string
		args     []string
		security string
	}{
		{name: "plaintext", security: "plaintext"},
		{name: "mtls", args: []string{"--mtls"}, security: "TLS as spiffe://demo.example/backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			demo := demotest.Start(ctx, t, xdsctl, append(tc.args, "--interval", "1h")...)
			ports := demoPorts.FindStringSubmatch(demo.Output())
			if ports == nil {
				t.Fatalf("the demo does not list its ports:\n%s", demo.Output())
			}
			backendPorts := ports[1:]

			t.Setenv("GRPC_XDS_BOOTSTRAP", demo.BootstrapFile)
			var out bytes.Buffer
			if err := run(ctx, &out, io.Discard, []string{"--rpcs", "400", "--interval", "0", "--timeout", "1m"}); err != nil {
				t.Fatalf("run: %v\noutput:\n%s", err, out.String())
			}
			clusters := map[string]map[string]bool{} // method → clusters that answered it
			rpcs := 0
			for _, m := range rpcLine.FindAllStringSubmatch(out.String(), -1) {
				rpcs++
				method, backend, cluster, port, security := m[1], m[2], m[3], m[4], m[5]
				if !slices.Contains([]string{"backend-1", "backend-2", "backend-3", "backend-4", "canary"}, backend) || !slices.Contains(backendPorts, port) {
					t.Fatalf("%s: answered by %q on port %s, not a backend of the demo (ports %q)", m[0], backend, port, backendPorts)
				}
				if security != tc.security {
					t.Fatalf("%s: the connection is %q, want %q", m[0], security, tc.security)
				}
				if clusters[method] == nil {
					clusters[method] = map[string]bool{}
				}
				clusters[method][cluster] = true
			}
			if rpcs != 400 || !strings.Contains(out.String(), "\nOK: every RPC was answered (400)\n") {
				t.Fatalf("the output has %d RPC lines, want 400, and OK:\n%s", rpcs, out.String())
			}
			if got := clusters["SayHello"]; !got["cluster-svc"] || !got["cluster-svc-canary"] || len(got) != 2 {
				t.Errorf("SayHello was answered by the clusters %v, want both cluster-svc and cluster-svc-canary (the 90/10 split)", got)
			}
			if got := clusters["UnaryCall"]; !got["cluster-svc"] || len(got) != 1 {
				t.Errorf("UnaryCall was answered by the clusters %v, want cluster-svc alone (route /)", got)
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
			demo.Stop(ctx, t)
		})
	}
}

// TestGRPC_Errors checks that run fails with a clear error, before any
// RPC, when no bootstrap is set (telling how to start the demo) and on a
// bad command line.
func TestGRPC_Errors(t *testing.T) {
	t.Setenv(bootstrap.EnvBootstrapFile, "")
	t.Setenv(bootstrap.EnvBootstrapConfig, "")
	var out bytes.Buffer
	var errOut bytes.Buffer
	err := run(t.Context(), &out, &errOut, nil)
	if !errors.Is(err, bootstrap.ErrNoBootstrap) || !strings.Contains(err.Error(), "GRPC_XDS_BOOTSTRAP=/tmp/b.json") {
		t.Errorf("run without a bootstrap = %v, want ErrNoBootstrap and how to get one", err)
	}
	for _, args := range [][]string{{"--rpcs", "0"}, {"--interval", "-1s"}, {"--timeout", "0s"}, {"extra"}, {"--nope"}} {
		errOut.Reset()
		if err := run(t.Context(), &out, &errOut, args); !errors.As(err, new(usageError)) || !strings.Contains(errOut.String(), "Usage of grpc:") {
			t.Errorf("run(%q) = %v, printed %q; want a usage error and the usage", args, err, errOut.String())
		}
	}
	if out.Len() != 0 {
		t.Errorf("run printed %q to its output, want nothing", out.String())
	}
}
