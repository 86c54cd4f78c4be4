// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// countingHandler is a slog.Handler that counts the records whose message
// contains each of its keys.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int
	keys   []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.keys {
		if strings.Contains(r.Message, k) {
			h.counts[k]++
		}
	}
	return nil
}

func (h *countingHandler) count(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[key]
}

// TestResolver_E2E_WarnsOnceOnRetryConflicts checks that retry policies
// the service config cannot tell apart (routes by header with different
// policies, without DialOptions) are logged once per channel at Warn, not
// on every update, and that the RPCs still succeed.
//
//  1. Serve a route by header retrying twice, then a route retrying once; RPCs reach A.
//  2. Serve two more versions (the endpoint moves to B and back to A).
//  3. Three configurations were applied, one warning was logged.
func TestResolver_E2E_WarnsOnceOnRetryConflicts(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serve := func(be *backend) {
		r := chain(be)
		byHeader := testutil.ClusterRoute("", "cluster-svc")
		byHeader.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "unavailable", NumRetries: wrapperspb.UInt32(2)}
		byHeader.Match.Headers = []*v3routepb.HeaderMatcher{{Name: "x-h", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}}
		rt := testutil.ClusterRoute("", "cluster-svc")
		rt.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "unavailable"}
		r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, byHeader, rt))}
		e.ms.Update("", r)
	}
	const warning, update = "different retry policies", "updating the channel"
	h := &countingHandler{counts: map[string]int{}, keys: []string{warning, update}}
	serve(a)
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithLogger(slog.New(h)))
	for _, be := range []*backend{a, b, a} {
		if be != a || h.count(update) > 0 {
			serve(be)
		}
		if err := waitForServer(ctx, tc, be.id); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.count(update); n < 3 {
		t.Fatalf("%d configurations applied; want 3", n)
	}
	if n := h.count(warning); n != 1 {
		t.Errorf("the retry warning was logged %d times; want once per channel", n)
	}
}
