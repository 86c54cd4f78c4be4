// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httpupstreampb "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"
)

// TestTransport_RoundRobin: requests to http://svc:8080 go to the
// endpoints of the Listener "svc:8080"'s cluster, each in turn, with the
// request's Host and path.
func TestTransport_RoundRobin(t *testing.T) {
	e := newCliEnv(t)
	b1, b2 := startBackend(t, "b1", nil), startBackend(t, "b2", nil)
	e.update(t, clientResources("svc:8080", b1, b2))
	got := map[string]int{}
	for range 10 {
		status, body, err := e.get(t, "http://svc:8080/hello?x=1")
		if err != nil {
			t.Fatal(err)
		}
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		got[body]++
	}
	if got["b1"] != 5 || got["b2"] != 5 {
		t.Errorf("requests per backend = %v, want 5 each", got)
	}
	r := <-b1.reqs
	if r.Host != "svc:8080" || r.URL.Path != "/hello" || r.URL.RawQuery != "x=1" {
		t.Errorf("backend got Host %q path %q query %q, want svc:8080 /hello x=1", r.Host, r.URL.Path, r.URL.RawQuery)
	}
}

// TestTransport_Errors: each failure is an *xdshttp.Error naming where it
// happened and wrapping the sentinel a caller tests.
func TestTransport_Errors(t *testing.T) {
	e := newCliEnvWith(t, []client.Option{client.WithWatchExpiryTimeout(100 * time.Millisecond)})
	b := startBackend(t, "b", nil)
	r := clientResources("svc", b)
	vh := r.Routes[0].VirtualHosts[0]
	vh.Routes = []*v3routepb.Route{
		{Match: prefix("/ok"), Action: clusterAction("c")},
		{Match: prefix("/missing"), Action: clusterAction("nope")},
		{Match: prefix("/nonfwd"), Action: &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}}},
	}
	e.update(t, r)
	for _, tc := range []struct {
		url  string
		want error
		text string
	}{
		{"http://svc/none", xdshttp.ErrNoRoute, `host "svc"`},
		{"http://svc/nonfwd", xdshttp.ErrRouteAction, "route 2"},
		{"http://svc/missing", xdshttp.ErrClusterUnavailable, `cluster "nope"`},
		{"ftp://svc/ok", xdshttp.ErrUnsupportedScheme, `host "svc"`},
	} {
		_, _, err := e.get(t, tc.url)
		var xe *xdshttp.Error
		if !errors.Is(err, tc.want) || !errors.As(err, &xe) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("GET %s: error %v, want an *xdshttp.Error wrapping %v and naming %s", tc.url, err, tc.want, tc.text)
		}
	}
	if _, _, err := e.get(t, "http://svc/ok"); err != nil {
		t.Errorf("GET /ok: %v", err)
	}
}

// TestTransport_ListenerDoesNotExist: the first request to a host whose
// Listener does not exist fails when the client says so, wrapping
// client.ErrResourceNotFound; a request whose context ends first fails
// with the context's error.
func TestTransport_ListenerDoesNotExist(t *testing.T) {
	e := newCliEnvWith(t, []client.Option{client.WithWatchExpiryTimeout(time.Second)})
	e.update(t, testutil.Resources{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://absent/", nil)
	if _, err := e.hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("request with a 50 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	// The management server has no such Listener: the client reports it
	// does not exist when the does-not-exist timer fires, here 1 s.
	ctx, cancel = context.WithTimeout(context.Background(), defaultTestTimeout)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", "http://absent/", nil)
	_, err := e.hc.Do(req)
	if !errors.Is(err, client.ErrResourceNotFound) || !strings.Contains(err.Error(), "absent") {
		t.Errorf("request to a Listener that does not exist: %v, want client.ErrResourceNotFound naming it", err)
	}
}

// TestTransport_VirtualHostByHost: the Listener is named by the URL's
// host, the virtual host chosen by the request's Host.
func TestTransport_VirtualHostByHost(t *testing.T) {
	e := newCliEnv(t)
	ba, bb := startBackend(t, "a", nil), startBackend(t, "b", nil)
	e.update(t, testutil.Resources{
		Listeners: clientResources("gw").Listeners,
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("rc-gw",
			testutil.VirtualHost("a", []string{"a.example", "gw"}, testutil.ClusterRoute("/", "ca")),
			testutil.VirtualHost("b", []string{"*.b.example"}, testutil.ClusterRoute("/", "cb")),
		)},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("ca", ""), testutil.Cluster("cb", "")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{backendEndpoints("ca", ba), backendEndpoints("cb", bb)},
	})
	for _, tc := range []struct{ host, want string }{{"", "a"}, {"a.example", "a"}, {"x.b.example", "b"}, {"A.EXAMPLE", "a"}} {
		req, _ := http.NewRequest("GET", "http://gw/", nil)
		req.Host = tc.host
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatalf("Host %q: %v", tc.host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tc.want {
			t.Errorf("Host %q: answered by %q, want %q", tc.host, body, tc.want)
		}
	}
	req, _ := http.NewRequest("GET", "http://gw/", nil)
	req.Host = "other.example"
	if _, err := e.hc.Do(req); !errors.Is(err, depmgr.ErrNoVirtualHost) {
		t.Errorf("Host without a virtual host: %v, want depmgr.ErrNoVirtualHost", err)
	}
}

// TestTransport_QueryParameterRoute: routes that match query parameters
// (which the gRPC path leaves out) route HTTP requests, and their
// clusters are part of the configuration.
func TestTransport_QueryParameterRoute(t *testing.T) {
	e := newCliEnv(t)
	v1, v2 := startBackend(t, "v1", nil), startBackend(t, "v2", nil)
	r := clientResources("svc", v1)
	r.Clusters = append(r.Clusters, testutil.Cluster("c2", ""))
	r.Endpoints = append(r.Endpoints, backendEndpoints("c2", v2))
	vh := r.Routes[0].VirtualHosts[0]
	q := &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}, QueryParameters: []*v3routepb.QueryParameterMatcher{{
		Name: "version", QueryParameterMatchSpecifier: &v3routepb.QueryParameterMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "2"}}},
	}}}
	vh.Routes = append([]*v3routepb.Route{{Match: q, Action: clusterAction("c2")}}, vh.Routes...)
	e.update(t, r)
	for url, want := range map[string]string{"http://svc/x?version=2": "v2", "http://svc/x?version=1": "v1", "http://svc/x": "v1"} {
		if _, body, err := e.get(t, url); err != nil || body != want {
			t.Errorf("GET %s: %q, %v; want %q", url, body, err, want)
		}
	}
}

// TestTransport_RouteTimeout: a route's timeout fails a request whose
// response does not come in time with ErrTimeout.
func TestTransport_RouteTimeout(t *testing.T) {
	e := newCliEnv(t)
	release := make(chan struct{})
	defer close(release)
	slow := startBackend(t, "slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	r := clientResources("svc", slow)
	ra := r.Routes[0].VirtualHosts[0].Routes[0].GetRoute()
	ra.Timeout = durationpb.New(50 * time.Millisecond)
	e.update(t, r)
	start := time.Now()
	_, _, err := e.get(t, "http://svc/")
	if !errors.Is(err, xdshttp.ErrTimeout) {
		t.Fatalf("GET: %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the request failed after %v, want about 50ms", d)
	}
}

// TestTransport_UpstreamH2C: a cluster whose protocol options say HTTP/2
// gets HTTP/2 with prior knowledge over plaintext.
func TestTransport_UpstreamH2C(t *testing.T) {
	e := newCliEnv(t)
	b := &backend{name: "h2c", reqs: make(chan *http.Request, 10)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	b.port = portOf(t, srv.Listener.Addr().String())
	r := clientResources("svc", b)
	r.Clusters[0].TypedExtensionProtocolOptions = map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": testutil.MarshalAny(&v3httpupstreampb.HttpProtocolOptions{
			UpstreamProtocolOptions: &v3httpupstreampb.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &v3httpupstreampb.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &v3httpupstreampb.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &v3corepb.Http2ProtocolOptions{}},
			}},
		}),
	}
	e.update(t, r)
	if _, body, err := e.get(t, "http://svc/"); err != nil || body != "HTTP/2.0" {
		t.Errorf("GET: %q, %v; want HTTP/2.0", body, err)
	}
}

// TestTransport_CircuitBreaker: with max_requests 1, a second request
// while the first is in flight fails with ErrCircuitBreakerOpen; once the
// first's body is closed, requests go through again.
func TestTransport_CircuitBreaker(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", nil)
	r := clientResources("svc", b)
	r.Clusters[0].CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(1)}}}
	e.update(t, r)
	resp, err := e.hc.Get("http://svc/")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.get(t, "http://svc/"); !errors.Is(err, xdshttp.ErrCircuitBreakerOpen) {
		t.Errorf("second request in flight: %v, want ErrCircuitBreakerOpen", err)
	}
	resp.Body.Close()
	if _, _, err := e.get(t, "http://svc/"); err != nil {
		t.Errorf("request after the first ended: %v", err)
	}
}

// TestTransport_Close: after Close, requests fail with ErrClosed, and
// a response in flight is cut.
func TestTransport_Close(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	e.update(t, clientResources("svc", b))
	resp, err := e.hc.Get("http://svc/")
	if err != nil {
		t.Fatal(err)
	}
	e.tr.Close()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("reading a response in flight after Close: no error")
		}
	case <-time.After(defaultTestTimeout):
		t.Fatal("a response in flight was not cut by Close")
	}
	resp.Body.Close()
	if _, _, err := e.get(t, "http://svc/"); !errors.Is(err, xdshttp.ErrClosed) {
		t.Errorf("request after Close: %v, want ErrClosed", err)
	}
}

// TestTransport_ClusterTLS: a cluster with an UpstreamTlsContext gets mTLS
// with the bootstrap's certificate providers, for http:// URLs: the
// backend sees the client's SPIFFE ID; a SAN matcher the server does not
// match fails the request.
func TestTransport_ClusterTLS(t *testing.T) {
	e, mesh := newTLSEnv(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].URIs[0].String()+" "+r.Proto)
	}))
	srv.TLS = mesh.ServerTLS()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	b := &backend{name: "tls", port: portOf(t, srv.Listener.Addr().String())}
	r := clientResources("svc", b)
	testutil.WithUpstreamTLS(r.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "client", IdentityInstance: "client", SubjectAltNames: []*v3matcherpb.StringMatcher{testutil.ExactSAN(mesh.ID("backend"))}})
	e.update(t, r)
	want := mesh.ID("client") + " HTTP/1.1"
	if _, body, err := e.get(t, "http://svc/"); err != nil || body != want {
		t.Errorf("GET over mTLS: %q, %v; want %q", body, err, want)
	}
	testutil.WithUpstreamTLS(r.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "client", IdentityInstance: "client", SubjectAltNames: []*v3matcherpb.StringMatcher{testutil.ExactSAN(mesh.ID("other"))}})
	r.Version = "2"
	e.update(t, r)
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		_, _, err := e.get(t, "http://svc/")
		if err != nil && strings.Contains(err.Error(), "subject") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET with a SAN matcher the server does not match: %v, want a SAN error", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ = tls.Config{}

// TestTransport_OutlierDetection: an endpoint that answers 5xx is ejected
// by failure percentage ejection (gRFC A50) at the end of an interval, and
// requests go to the other one.
func TestTransport_OutlierDetection(t *testing.T) {
	e := newCliEnv(t)
	bad := startBackend(t, "bad", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	good := startBackend(t, "good", nil)
	r := clientResources("svc", bad, good)
	r.Clusters[0].OutlierDetection = &v3clusterpb.OutlierDetection{
		Interval:                       durationpb.New(50 * time.Millisecond),
		BaseEjectionTime:               durationpb.New(time.Minute),
		MaxEjectionPercent:             wrapperspb.UInt32(50),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(2),
		FailurePercentageRequestVolume: wrapperspb.UInt32(2),
	}
	e.update(t, r)
	deadline := time.Now().Add(defaultTestTimeout)
	for ok := 0; ok < 20; {
		if time.Now().After(deadline) {
			t.Fatal("the endpoint answering 500 was not ejected")
		}
		resp, err := e.hc.Get("http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Backend") == "good" {
			ok++
		} else {
			ok = 0
		}
	}
}

// TestTransport_LoadReport: a cluster with lrs_server "self" has its
// requests reported per locality: issued, succeeded, errored (5xx).
func TestTransport_LoadReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ls := testutil.NewLRSServer(t, testutil.LRSServerOptions{Clusters: []string{"c"}})
	e := newCliEnv(t, xdshttp.WithLoadReportTransport(ls.TransportBuilder()))
	b := startBackend(t, "b", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	r := clientResources("svc", b)
	r.Clusters[0].LrsServer = &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Self{Self: &v3corepb.SelfConfigSource{}}}
	e.update(t, r)
	for _, p := range []string{"/ok", "/ok", "/ok", "/fail"} {
		if _, _, err := e.get(t, "http://svc"+p); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; ; n++ {
		reqs, err := ls.WaitForRequests(ctx, n)
		if err != nil {
			t.Fatalf("no load report with the requests: %v", err)
		}
		var issued, succeeded, errored uint64
		for _, r := range reqs {
			for _, cs := range r.GetClusterStats() {
				for _, l := range cs.GetUpstreamLocalityStats() {
					issued += l.GetTotalIssuedRequests()
					succeeded += l.GetTotalSuccessfulRequests()
					errored += l.GetTotalErrorRequests()
				}
			}
		}
		if issued == 4 {
			if succeeded != 3 || errored != 1 {
				t.Errorf("reported %d succeeded, %d errored; want 3, 1", succeeded, errored)
			}
			return
		}
	}
}

// TestTransport_IdleHostDropped: a host no request used for the idle time
// is dropped: nothing is watched any more, so the client closes its
// stream; the next request starts it again.
func TestTransport_IdleHostDropped(t *testing.T) {
	e := newCliEnv(t, xdshttp.WithHostIdleTimeout(100*time.Millisecond))
	b := startBackend(t, "b", nil)
	e.update(t, clientResources("svc", b))
	if _, _, err := e.get(t, "http://svc/"); err != nil {
		t.Fatal(err)
	}
	if len(e.c.Gauges().Connected) != 1 {
		t.Fatalf("connected to %v, want the management server", e.c.Gauges().Connected)
	}
	deadline := time.Now().Add(defaultTestTimeout)
	for len(e.c.Gauges().Connected) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle host's watches were not cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, body, err := e.get(t, "http://svc/"); err != nil || body != "b" {
		t.Errorf("request after the host was dropped: %q, %v", body, err)
	}
}

// TestTransport_StatefulSession: with the stateful session filter (gRFC
// A55), the first response sets the cookie, and requests that carry it
// go to the same endpoint.
func TestTransport_StatefulSession(t *testing.T) {
	e := newCliEnv(t)
	b1, b2 := startBackend(t, "b1", nil), startBackend(t, "b2", nil)
	r := clientResources("svc", b1, b2)
	r.Listeners[0] = testutil.WithHTTPFilter(r.Listeners[0], testutil.CookieSessionFilter("session", "", time.Minute))
	e.update(t, r)
	resp, err := e.hc.Get("http://svc/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	first := resp.Header.Get("X-Backend")
	cookie := resp.Header.Get("Set-Cookie")
	if !strings.HasPrefix(cookie, "session=") {
		t.Fatalf("first response's Set-Cookie = %q, want the session cookie", cookie)
	}
	for range 6 {
		req, _ := http.NewRequest("GET", "http://svc/", nil)
		req.Header.Set("Cookie", strings.Split(cookie, ";")[0])
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Backend"); got != first {
			t.Fatalf("request with the cookie answered by %q, want %q", got, first)
		}
		if c := resp.Header.Get("Set-Cookie"); c != "" {
			t.Errorf("response to a request with a valid cookie sets %q, want none", c)
		}
	}
}

// TestTransport_ManagementServerUnreachable: a request to a host whose
// configuration cannot come (the management server is down) fails with
// client.ErrConnection once the client reports it, not at its deadline.
func TestTransport_ManagementServerUnreachable(t *testing.T) {
	e := newCliEnv(t)
	e.ms.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), defaultTestTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://svc/", nil)
	start := time.Now()
	_, err := e.hc.Do(req)
	if !errors.Is(err, client.ErrConnection) {
		t.Errorf("request with the management server down: %v (after %v), want client.ErrConnection", err, time.Since(start))
	}
}

// TestTransport_HostOnlyMatchesByHost: a URL host that selects no virtual
// host of its Listener's RouteConfiguration still serves the requests
// whose Host selects one.
func TestTransport_HostOnlyMatchesByHost(t *testing.T) {
	e := newCliEnv(t)
	b := startBackend(t, "b", nil)
	r := clientResources("gw", b)
	r.Routes[0].VirtualHosts[0].Domains = []string{"api.example"}
	e.update(t, r)
	req, _ := http.NewRequest("GET", "http://gw/", nil)
	req.Host = "api.example"
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatalf("request with Host api.example: %v", err)
	}
	resp.Body.Close()
	if _, _, err := e.get(t, "http://gw/"); !errors.Is(err, depmgr.ErrNoVirtualHost) {
		t.Errorf("request with Host gw: %v, want depmgr.ErrNoVirtualHost", err)
	}
}

// TestTransport_EndpointRemovedClosesConnections: when an endpoint leaves
// EDS, its idle connections are closed at once, and a connection with a
// response in flight when its response ends.
func TestTransport_EndpointRemovedClosesConnections(t *testing.T) {
	e := newCliEnv(t)
	closed := make(chan struct{}, 10)
	release := make(chan struct{})
	old := startBackendWith(t, "old", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-release
		}
	}, func(s *http.Server) {
		s.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed <- struct{}{}
			}
		}
	})
	repl := startBackend(t, "new", nil)
	e.update(t, clientResources("svc", old))
	resp, err := e.hc.Get("http://svc/slow") // a connection with a response in flight
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.get(t, "http://svc/"); err != nil { // a second connection, then idle
		t.Fatal(err)
	}
	r := clientResources("svc", repl)
	r.Version = "2"
	e.update(t, r)
	select {
	case <-closed:
	case <-time.After(defaultTestTimeout):
		t.Fatal("the idle connection to the removed endpoint was not closed")
	}
	select {
	case <-closed:
		t.Fatal("the connection with a response in flight was closed before the response ended")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	io.ReadAll(resp.Body)
	resp.Body.Close()
	select {
	case <-closed:
	case <-time.After(defaultTestTimeout):
		t.Fatal("the connection to the removed endpoint was not closed after its response ended")
	}
	if _, body, err := e.get(t, "http://svc/"); err != nil || body != "new" {
		t.Errorf("request after the update: %q, %v; want new", body, err)
	}
}

// TestTransport_Consecutive5xx: with consecutive_5xx 3 (Envoy, which
// Istio's consecutive5xxErrors sets), an endpoint answering 500 is ejected
// at its third failure, without waiting for the interval's end.
func TestTransport_Consecutive5xx(t *testing.T) {
	e := newCliEnv(t)
	bad := startBackend(t, "bad", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	good := startBackend(t, "good", nil)
	r := clientResources("svc", bad, good)
	r.Clusters[0].OutlierDetection = &v3clusterpb.OutlierDetection{
		Interval:           durationpb.New(time.Hour), // no sweep during the test
		BaseEjectionTime:   durationpb.New(time.Hour),
		MaxEjectionPercent: wrapperspb.UInt32(50),
		Consecutive_5Xx:    wrapperspb.UInt32(3),
	}
	e.update(t, r)
	bads := 0
	for range 20 {
		_, body, err := e.get(t, "http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		if body != "good" {
			bads++
		}
	}
	if bads != 3 {
		t.Errorf("requests answered by the failing endpoint: %d, want 3 (ejected at the third)", bads)
	}
}

// TestTransport_HTTPSWithoutClusterTLS: an https:// URL routed to a
// cluster without TLS gets TLS verified as http.Transport verifies the URL
// (here against WithTLSClientConfig's roots, the URL's host name as the
// server name): the backend's certificate for "example.com" passes for
// https://example.com, fails for https://other.example.
func TestTransport_HTTPSWithoutClusterTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	e := newCliEnv(t, xdshttp.WithTLSClientConfig(&tls.Config{RootCAs: roots}))
	b := &backend{name: "tls", port: portOf(t, srv.Listener.Addr().String())}
	r := clientResources("example.com", b)
	r.Listeners = append(r.Listeners, clientResources("other.example").Listeners...)
	r.Routes = append(r.Routes, clientResources("other.example").Routes...)
	e.update(t, r)
	if _, body, err := e.get(t, "https://example.com/"); err != nil || body != "HTTP/1.1" {
		t.Errorf("https://example.com: %q, %v; want an answer over TLS", body, err)
	}
	if status, _, err := e.get(t, "http://example.com/"); err != nil || status != http.StatusBadRequest {
		t.Errorf("http://example.com to a TLS backend of a cluster without TLS: %d, %v; want plaintext (the server's 400)", status, err)
	}
	if _, _, err := e.get(t, "https://other.example/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("https://other.example with a certificate for example.com: %v, want a certificate error", err)
	}
}

// TestTransport_ClusterTLSHTTP2: a cluster with TLS and auto_config
// protocol options gets HTTP/2 by ALPN.
func TestTransport_ClusterTLSHTTP2(t *testing.T) {
	e, mesh := newTLSEnv(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }))
	srv.TLS = mesh.ServerTLS()
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	b := &backend{name: "tls", port: portOf(t, srv.Listener.Addr().String())}
	r := clientResources("svc", b)
	testutil.WithUpstreamTLS(r.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "client", IdentityInstance: "client", SubjectAltNames: []*v3matcherpb.StringMatcher{testutil.ExactSAN(mesh.ID("backend"))}})
	r.Clusters[0].TypedExtensionProtocolOptions = map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": testutil.MarshalAny(&v3httpupstreampb.HttpProtocolOptions{
			UpstreamProtocolOptions: &v3httpupstreampb.HttpProtocolOptions_AutoConfig{AutoConfig: &v3httpupstreampb.HttpProtocolOptions_AutoHttpConfig{}},
		}),
	}
	e.update(t, r)
	if _, body, err := e.get(t, "http://svc/"); err != nil || body != "HTTP/2.0" {
		t.Errorf("GET over TLS with auto_config: %q, %v; want HTTP/2.0", body, err)
	}
}

// TestTransport_OutlierDetectionRemoved: an endpoint ejected by outlier
// detection is picked again once an update removes the cluster's outlier
// detection.
func TestTransport_OutlierDetectionRemoved(t *testing.T) {
	e := newCliEnv(t)
	var failing atomic.Bool
	failing.Store(true)
	flaky := startBackend(t, "flaky", func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "flaky")
	})
	good := startBackend(t, "good", nil)
	r := clientResources("svc", flaky, good)
	r.Clusters[0].OutlierDetection = &v3clusterpb.OutlierDetection{
		Interval:           durationpb.New(time.Hour),
		BaseEjectionTime:   durationpb.New(time.Hour),
		MaxEjectionPercent: wrapperspb.UInt32(50),
		Consecutive_5Xx:    wrapperspb.UInt32(1),
	}
	e.update(t, r)
	for range 4 { // the first 500 ejects it
		if _, _, err := e.get(t, "http://svc/"); err != nil {
			t.Fatal(err)
		}
	}
	failing.Store(false)
	r.Clusters[0].OutlierDetection = nil
	r.Version = "2"
	e.update(t, r)
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		if _, body, err := e.get(t, "http://svc/"); err == nil && body == "flaky" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the endpoint ejected before outlier detection was removed is never picked again")
		}
	}
}
