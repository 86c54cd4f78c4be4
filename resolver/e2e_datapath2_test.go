// SPDX-License-Identifier: Apache-2.0

package resolver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resolver"
	"github.com/proxyless/xds/testutil"
)

// TestResolver_E2E_DisableServiceConfig checks that a channel made with
// grpc.WithDisableServiceConfig fails its RPCs with an error that says
// the resolver needs service configs, rather than an opaque one.
//
//  1. Serve the chain with backend A.
//  2. Dial with grpc.WithDisableServiceConfig.
//  3. An RPC fails, its message naming ErrServiceConfigDisabled's text.
func TestResolver_E2E_DisableServiceConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	cc, err := grpc.NewClient("xds:///svc",
		grpc.WithResolvers(resolver.NewBuilder(e.client, resolver.WithLogger(testLogger(t)))),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableServiceConfig())
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	defer cc.Close()
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err == nil || !strings.Contains(err.Error(), resolver.ErrServiceConfigDisabled.Error()) {
		t.Fatalf("RPC error = %v; want one containing %q", err, resolver.ErrServiceConfigDisabled)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RPC waited for its deadline: %v", err)
	}
}

// countingProxy is a TCP proxy to target that counts the connections it
// accepts; it is closed when the test ends.
type countingProxy struct {
	addr     string
	accepted atomic.Int64
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	p := &countingProxy{addr: lis.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := lis.Accept()
			if err != nil {
				return // closed at the end of the test
			}
			p.accepted.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// TestResolver_E2E_LoadReportOnADSConnection checks that, by default,
// load is reported on the client's ADS connection: the
// management server also serves LRS, behind a proxy that counts
// connections; after the LRS server got reports for cluster-a, the
// proxy has accepted one connection only.
//
//  1. Serve testutil.Canary with LRSOnA from a management server that also serves LRS, through a counting proxy.
//  2. Dial with no load report option; make RPCs until A answers.
//  3. The LRS server receives a report for cluster-a.
//  4. The proxy accepted exactly one connection (ADS and LRS share it).
func TestResolver_E2E_LoadReportOnADSConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	ls := testutil.NewLRSServer(t, testutil.LRSServerOptions{Clusters: []string{"cluster-a"}})
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{LoadReporting: ls})
	proxy := startCountingProxy(t, ms.Address())
	raw := editJSON(t, ms.Bootstrap(testutil.BootstrapOptions{}), func(m map[string]any) {
		for _, s := range m["xds_servers"].([]any) {
			s.(map[string]any)["server_uri"] = proxy.addr
		}
	})
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		t.Fatalf("bootstrap.Parse: %v", err)
	}
	xc, err := client.New(cfg, client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(xc.Close)
	e := &env{ms: ms, client: xc}
	ms.Update("", testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port, LRSOnA: true}))
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		reqs, err := ls.WaitForRequests(ctx, n)
		if err != nil {
			t.Fatalf("no LRS report for cluster-a: %v", err)
		}
		if sumLRS(reqs, "cluster-a").reports > 0 {
			break
		}
	}
	if got := proxy.accepted.Load(); got != 1 {
		t.Errorf("the management server accepted %d connections; want 1 (LRS on the ADS connection, R-22.1)", got)
	}
}
