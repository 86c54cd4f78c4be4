// SPDX-License-Identifier: Apache-2.0

package conformance_test

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/conformance"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
)

// TestTestutilServer_PassesEveryCheck runs every check on every variant
// against testutil's management server (in memory, REST in process):
// all pass.
func TestTestutilServer_PassesEveryCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, _ := inMemoryConfig(t, nil)
		rep, err := conformance.Check(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			if r.Status != conformance.Pass {
				t.Errorf("%s/%s: %s: %s", r.Check, r.Variant, r.Status, r.Detail)
			}
		}
		t.Logf("notes: %v; resources: %v; took %v (fake time)\n%s", rep.Notes, rep.Resources, rep.Duration, rep)
	})
}

// TestTestutilServer_OverTheNetwork runs the kit through Run against
// testutil's management server over gRPC on loopback (Config.Server) and
// its REST-JSON handler over HTTP, in real time: every check passes.
func TestTestutilServer_OverTheNetwork(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	w := newWorld(func(r testutil.Resources) error { return ms.Update("", r) })
	if err := ms.Update("", w.resources()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(ms.RESTHandler())
	t.Cleanup(web.Close)
	conformance.Run(t, conformance.Config{
		Server:   ms.Address(),
		REST:     web.URL,
		Variants: conformance.Variants(),
		Change:   w.change,
		Quiet:    300 * time.Millisecond,
	})
}

// unimplementedDelta is a transport that serves SotW only: its delta
// streams fail with UNIMPLEMENTED, as those of a server without
// incremental xDS do.
type unimplementedDelta struct{ transport.Transport }

func (u unimplementedDelta) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	if strings.Contains(method, "/Delta") {
		return failedStream{status.Error(codes.Unimplemented, "unknown method "+method)}, nil
	}
	return u.Transport.NewStream(ctx, method)
}

type failedStream struct{ err error }

func (f failedStream) Send([]byte) error     { return nil }
func (f failedStream) Recv() ([]byte, error) { return nil, f.err }

// TestUnservedVariant_Skipped checks that the checks of a variant whose
// service the server does not implement are skipped, saying so.
func TestUnservedVariant_Skipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, _ := inMemoryConfig(t, nil)
		cfg.Transport = unimplementedDelta{cfg.Transport}
		cfg.Variants = []conformance.Variant{conformance.SotW, conformance.Delta, conformance.DeltaPerType}
		rep, err := conformance.Check(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			switch {
			case r.Variant != conformance.SotW && (r.Status != conformance.Skip || !strings.Contains(r.Detail, "does not implement")):
				t.Errorf("%s/%s: %s (%s), want skip: not implemented", r.Check, r.Variant, r.Status, r.Detail)
			case r.Variant == conformance.SotW && r.Status != conformance.Pass:
				t.Errorf("%s/%s: %s (%s), want pass", r.Check, r.Variant, r.Status, r.Detail)
			}
		}
	})
}

// TestCheck_Unreachable checks that a server that cannot be reached is an
// error of Check, not a report.
func TestCheck_Unreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	rep, err := conformance.Check(t.Context(), conformance.Config{Server: addr, Timeout: time.Second})
	if err == nil || rep != nil {
		t.Fatalf("Check of a closed port = %v, %v; want an error", rep, err)
	}
	t.Log(err)
}
