// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestWatch_Example_Runs runs the example against a management server
// serving the demo's names, checks that it prints the Listener and the
// endpoints, then an update, and that it returns when interrupted.
func TestWatch_Example_Runs(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	chain := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080}})
	ms.Update("", chain)
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var out testutil.LogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, &out, "svc", "eds-svc") }()

	waitFor := func(want string) {
		t.Helper()
		deadline := time.NewTimer(10 * time.Second)
		defer deadline.Stop()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for !strings.Contains(out.String(), want) {
			select {
			case <-deadline.C:
				cancel()
				t.Fatalf("output lacks %q:\n%s", want, out.String())
			case <-tick.C:
			}
		}
	}
	waitFor(`Listener svc: routes via "route-svc"`)
	waitFor("ClusterLoadAssignment eds-svc: 127.0.0.1:8080 (HEALTHY, priority 0)")

	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{9090}}))
	waitFor("ClusterLoadAssignment eds-svc: 127.0.0.1:9090")

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
