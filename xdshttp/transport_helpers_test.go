// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdshttp"
)

// cliEnv is a management server, an xDS client of it and a Transport of
// the client, closed when the test ends.
type cliEnv struct {
	ms *testutil.ManagementServer
	c  *client.Client
	tr *xdshttp.Transport
	hc *http.Client
}

func newCliEnv(t testing.TB, opts ...xdshttp.Option) *cliEnv {
	t.Helper()
	return newCliEnvWith(t, nil, opts...)
}

// newCliEnvWith is newCliEnv with options for the client.
func newCliEnvWith(t testing.TB, copts []client.Option, opts ...xdshttp.Option) *cliEnv {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, append([]client.Option{client.WithLogger(tbLogger(t))}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tr := xdshttp.NewTransport(c, opts...)
	t.Cleanup(func() { tr.Close() })
	return &cliEnv{ms: ms, c: c, tr: tr, hc: &http.Client{Transport: tr}}
}

func (e *cliEnv) update(t testing.TB, r testutil.Resources) {
	t.Helper()
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
}

// backend is an HTTP server that answers every request with its name,
// and records the requests it got.
type backend struct {
	name string
	srv  *httptest.Server
	port uint32
	reqs chan *http.Request
}

func startBackend(t testing.TB, name string, h http.HandlerFunc) *backend {
	t.Helper()
	return startBackendWith(t, name, h, nil)
}

// startBackendWith is startBackend with configure called on the
// backend's http.Server before it starts.
func startBackendWith(t testing.TB, name string, h http.HandlerFunc, configure func(*http.Server)) *backend {
	t.Helper()
	b := &backend{name: name, reqs: make(chan *http.Request, 1000)}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case b.reqs <- r:
		default:
		}
		w.Header().Set("X-Backend", name)
		if h != nil {
			h(w, r)
			return
		}
		fmt.Fprint(w, name)
	}))
	if configure != nil {
		configure(b.srv.Config)
	}
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	_, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	b.port = uint32(p)
	return b
}

// clientResources returns a Listener named listener with RDS route
// configuration "rc-"+listener whose one virtual host (domains "*")
// routes "/" to cluster "c", an EDS cluster whose endpoints are the
// backends.
func clientResources(listener string, backends ...*backend) testutil.Resources {
	return testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener(listener, "rc-"+listener)},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("rc-"+listener, "*", "c")},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("c", "")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{backendEndpoints("c", backends...)},
	}
}

func backendEndpoints(cluster string, backends ...*backend) *v3endpointpb.ClusterLoadAssignment {
	ports := make([]uint32, len(backends))
	for i, b := range backends {
		ports[i] = b.port
	}
	return testutil.Endpoints(cluster, "127.0.0.1", ports...)
}

// get sends GET url through e's Transport and returns the status and body.
func (e *cliEnv) get(t *testing.T, url string) (int, string, error) {
	t.Helper()
	resp, err := e.hc.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func prefix(p string) *v3routepb.RouteMatch {
	return &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: p}}
}

func clusterAction(c string) *v3routepb.Route_Route {
	return &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: c}}}
}

func portOf(t *testing.T, addr string) uint32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return uint32(p)
}

// newTLSEnv returns an environment whose bootstrap has a file_watcher
// certificate provider instance "client" with the mesh's client
// certificate and CA.
func newTLSEnv(t *testing.T, opts ...xdshttp.Option) (*cliEnv, *certs.Mesh) {
	t.Helper()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	raw, err := testutil.WithCertificateProviders(ms.Bootstrap(testutil.BootstrapOptions{}), map[string]testutil.FileWatcher{
		"client": {CertificateFile: mesh.ClientCertFile, PrivateKeyFile: mesh.ClientKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tr := xdshttp.NewTransport(c, opts...)
	t.Cleanup(func() { tr.Close() })
	return &cliEnv{ms: ms, c: c, tr: tr, hc: &http.Client{Transport: tr}}, mesh
}

// tbLogger logs to t's log when t is a test's, and discards otherwise
// (benchmarks).
func tbLogger(tb testing.TB) *slog.Logger {
	if t, ok := tb.(*testing.T); ok {
		return testLogger(t)
	}
	return slog.New(slog.DiscardHandler)
}
