// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/proxyless/xds/internal/demotest"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// requestLine matches a line of run's output for one request.
var requestLine = regexp.MustCompile(`(?m)^GET +\d+( \(x-canary: always\))? -> 200 from (web-1|web-2|web-canary): (web-1|web-2|web-canary): GET /hello \(HTTP/1\.1, Host web(, client (\S+))?\)$`)

// TestHTTP_TwoTerminals runs the README's two-terminal flow for net/http,
// with and without --mtls:
//
//  1. The xdsctl demo, built and run as a program, writes its bootstrap.
//  2. run, with GRPC_XDS_BOOTSTRAP naming it, sends 200 GET requests to
//     http://web/hello through an xdshttp.Transport.
//  3. Every request is answered by an HTTP backend of the demo, with the
//     request's Host, over TLS with the client's SPIFFE ID under --mtls.
//  4. The routes hold: requests with x-canary go to web-canary; the others
//     are split 90/10, so web-1 or web-2 answers some.
func TestHTTP_TwoTerminals(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	xdsctl := demotest.Build(ctx, t)
	for _, tc := range []struct {
		name, client string
		args         []string
	}{
		{name: "plaintext"},
		{name: "mtls", args: []string{"--mtls"}, client: "spiffe://demo.example/client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			demo := demotest.Start(ctx, t, xdsctl, append(tc.args, "--interval", "1h")...)
			t.Setenv("GRPC_XDS_BOOTSTRAP", demo.BootstrapFile)
			var out bytes.Buffer
			if err := run(ctx, &out, io.Discard, []string{"--requests", "200", "--interval", "0", "--timeout", "1m"}); err != nil {
				t.Fatalf("run: %v\noutput:\n%s", err, out.String())
			}
			lines := requestLine.FindAllStringSubmatch(out.String(), -1)
			if len(lines) != 200 {
				t.Fatalf("%d answered requests in the output, want 200:\n%s", len(lines), out.String())
			}
			stable := 0
			for _, m := range lines {
				canary, backend, client := m[1] != "", m[2], m[5]
				if client != tc.client {
					t.Fatalf("%s: the backend saw client %q, want %q", m[0], client, tc.client)
				}
				if canary && backend != "web-canary" {
					t.Fatalf("%s: a request with x-canary answered by %s, want web-canary", m[0], backend)
				}
				if backend != "web-canary" {
					stable++
				}
			}
			if stable == 0 {
				t.Errorf("no request answered by cluster-web (web-1, web-2); the 90/10 split does not hold:\n%s", out.String())
			}
		})
	}
}
