// SPDX-License-Identifier: Apache-2.0

package server_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/xdscreds"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	// defaultTestTimeout bounds waits for what must happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout bounds waits for what must not happen.
	defaultTestShortTimeout = 10 * time.Millisecond
	// template is the server Listener name template of the tests' bootstrap.
	template = "grpc/server?xds.resource.listening_address=%s"
)

// env is a management server, the certificates of a SPIFFE mesh and an
// xDS client whose bootstrap has the server listener template and a
// file_watcher instance "server" with the mesh's server certificate and
// CA.
type env struct {
	ms   *testutil.ManagementServer
	c    *client.Client
	mesh *certs.Mesh
}

func newEnv(t *testing.T, opts ...client.Option) *env {
	return newEnvWith(t, "server", template, opts...)
}

// newEnvWith is newEnv with the certificate provider instance named
// instance and the server listener template tmpl.
func newEnvWith(t *testing.T, instance, tmpl string, opts ...client.Option) *env {
	t.Helper()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	raw, err := testutil.WithCertificateProviders(ms.Bootstrap(testutil.BootstrapOptions{}), map[string]testutil.FileWatcher{
		instance: {CertificateFile: mesh.ServerCertFile, PrivateKeyFile: mesh.ServerKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = testutil.WithServerListenerTemplate(raw, tmpl); err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, append([]client.Option{client.WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &env{ms: ms, c: c, mesh: mesh}
}

// update gives the management server the server Listeners ls and the
// RouteConfigurations rcs, failing the test on error.
func (e *env) update(t *testing.T, r testutil.Resources) {
	t.Helper()
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
}

// modeChange is one call of the serving mode callback.
type modeChange struct {
	mode server.ServingMode
	err  error
}

// testServer is an xDS-enabled server of the test serving testService on
// 127.0.0.1, with server credentials (plaintext fallback).
type testServer struct {
	srv   *server.GRPCServer
	addr  string // "127.0.0.1:PORT"
	svc   *testService
	modes chan modeChange // every mode change, in order
	done  chan error      // Serve's result
}

// serverCreds returns xDS server credentials with a plaintext fallback.
func serverCreds(t *testing.T) grpccreds.TransportCredentials {
	t.Helper()
	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

// startServer starts a testServer with opts, stopped when the test ends.
func (e *env) startServer(t *testing.T, opts ...server.Option) *testServer {
	t.Helper()
	ts := &testServer{svc: &testService{}, modes: make(chan modeChange, 100), done: make(chan error, 1)}
	var err error
	opts = append([]server.Option{
		server.WithServerOptions(grpc.Creds(serverCreds(t))),
		server.WithLogger(testLogger(t)),
		server.WithServingModeCallback(func(_ net.Addr, mode server.ServingMode, err error) {
			ts.modes <- modeChange{mode, err}
		}),
	}, opts...)
	ts.srv, err = server.NewGRPCServer(e.c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	testgrpc.RegisterTestServiceServer(ts.srv, ts.svc)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = lis.Addr().String()
	go func() { ts.done <- ts.srv.Serve(lis) }()
	t.Cleanup(func() {
		ts.srv.Stop()
		if err := <-ts.done; err != nil {
			t.Errorf("Serve() = %v after Stop, want nil", err)
		}
	})
	return ts
}

// name is the server's Listener resource name.
func (ts *testServer) name() string { return bootstrap.ExpandTemplate(template, ts.addr) }

// waitMode waits for the next mode change and checks it is want.
func (ts *testServer) waitMode(t *testing.T, want server.ServingMode) modeChange {
	t.Helper()
	select {
	case mc := <-ts.modes:
		if mc.mode != want {
			t.Fatalf("serving mode %s (%v), want %s", mc.mode, mc.err, want)
		}
		return mc
	case <-time.After(defaultTestTimeout):
		t.Fatalf("no serving mode change to %s", want)
	}
	return modeChange{}
}

// noModeChange checks that the mode does not change for a short while.
func (ts *testServer) noModeChange(t *testing.T) {
	t.Helper()
	select {
	case mc := <-ts.modes:
		t.Fatalf("unexpected serving mode change to %s (%v)", mc.mode, mc.err)
	case <-time.After(defaultTestShortTimeout):
	}
}

// holdSize is the response_size of the UnaryCalls testService holds.
const holdSize = 7

// testService answers UnaryCall with the client's SPIFFE ID (username);
// after hold, each UnaryCall of response_size holdSize signals arrived
// and waits for release.
type testService struct {
	testgrpc.UnimplementedTestServiceServer

	mu      sync.Mutex
	arrived chan struct{} // guarded by mu; nil: no hold
	release chan struct{} // guarded by mu
}

// hold makes the next held UnaryCalls wait for the returned release
// func; the returned channel gets one value per held UnaryCall that
// arrived.
func (s *testService) hold() (arrived <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, r := make(chan struct{}, 10), make(chan struct{})
	s.arrived, s.release = a, r
	return a, sync.OnceFunc(func() { close(r) })
}

func (s *testService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	s.mu.Lock()
	arrived, release := s.arrived, s.release
	s.mu.Unlock()
	if arrived != nil && req.GetResponseSize() == holdSize {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp := &testgrpc.SimpleResponse{}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(grpccreds.TLSInfo); ok && info.SPIFFEID != nil {
			resp.Username = info.SPIFFEID.String()
		}
	}
	return resp, nil
}

// dial returns a TestService client of addr with creds, closed when the
// test ends.
func dial(t *testing.T, addr string, creds grpccreds.TransportCredentials) testgrpc.TestServiceClient {
	t.Helper()
	tc, _ := dialConn(t, addr, creds)
	return tc
}

// dialConn is dial that returns the ClientConn too.
func dialConn(t *testing.T, addr string, creds grpccreds.TransportCredentials) (testgrpc.TestServiceClient, *grpc.ClientConn) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc), cc
}

// clientTLS returns the credentials of a mesh client presenting leaf (nil:
// no certificate) and verifying the server with the mesh's CA.
func (e *env) clientTLS(leaf *certs.Leaf) grpccreds.TransportCredentials {
	cfg := &tls.Config{RootCAs: certs.Pool(e.mesh.CA), ServerName: "localhost"}
	if leaf != nil {
		cfg.Certificates = []tls.Certificate{leaf.TLS}
	}
	return grpccreds.NewTLS(cfg)
}

// issue issues a client certificate of the mesh with the SPIFFE ID id.
func (e *env) issue(t *testing.T, id string) *certs.Leaf {
	t.Helper()
	l, err := e.mesh.CA.Issue(certs.Options{SPIFFEID: id})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// call makes one UnaryCall, failing fast when the server is unreachable.
func call(t *testing.T, tc testgrpc.TestServiceClient) (*testgrpc.SimpleResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	return tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
}

// callReady makes one UnaryCall that waits for the channel to be ready:
// for RPCs that must succeed on a channel whose earlier connections the
// server refused (it is then backing off).
func callReady(t *testing.T, tc testgrpc.TestServiceClient) (*testgrpc.SimpleResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	return tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
}

// waitForCode makes RPCs until one fails with code want (an RPC racing a
// drain may still be served: gRFC A36's two-phase GOAWAY), failing the
// test after defaultTestTimeout.
func waitForCode(t *testing.T, tc testgrpc.TestServiceClient, want codes.Code) error {
	t.Helper()
	_, err := pollRPC(t, tc, false, func(err error) bool { return status.Code(err) == want })
	if status.Code(err) != want {
		t.Fatalf("no RPC failed with %s; the last: %v", want, err)
	}
	return err
}

// waitForSuccess makes RPCs (waiting for the channel to be ready) until
// one succeeds, and returns the last error when defaultTestTimeout passes
// first.
func waitForSuccess(t *testing.T, tc testgrpc.TestServiceClient) (*testgrpc.SimpleResponse, error) {
	t.Helper()
	return pollRPC(t, tc, true, func(err error) bool { return err == nil })
}

// pollRPC makes UnaryCalls until done accepts the result of one, or
// defaultTestTimeout passes, and returns the last result.
func pollRPC(t *testing.T, tc testgrpc.TestServiceClient, waitForReady bool, done func(error) bool) (*testgrpc.SimpleResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	var (
		resp *testgrpc.SimpleResponse
		err  error
	)
	for ctx.Err() == nil {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		resp, err = tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(waitForReady))
		rcancel()
		if done(err) {
			return resp, err
		}
	}
	return resp, err
}

// wantCode checks that err has status code want.
func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("RPC error = %v, want code %s", err, want)
	}
}

// testLogger logs to t at Debug, until the test ends.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}
