// SPDX-License-Identifier: Apache-2.0

package rest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/rest"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

var typeByPath = map[string]string{
	"/v3/discovery:listeners": "type.googleapis.com/envoy.config.listener.v3.Listener",
	"/v3/discovery:routes":    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
	"/v3/discovery:clusters":  "type.googleapis.com/envoy.config.cluster.v3.Cluster",
	"/v3/discovery:endpoints": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
}

// restServer is a REST-JSON xDS server in the manner of go-control-plane's
// HTTP gateway: 304 when the request's version is current.
type restServer struct {
	*httptest.Server

	mu       sync.Mutex
	version  string
	byType   map[string][]proto.Message
	status   int // when not 0, every request gets this status
	requests chan *v3discoverypb.DiscoveryRequest
}

func newRESTServer(t *testing.T) *restServer {
	s := &restServer{byType: make(map[string][]proto.Message), requests: make(chan *v3discoverypb.DiscoveryRequest, 1000)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *restServer) set(version string, r testutil.Resources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = version
	s.byType = map[string][]proto.Message{}
	add := func(typ string, m proto.Message) { s.byType[typ] = append(s.byType[typ], m) }
	for _, m := range r.Listeners {
		add(typeByPath["/v3/discovery:listeners"], m)
	}
	for _, m := range r.Routes {
		add(typeByPath["/v3/discovery:routes"], m)
	}
	for _, m := range r.Clusters {
		add(typeByPath["/v3/discovery:clusters"], m)
	}
	for _, m := range r.Endpoints {
		add(typeByPath["/v3/discovery:endpoints"], m)
	}
}

func (s *restServer) setStatus(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = code
}

func (s *restServer) serve(w http.ResponseWriter, r *http.Request) {
	typ, ok := typeByPath[r.URL.Path]
	if r.Method != http.MethodPost || !ok {
		http.Error(w, "no endpoint", http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	req := &v3discoverypb.DiscoveryRequest{}
	if err := protojson.Unmarshal(b, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.TypeUrl = typ
	s.requests <- req
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != 0 {
		http.Error(w, "broken", s.status)
		return
	}
	if req.GetVersionInfo() == s.version {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	resp := &v3discoverypb.DiscoveryResponse{VersionInfo: s.version, TypeUrl: typ}
	for _, m := range s.byType[typ] {
		resp.Resources = append(resp.Resources, testutil.MarshalAny(m))
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(out)
}

// nextRequest returns the next request of typ.
func (s *restServer) nextRequest(ctx context.Context, t *testing.T, typ string) *v3discoverypb.DiscoveryRequest {
	t.Helper()
	for {
		select {
		case r := <-s.requests:
			if r.GetTypeUrl() == typ {
				return r
			}
		case <-ctx.Done():
			t.Fatalf("no %s request: %v", typ, ctx.Err())
		}
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, s *restServer, opts ...rest.Option) *client.Client {
	t.Helper()
	cfg, b, err := rest.Bootstrap(s.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Node.ID = "rest-node"
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

const listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"

// TestChain checks that the chain arrives over REST, every poll carries
// the node, and an update reaches the watcher at the next poll.
func TestChain(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.set("v1", testutil.Chain(testutil.ChainOptions{}))
	c := newClient(t, s, rest.WithInterval(50*time.Millisecond))
	w := clienttest.WatchChain(t, c, "svc")
	w.WantChain(ctx, t)

	r := s.nextRequest(ctx, t, listenerType)
	if r.GetNode().GetId() != "rest-node" {
		t.Errorf("poll node = %v, want rest-node", r.GetNode())
	}
	// The next polls carry the accepted version.
	if r := s.nextRequest(ctx, t, listenerType); r.GetVersionInfo() != "v1" || r.GetNode().GetId() != "rest-node" {
		t.Errorf("poll after v1: version %q node %v, want v1 and the node", r.GetVersionInfo(), r.GetNode())
	}

	s.set("v2", testutil.Chain(testutil.ChainOptions{Ports: []uint32{9090}}))
	w.WantEndpoint(ctx, t, "127.0.0.1:9090")
}

// TestNACK checks that the poll after an invalid response carries the
// previous version and the client's error_detail.
func TestNACK(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")}})
	c := newClient(t, s, rest.WithInterval(20*time.Millisecond))
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.Want(ctx, t, clienttest.Changed, nil)

	s.set("v2", testutil.Resources{Listeners: []*v3listenerpb.Listener{{Name: "svc"}}})
	w.Want(ctx, t, clienttest.AmbientError, nil)
	for {
		r := s.nextRequest(ctx, t, listenerType)
		if r.GetErrorDetail() == nil {
			continue
		}
		if r.GetVersionInfo() != "v1" || !strings.Contains(r.GetErrorDetail().GetMessage(), "svc") {
			t.Fatalf("NACK poll: version %q, error_detail %v; want v1 and the error", r.GetVersionInfo(), r.GetErrorDetail())
		}
		break
	}
}

// TestHTTPError checks that an HTTP error before any response is a
// connection error for watchers without a value, and one after a response
// an ambient error, and that the client recovers.
func TestHTTPError(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.setStatus(http.StatusServiceUnavailable)
	c := newClient(t, s, rest.WithInterval(20*time.Millisecond))
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
	if !strings.Contains(e.Err.Error(), "503") {
		t.Errorf("error %v does not give the HTTP status", e.Err)
	}

	s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")}})
	s.setStatus(0)
	w.Want(ctx, t, clienttest.Changed, nil) // after the client's backoff (1 s)

	s.setStatus(http.StatusInternalServerError)
	w.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
}

// TestSubscriptionChangePollsAtOnce checks that a new name is polled at
// once, not after the interval, and without a version, so that a server
// that answers 304 to a current version (go-control-plane's gateway) sends
// it.
func TestSubscriptionChangePollsAtOnce(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("a", "route"), testutil.Listener("b", "route")}})
	c := newClient(t, s, rest.WithInterval(time.Hour))
	wa := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "a", wa)()
	wa.Want(ctx, t, clienttest.Changed, nil)
	s.nextRequest(ctx, t, listenerType) // [a]
	wb := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "b", wb)()
	r := s.nextRequest(ctx, t, listenerType)
	if got := r.GetResourceNames(); len(got) != 2 || r.GetVersionInfo() != "" {
		t.Fatalf("poll after the change: names %v version %q, want [a b] and no version", got, r.GetVersionInfo())
	}
	wb.Want(ctx, t, clienttest.Changed, nil)
	wa.WantNone(t, 50*time.Millisecond) // a unchanged
}

// TestDeltaUnsupported checks the error for delta.
func TestDeltaUnsupported(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	cfg := &bootstrap.Config{Servers: []*bootstrap.ServerConfig{{ServerURI: s.URL}}}
	c, err := client.New(cfg, client.WithTransportBuilder(rest.NewBuilder()), client.WithDelta())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.Want(ctx, t, clienttest.ResourceError, transport.ErrDeltaUnsupported)
}

// handlerTransport is an http.RoundTripper that serves requests with a
// handler in process, without a network, so that fake time works.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestPollInterval checks, in fake time, that polls follow the interval
// within its ±20 % jitter, and that an answered 304 changes nothing.
func TestPollInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		s := &restServer{byType: make(map[string][]proto.Message), requests: make(chan *v3discoverypb.DiscoveryRequest, 1000)}
		s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")}})
		var (
			mu    sync.Mutex
			times []time.Time
		)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
			s.serve(w, r)
		})
		cfg, b, err := rest.Bootstrap("http://xds.invalid", rest.WithInterval(10*time.Second),
			rest.WithHTTPClient(&http.Client{Transport: handlerTransport{h}}))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Node.ID = "rest-node"
		c, err := client.New(cfg, client.WithTransportBuilder(b))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w := clienttest.NewRecorder[*resources.Listener]()
		defer client.Watch(c, resources.ListenerType, "svc", w)()
		w.Want(ctx, t, clienttest.Changed, nil)

		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		got := append([]time.Time(nil), times...)
		mu.Unlock()
		if len(got) < 5 || len(got) > 8 {
			t.Fatalf("%d polls in a minute at a 10 s interval: %v", len(got), got)
		}
		for i := 1; i < len(got); i++ {
			if gap := got[i].Sub(got[i-1]); gap < 8*time.Second || gap > 12*time.Second {
				t.Errorf("poll %d came %v after the previous one, want 8 s to 12 s", i, gap)
			}
		}
		w.WantNone(t, 0) // 304s changed nothing
	})
}
