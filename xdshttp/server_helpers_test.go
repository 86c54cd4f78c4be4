// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdshttp"
)

const (
	// defaultTestTimeout bounds waits for what must happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout bounds waits for what must not happen.
	defaultTestShortTimeout = 10 * time.Millisecond
	// template is the server Listener name template of the tests' bootstrap.
	template = "http/server?xds.resource.listening_address=%s"
)

// srvEnv is a management server, the certificates of a SPIFFE mesh and an
// xDS client whose bootstrap has the server listener template and a
// file_watcher instance "server" with the mesh's server certificate and
// CA.
type srvEnv struct {
	ms   *testutil.ManagementServer
	c    *client.Client
	mesh *certs.Mesh
}

// newSrvEnv returns the environment of a test over gRPC and TCP, its
// client made with opts.
func newSrvEnv(t *testing.T, opts ...client.Option) *srvEnv {
	t.Helper()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	raw, err := testutil.WithCertificateProviders(ms.Bootstrap(testutil.BootstrapOptions{}), map[string]testutil.FileWatcher{
		"server": {CertificateFile: mesh.ServerCertFile, PrivateKeyFile: mesh.ServerKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &srvEnv{ms: ms, c: newTemplateClient(t, raw, opts...), mesh: mesh}
}

// newInMemoryEnv returns the environment of a test in a synctest bubble:
// an in-memory management server, without certificates.
func newInMemoryEnv(t *testing.T) *srvEnv {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	return &srvEnv{ms: ms, c: newTemplateClient(t, ms.Bootstrap(testutil.BootstrapOptions{}), client.WithTransportBuilder(ms.TransportBuilder()))}
}

// newTemplateClient returns a client of the bootstrap raw with the
// server listener template, closed when the test ends.
func newTemplateClient(t *testing.T, raw []byte, opts ...client.Option) *client.Client {
	t.Helper()
	raw, err := testutil.WithServerListenerTemplate(raw, template)
	if err != nil {
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
	return c
}

// update gives the management server the resources r.
func (e *srvEnv) update(t *testing.T, r testutil.Resources) {
	t.Helper()
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
}

// modeChange is one call of the serving mode callback.
type modeChange struct {
	mode xdshttp.ServingMode
	err  error
}

// testServer is an xDS-enabled net/http server of a test, serving
// testHandler.
type testServer struct {
	srv   *xdshttp.Server
	addr  string // "IP:PORT"
	h     *testHandler
	modes chan modeChange // every mode change, in order
	done  chan error      // Serve's result
}

// startServer starts a testServer on lis (nil: a TCP listener on
// 127.0.0.1), closed when the test ends.
func (e *srvEnv) startServer(t *testing.T, lis net.Listener, opts ...xdshttp.ServerOption) *testServer {
	t.Helper()
	ts := &testServer{h: &testHandler{}, modes: make(chan modeChange, 100), done: make(chan error, 1)}
	opts = append([]xdshttp.ServerOption{
		xdshttp.WithServerLogger(testLogger(t)),
		xdshttp.WithServingModeCallback(func(_ net.Addr, mode xdshttp.ServingMode, err error) {
			ts.modes <- modeChange{mode, err}
		}),
	}, opts...)
	var err error
	ts.srv, err = xdshttp.NewServer(e.c, ts.h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if lis == nil {
		if lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ts.addr = lis.Addr().String()
	go func() { ts.done <- ts.srv.Serve(lis) }()
	t.Cleanup(func() {
		ts.srv.Close()
		if err := <-ts.done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve() = %v after Close, want http.ErrServerClosed", err)
		}
	})
	return ts
}

// name is the server's Listener resource name.
func (ts *testServer) name() string { return bootstrap.ExpandTemplate(template, ts.addr) }

// listener is the Listener of ts with chains (none: one plaintext chain
// serving every request).
func (ts *testServer) listener(chains ...*v3listenerpb.FilterChain) *v3listenerpb.Listener {
	if len(chains) == 0 {
		chains = []*v3listenerpb.FilterChain{testutil.ServerFilterChain(testutil.FilterChainOptions{})}
	}
	return testutil.ServerListener(ts.name(), ts.addr, chains...)
}

// waitMode waits for the next mode change and checks it is want.
func (ts *testServer) waitMode(t *testing.T, want xdshttp.ServingMode) modeChange {
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

// testHandler answers "ok <path> <client SPIFFE ID>"; requests to /hold
// wait, after signalling arrived, until the test releases them.
type testHandler struct {
	requests atomic.Int64

	mu      sync.Mutex
	arrived chan struct{} // guarded by mu
	release chan struct{} // guarded by mu
}

// hold makes the next requests to /hold wait for the returned release
// func; the returned channel gets one value per held request.
func (h *testHandler) hold() (arrived <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, r := make(chan struct{}, 10), make(chan struct{})
	h.arrived, h.release = a, r
	return a, sync.OnceFunc(func() { close(r) })
}

func (h *testHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if r.URL.Path == "/hold" {
		h.mu.Lock()
		arrived, release := h.arrived, h.release
		h.mu.Unlock()
		if arrived != nil {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
	}
	id := "-"
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && len(r.TLS.PeerCertificates[0].URIs) > 0 {
		id = r.TLS.PeerCertificates[0].URIs[0].String()
	}
	fmt.Fprintf(w, "ok %s %s", r.URL.Path, id)
}

// response is what a test checks of a response.
type response struct {
	code   int
	body   string
	header http.Header
}

// get sends GET url with hc, with the request's Host set to host when
// not "".
func get(t *testing.T, hc *http.Client, url, host string) (response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: string(b), header: resp.Header}, err
}

// mustGet is get that fails the test on error or a status other than
// want.
func mustGet(t *testing.T, hc *http.Client, url string, want int) response {
	t.Helper()
	r, err := get(t, hc, url, "")
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if r.code != want {
		t.Fatalf("GET %s: %d %q, want %d", url, r.code, r.body, want)
	}
	return r
}

// pollGet sends GET url until done accepts the result, or
// defaultTestTimeout passes; it returns the last result.
func pollGet(t *testing.T, hc *http.Client, url string, done func(response, error) bool) (response, error) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		r, err := get(t, hc, url, "")
		if done(r, err) || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(time.Millisecond)
	}
}

// plainClient is an HTTP client that opens a new connection per request.
func plainClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// tlsClient is an HTTP client of the mesh presenting leaf (nil: no
// certificate) and verifying the server with the mesh's CA, a new
// connection per request.
func (e *srvEnv) tlsClient(t *testing.T, leaf *certs.Leaf) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: certs.Pool(e.mesh.CA), ServerName: "localhost"}
	if leaf != nil {
		cfg.Certificates = []tls.Certificate{leaf.TLS}
	}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// issue issues a client certificate of the mesh with the SPIFFE ID id.
func (e *srvEnv) issue(t *testing.T, id string) *certs.Leaf {
	t.Helper()
	l, err := e.mesh.CA.Issue(certs.Options{SPIFFEID: id})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// mtlsChain is a filter chain requiring a client certificate of the
// mesh, with the RBAC filter rules (nil: none).
func mtlsChain(rules *v3rbacconfigpb.RBAC) *v3listenerpb.FilterChain {
	o := testutil.FilterChainOptions{TLS: testutil.DownstreamTLS(testutil.DownstreamTLSOptions{
		IdentityInstance: "server", RootInstance: "server", RequireClientCertificate: true,
	})}
	if rules != nil {
		o.HTTPFilters = append(o.HTTPFilters, testutil.RBACFilter("rbac", rules))
	}
	return testutil.ServerFilterChain(o)
}

// testLogger logs to t at Debug, until the test ends.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// countingClient is an HTTP/1.1 client that keeps its connections alive
// and counts the connections it opens.
func countingClient(t *testing.T) (*http.Client, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, &n
}

func itoa(n int) string { return strconv.Itoa(n) }

// exactHeaderMatcher is a header matcher of name with the exact value v.
func exactHeaderMatcher(name, v string) *v3routepb.HeaderMatcher {
	return &v3routepb.HeaderMatcher{Name: name, HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: v}}}}
}

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
