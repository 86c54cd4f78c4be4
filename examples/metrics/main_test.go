// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/internal/demotest"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startedLine matches the attempt counter of a method in the Prometheus
// text format.
var startedLine = regexp.MustCompile(`(?m)^grpc_client_attempt_started_total\{[^}]*grpc_method="([^"]+)"[^}]*\} (\d+)`)

// TestMetrics_TwoTerminals runs the two-terminal flow: the xdsctl demo,
// then run with its bootstrap making 400 RPCs (200 SayHello, split 90/10
// between two clusters, so that the canary misses them all with
// probability 0.9^200 < 1e-9, and 200 UnaryCall); /metrics serves, in the
// Prometheus text format, the attempts of each method (200 each), the attempt durations with the
// xDS labels grpc_lb_locality and grpc_lb_backend_service, and the xDS
// client's connected gauge.
func TestMetrics_TwoTerminals(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	xdsctl := demotest.Build(ctx, t)
	demo := demotest.Start(ctx, t, xdsctl, "--interval", "1h")
	defer demo.Stop(ctx, t)
	t.Setenv("GRPC_XDS_BOOTSTRAP", demo.BootstrapFile)

	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var out syncBuffer
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(rctx, &out, io.Discard, []string{"--metrics", "127.0.0.1:0", "--rpcs", "400", "--interval", "0"}, func(a string) { addrCh <- a })
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for !strings.Contains(out.String(), "400 RPCs made") {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("the RPCs were not made:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if strings.Contains(out.String(), "RPC ") {
		t.Errorf("some RPCs failed:\n%s", out.String())
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	started := map[string]int{}
	for _, m := range startedLine.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[2])
		started[m[1]] += n
	}
	if started["helloworld.Greeter/SayHello"] != 200 || started["grpc.testing.TestService/UnaryCall"] != 200 {
		t.Errorf("attempts by method %v, want 200 SayHello and 200 UnaryCall", started)
	}
	for _, want := range []string{
		`grpc_client_attempt_duration_seconds_count{`,
		`grpc_lb_backend_service="cluster-svc",grpc_lb_locality="{region=\"us-east1\", zone=\"us-east1-b\", sub_zone=\"\"}",grpc_method="helloworld.Greeter/SayHello"`,
		`grpc_lb_backend_service="cluster-svc-canary",grpc_lb_locality="{region=\"us-east1\", zone=\"us-east1-b\", sub_zone=\"\"}",grpc_method="helloworld.Greeter/SayHello"`,
		`grpc_xds_client_connected{`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "grpc_client_attempt_duration_seconds_count") {
			t.Log(l)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestMetrics_Mesh runs --mesh: with no demo, the example's own mesh
// answers 100 RPCs and /metrics has both ends: the client's attempts with
// the xDS labels of both clusters and localities, and the backends' server
// metrics (grpc.server.call.duration) for the method.
func TestMetrics_Mesh(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	addrc := make(chan string, 1)
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(rctx, &out, io.Discard, []string{"--mesh", "--metrics", "127.0.0.1:0", "--rpcs", "100", "--interval", "0"}, func(a string) { addrc <- a })
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, out.String())
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("run ended: %v\n%s", err, out.String())
	}
	for !strings.Contains(out.String(), "100 RPCs made") {
		select {
		case <-ctx.Done():
			t.Fatalf("the RPCs were not made:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(body)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`grpc_client_attempt_duration_seconds_count\{[^}]*grpc_lb_backend_service="cluster-east",grpc_lb_locality="\{region=\\"us-east1\\", zone=\\"us-east1-b\\", sub_zone=\\"\\"\}"[^}]*\} \d+`),
		regexp.MustCompile(`grpc_client_attempt_duration_seconds_count\{[^}]*grpc_lb_backend_service="cluster-west",grpc_lb_locality="\{region=\\"us-west1\\", zone=\\"us-west1-a\\", sub_zone=\\"\\"\}"[^}]*\} \d+`),
		regexp.MustCompile(`grpc_server_call_duration_seconds_count\{[^}]*grpc_method="grpc.testing.TestService/UnaryCall"[^}]*\} \d+`),
	} {
		if !want.MatchString(metrics) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", metrics)
	}
}
