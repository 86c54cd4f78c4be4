// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/transport/rest"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// NodeID is the node ID of the clients NewClient makes.
const NodeID = "transporttest"

// RESTInterval is the polling interval of RESTHarness's clients.
const RESTInterval = 20 * time.Millisecond

// NewClient returns a client, closed when t ends, whose bootstrap names
// one management server, serverURI, with insecure channel credentials and
// the node NodeID, and that reaches it through b: client.New with
// o.Options, client.WithTransportBuilder(b), then extra. It calls t.Fatal
// when the bootstrap or the client cannot be made. It is what the
// harnesses of this package use in Server.NewClient; o.MaxResponseBytes
// is for the caller to give to b.
func NewClient(t *testing.T, serverURI string, b transport.Builder, o ClientOptions, extra ...client.Option) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": %q}
	}`, serverURI, NodeID))
	if err != nil {
		t.Fatalf("transporttest: bootstrap for %s: %v", serverURI, err)
	}
	opts := append(append(append([]client.Option(nil), o.Options...), client.WithTransportBuilder(b)), extra...)
	c, err := client.New(cfg, opts...)
	if err != nil {
		t.Fatalf("transporttest: client.New for %s: %v", serverURI, err)
	}
	t.Cleanup(c.Close)
	return c
}

// ADSHarness returns the Harness of ADS over gRPC (package grpctransport,
// the client's default transport), SotW or delta (client.WithDelta),
// against testutil's ManagementServer on 127.0.0.1. Break is
// ManagementServer.BreakStreams; Requests is the server's log.
func ADSHarness(delta bool) Harness { return &grpcHarness{delta: delta} }

// PerTypeHarness returns the Harness of the per-type gRPC streams (package
// transport/pertype over grpctransport; xDS protocol variants 1 and 2),
// SotW or delta, against testutil's ManagementServer, which serves the
// per-type services from the same snapshots as ADS.
func PerTypeHarness(delta bool) Harness { return &grpcHarness{delta: delta, perType: true} }

type grpcHarness struct {
	delta, perType bool
}

func (h *grpcHarness) Features() Features { return Features{Delta: h.delta} }

func (h *grpcHarness) NewServer(t *testing.T) Server {
	return &grpcServer{h: h, ms: testutil.NewManagementServer(t, testutil.ServerOptions{})}
}

// grpcServer is a Server of ADSHarness and PerTypeHarness.
type grpcServer struct {
	h  *grpcHarness
	ms *testutil.ManagementServer
}

func (s *grpcServer) NewClient(t *testing.T, o ClientOptions) *client.Client {
	t.Helper()
	var gopts []grpctransport.Option
	if o.MaxResponseBytes > 0 {
		gopts = append(gopts, grpctransport.WithMaxRecvMsgSize(o.MaxResponseBytes))
	}
	g := grpctransport.NewBuilder(gopts...)
	var b transport.Builder = g
	if s.h.perType {
		b = pertype.NewBuilder(g)
	}
	var extra []client.Option
	if s.h.delta {
		extra = append(extra, client.WithDelta())
	}
	return NewClient(t, s.ms.Address(), b, o, extra...)
}

func (s *grpcServer) SetResources(t *testing.T, r testutil.Resources) {
	t.Helper()
	if err := s.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
}

func (s *grpcServer) Break(*testing.T) { s.ms.BreakStreams() }

func (s *grpcServer) Requests() RequestLog { return s.ms }

// RESTHarness returns the Harness of REST-JSON polling (package
// transport/rest, polling every RESTInterval) against testutil's
// ManagementServer.RESTHandler on an httptest server. Break makes the next
// poll fail (BreakingHandler), which ends the client's polling stream;
// Requests is the server's log, each poll a request with StreamID 0.
func RESTHarness() Harness { return restHarness{} }

type restHarness struct{}

func (restHarness) Features() Features { return Features{} }

func (restHarness) NewServer(t *testing.T) Server {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	bh := &BreakingHandler{Handler: ms.RESTHandler()}
	hs := httptest.NewServer(bh)
	t.Cleanup(hs.Close) // before ms.Stop, registered earlier
	return &restServer{ms: ms, bh: bh, url: hs.URL}
}

// restServer is a Server of RESTHarness.
type restServer struct {
	ms  *testutil.ManagementServer
	bh  *BreakingHandler
	url string
}

func (s *restServer) NewClient(t *testing.T, o ClientOptions) *client.Client {
	t.Helper()
	b := rest.NewBuilder(rest.WithInterval(RESTInterval), rest.WithMaxResponseBytes(int64(o.MaxResponseBytes)))
	return NewClient(t, s.url, b, o)
}

func (s *restServer) SetResources(t *testing.T, r testutil.Resources) {
	t.Helper()
	if err := s.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
}

func (s *restServer) Break(*testing.T) { s.bh.Break() }

func (s *restServer) Requests() RequestLog { return s.ms }

// BreakingHandler is an http.Handler for REST-JSON harnesses: it passes
// every request to Handler, except that the first request after Break
// gets 503 Service Unavailable, which ends the client's polling stream as
// a broken gRPC stream would end an ADS stream. Safe for concurrent use.
type BreakingHandler struct {
	Handler http.Handler

	broken atomic.Bool
}

// Break makes the next request fail.
func (h *BreakingHandler) Break() { h.broken.Store(true) }

// ServeHTTP implements http.Handler.
func (h *BreakingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.broken.CompareAndSwap(true, false) {
		http.Error(w, "transporttest: broken by Break", http.StatusServiceUnavailable)
		return
	}
	h.Handler.ServeHTTP(w, r)
}

// BreakingListener is a net.Listener for harnesses of gRPC servers that
// cannot break their own streams (go-control-plane's, in this module's
// interop tests): Break closes every connection accepted so far, which
// fails their streams on both sides as a server restart would; the
// clients connect again. Safe for concurrent use.
type BreakingListener struct {
	net.Listener

	mu    sync.Mutex
	conns []net.Conn // accepted since the last Break
}

// NewBreakingListener returns a BreakingListener accepting on l.
func NewBreakingListener(l net.Listener) *BreakingListener {
	return &BreakingListener{Listener: l}
}

// Accept implements net.Listener.
func (l *BreakingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// Break closes every connection accepted so far.
func (l *BreakingListener) Break() {
	l.mu.Lock()
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// FileHarness returns the Harness of filesystem subscriptions (package
// transport/file) on a temporary directory, into which SetResources writes
// one DiscoveryResponse per built-in type (listeners.pb, routes.pb,
// clusters.pb, endpoints.pb: binary, version_info r.Version), each
// written under a hidden name and renamed into place. Break ends the
// stream of every client from the client's side (a file source has no
// server to restart). A file source cannot receive NACKs, so Requests is
// nil and CellNACK checks the client's side only.
func FileHarness() Harness { return fileHarness{} }

type fileHarness struct{}

func (fileHarness) Features() Features {
	return Features{Unsupported: map[string]string{
		CellNACK: "a file source cannot receive a NACK: the client's NACK shows only in its Dump and logs",
	}}
}

func (fileHarness) NewServer(t *testing.T) Server {
	return &fileServer{dir: t.TempDir()}
}

// fileServer is a Server of FileHarness.
type fileServer struct {
	dir string

	mu       sync.Mutex
	builders []*clienttest.Builder // one per client, to break their streams
}

// fileNames are the files of the built-in types.
var fileNames = map[string]string{
	resources.ListenerTypeURL:    "listeners.pb",
	resources.RouteConfigTypeURL: "routes.pb",
	resources.ClusterTypeURL:     "clusters.pb",
	resources.EndpointsTypeURL:   "endpoints.pb",
}

func (s *fileServer) NewClient(t *testing.T, o ClientOptions) *client.Client {
	t.Helper()
	var fopts []file.Option
	if o.MaxResponseBytes > 0 {
		fopts = append(fopts, file.WithMaxFileBytes(int64(o.MaxResponseBytes)))
	}
	b := &clienttest.Builder{Inner: file.NewBuilder(fopts...)}
	s.mu.Lock()
	s.builders = append(s.builders, b)
	s.mu.Unlock()
	return NewClient(t, (&url.URL{Scheme: file.Scheme, Path: filepath.ToSlash(s.dir)}).String(), b, o)
}

func (s *fileServer) SetResources(t *testing.T, r testutil.Resources) {
	t.Helper()
	byType := map[string]*v3discoverypb.DiscoveryResponse{}
	for typeURL := range fileNames {
		byType[typeURL] = &v3discoverypb.DiscoveryResponse{VersionInfo: r.Version, TypeUrl: typeURL}
	}
	var all []proto.Message
	for _, m := range r.Listeners {
		all = append(all, m)
	}
	for _, m := range r.Routes {
		all = append(all, m)
	}
	for _, m := range r.Clusters {
		all = append(all, m)
	}
	for _, m := range r.Endpoints {
		all = append(all, m)
	}
	for _, m := range all {
		a := testutil.MarshalAny(m)
		resp := byType[a.GetTypeUrl()]
		resp.Resources = append(resp.Resources, a)
	}
	if len(r.Other) > 0 {
		t.Fatal("transporttest: FileHarness serves the built-in types only")
	}
	for typeURL, resp := range byType {
		if err := writeFileAtomic(s.dir, fileNames[typeURL], resp); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFileAtomic writes m, binary, to dir/name: to a hidden temporary
// file first, renamed over name.
func writeFileAtomic(dir, name string, m proto.Message) error {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("transporttest: marshalling %s: %w", name, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return fmt.Errorf("transporttest: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("transporttest: writing %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("transporttest: writing %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("transporttest: %w", err)
	}
	return nil
}

func (s *fileServer) Break(*testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.builders {
		b.BreakAll()
	}
}

func (s *fileServer) Requests() RequestLog { return nil }
