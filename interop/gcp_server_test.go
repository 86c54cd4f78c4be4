// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	gcptypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	gcpcache "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	gcplog "github.com/envoyproxy/go-control-plane/pkg/log"
	gcpresource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gcpserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

const (
	// defaultTestTimeout bounds the wait for something that is expected to
	// happen.
	defaultTestTimeout = 10 * time.Second

	// nodeID is the node ID of the client's bootstrap, and the key of the
	// snapshot cache (gcpcache.IDHash).
	nodeID = "interop-node"
)

// gcpServer is go-control-plane's SotW ADS management server on a real gRPC
// server on 127.0.0.1, backed by a snapshot cache. It records the
// DiscoveryRequests it receives twice: as its callbacks see them (Requests)
// and as they came off the wire (WireRequests). The two differ: the server
// fills in the stream's node on every request before calling its
// callbacks.
type gcpServer struct {
	// Initialized by startGCPServer and read-only afterwards.
	Addr         string                                      // host:port of the gRPC listener
	Cache        gcpcache.SnapshotCache                      // SotW snapshot cache, ads=false
	Requests     *eventLog[*v3discoverypb.DiscoveryRequest]  // as given to OnStreamRequest
	WireRequests *eventLog[*v3discoverypb.DiscoveryRequest]  // as decoded from the wire
	Responses    *eventLog[*v3discoverypb.DiscoveryResponse] // as given to OnStreamResponse
	Closed       *eventLog[int64]                            // IDs of the streams that ended
}

// startGCPServer starts go-control-plane's management server and registers
// a t.Cleanup that stops it and waits for its goroutines: the gRPC server's,
// every stream handler and the server's context.
//
// The cache is created with ads set to false: with true, go-control-plane
// holds back a response until the request names every resource of the type
// in the snapshot, which a client that subscribes to what it needs never
// does.
func startGCPServer(t *testing.T) *gcpServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	return startGCPServerOn(t, lis)
}

// startGCPServerOn is startGCPServer on lis.
func startGCPServerOn(t *testing.T, lis net.Listener) *gcpServer {
	t.Helper()
	s := &gcpServer{
		Cache:        gcpcache.NewSnapshotCache(false, gcpcache.IDHash{}, gcplog.NewTestLogger(t)),
		Requests:     newEventLog[*v3discoverypb.DiscoveryRequest](),
		WireRequests: newEventLog[*v3discoverypb.DiscoveryRequest](),
		Responses:    newEventLog[*v3discoverypb.DiscoveryResponse](),
		Closed:       newEventLog[int64](),
	}
	callbacks := gcpserver.CallbackFuncs{
		// Called synchronously on the stream's goroutine: copy, since the
		// server keeps the request in its watch.
		StreamRequestFunc: func(_ int64, req *v3discoverypb.DiscoveryRequest) error {
			s.Requests.add(proto.Clone(req).(*v3discoverypb.DiscoveryRequest))
			return nil
		},
		StreamResponseFunc: func(_ context.Context, _ int64, _ *v3discoverypb.DiscoveryRequest, resp *v3discoverypb.DiscoveryResponse) {
			s.Responses.add(proto.Clone(resp).(*v3discoverypb.DiscoveryResponse))
		},
		StreamClosedFunc: func(id int64, _ *v3corepb.Node) { s.Closed.add(id) },
	}
	s.Addr = lis.Addr().String()

	// The server's context outlives the test's: it is cancelled in cleanup,
	// after the client has been closed.
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	xdsServer := gcpserver.NewServer(ctx, s.Cache, callbacks)
	grpcServer := grpc.NewServer(
		// Stop waits for every stream handler to return, so nothing logs
		// to t after the test.
		grpc.WaitForHandlers(true),
		grpc.StreamInterceptor(s.recordWire),
	)
	v3discoverygrpc.RegisterAggregatedDiscoveryServiceServer(grpcServer, xdsServer)

	serveDone := make(chan error, 1)
	go func() { serveDone <- grpcServer.Serve(lis) }()
	t.Cleanup(func() {
		cancel()
		grpcServer.Stop()
		// ErrServerStopped: Stop came before Serve started (a short test).
		if err := <-serveDone; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("grpc.Server.Serve: %v", err)
		}
	})
	return s
}

// recordWire is a stream interceptor that records every DiscoveryRequest
// exactly as the client sent it, before go-control-plane modifies it.
func (s *gcpServer) recordWire(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &recordingStream{ServerStream: ss, log: s.WireRequests})
}

type recordingStream struct {
	grpc.ServerStream
	log *eventLog[*v3discoverypb.DiscoveryRequest]
}

func (r *recordingStream) RecvMsg(m any) error {
	if err := r.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if req, ok := m.(*v3discoverypb.DiscoveryRequest); ok {
		r.log.add(proto.Clone(req).(*v3discoverypb.DiscoveryRequest))
	}
	return nil
}

// setSnapshot makes res, at version, the snapshot for nodeID. Every type
// of the snapshot gets the same version: go-control-plane has one version
// per snapshot.
func (s *gcpServer) setSnapshot(ctx context.Context, t *testing.T, version string, res testutil.Resources) {
	t.Helper()
	snap, err := gcpcache.NewSnapshot(version, map[gcpresource.Type][]gcptypes.Resource{
		gcpresource.ListenerType: toResources(res.Listeners),
		gcpresource.RouteType:    toResources(res.Routes),
		gcpresource.ClusterType:  toResources(res.Clusters),
		gcpresource.EndpointType: toResources(res.Endpoints),
	})
	if err != nil {
		t.Fatalf("gcpcache.NewSnapshot(%q): %v", version, err)
	}
	if err := s.Cache.SetSnapshot(ctx, nodeID, snap); err != nil {
		t.Fatalf("SetSnapshot(%q): %v", version, err)
	}
}

func toResources[M gcptypes.Resource](ms []M) []gcptypes.Resource {
	out := make([]gcptypes.Resource, 0, len(ms))
	for _, m := range ms {
		out = append(out, m)
	}
	return out
}

// newClient returns a client of the proxyless/xds library whose bootstrap
// names s, closed in t.Cleanup (before s is stopped).
func (s *gcpServer) newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	js := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)
	cfg, err := bootstrap.Parse([]byte(js))
	if err != nil {
		t.Fatalf("bootstrap.Parse(%s): %v", js, err)
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitForRequest waits for a request, among those the server's callbacks
// saw from index from on, that match accepts, and returns it with its index.
func (s *gcpServer) waitForRequest(ctx context.Context, from int, desc string, match func(*v3discoverypb.DiscoveryRequest) bool) (*v3discoverypb.DiscoveryRequest, int, error) {
	req, i, err := s.Requests.waitFor(ctx, from, match)
	if err != nil {
		return nil, 0, fmt.Errorf("waiting for %s: %w; requests seen:\n%s", desc, err, formatRequests(s.Requests.all()))
	}
	return req, i, nil
}

// isACK returns a matcher of the ACK of version for typeURL: a request of
// that type, with that version_info, a nonce and no error_detail.
func isACK(typeURL, version string) func(*v3discoverypb.DiscoveryRequest) bool {
	return func(r *v3discoverypb.DiscoveryRequest) bool {
		return r.GetTypeUrl() == typeURL && r.GetVersionInfo() == version &&
			r.GetResponseNonce() != "" && r.GetErrorDetail() == nil
	}
}

// isNACK returns a matcher of a NACK for typeURL: a request of that type
// with error_detail set.
func isNACK(typeURL string) func(*v3discoverypb.DiscoveryRequest) bool {
	return func(r *v3discoverypb.DiscoveryRequest) bool {
		return r.GetTypeUrl() == typeURL && r.GetErrorDetail() != nil
	}
}

func formatRequests(reqs []*v3discoverypb.DiscoveryRequest) string {
	var out string
	for i, r := range reqs {
		out += fmt.Sprintf("  %d: type=%s version_info=%q nonce=%q names=%q error_detail=%v\n",
			i, r.GetTypeUrl(), r.GetVersionInfo(), r.GetResponseNonce(), r.GetResourceNames(), r.GetErrorDetail())
	}
	return out
}

// eventLog is an append-only log that tests wait on. add never blocks, so a
// producer (a server callback, a watcher method) is never stalled by a test
// that reads slowly, and a storm of events cannot deadlock anything.
type eventLog[E any] struct {
	mu      sync.Mutex
	events  []E           // guarded by mu
	changed chan struct{} // guarded by mu; closed and replaced by every add
}

func newEventLog[E any]() *eventLog[E] {
	return &eventLog[E]{changed: make(chan struct{})}
}

func (l *eventLog[E]) add(e E) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	close(l.changed)
	l.changed = make(chan struct{})
}

// all returns a copy of the events so far.
func (l *eventLog[E]) all() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]E(nil), l.events...)
}

// waitFor returns the first event at index from or later that match
// accepts, and its index. It returns ctx's error if no such event arrives
// before ctx is done.
func (l *eventLog[E]) waitFor(ctx context.Context, from int, match func(E) bool) (E, int, error) {
	for i := from; ; {
		l.mu.Lock()
		for ; i < len(l.events); i++ {
			if match(l.events[i]) {
				e := l.events[i]
				l.mu.Unlock()
				return e, i, nil
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			var zero E
			return zero, 0, ctx.Err()
		}
	}
}
