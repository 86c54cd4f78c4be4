// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	gcptypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	gcpcache "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	gcplog "github.com/envoyproxy/go-control-plane/pkg/log"
	gcpresource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gcpserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"

	v3discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// gcpDeltaServer is go-control-plane's ADS server, answering
// DeltaAggregatedResources from a cache (a snapshot cache, or linear caches
// behind a mux), on a real gRPC server on 127.0.0.1. It records the
// DeltaDiscoveryRequests as they came off the wire (WireRequests) and the
// responses as its callbacks see them (Responses), and can break every
// open stream (BreakStreams) to make the client reconnect.
type gcpDeltaServer struct {
	// Initialized by startGCPDeltaServer and read-only afterwards.
	Addr         string
	WireRequests *eventLog[*v3discoverypb.DeltaDiscoveryRequest]
	Responses    *eventLog[*v3discoverypb.DeltaDiscoveryResponse]

	mu       sync.Mutex
	broken   chan struct{}  // guarded by mu; closed and replaced by BreakStreams
	handlers sync.WaitGroup // handlers left running by a broken stream
}

// startGCPDeltaServer starts go-control-plane's server over cache and
// registers a t.Cleanup that stops it and waits for its goroutines.
func startGCPDeltaServer(t *testing.T, cache gcpcache.Cache) *gcpDeltaServer {
	t.Helper()
	s := &gcpDeltaServer{
		WireRequests: newEventLog[*v3discoverypb.DeltaDiscoveryRequest](),
		Responses:    newEventLog[*v3discoverypb.DeltaDiscoveryResponse](),
		broken:       make(chan struct{}),
	}
	callbacks := gcpserver.CallbackFuncs{
		StreamDeltaResponseFunc: func(_ int64, _ *v3discoverypb.DeltaDiscoveryRequest, resp *v3discoverypb.DeltaDiscoveryResponse) {
			s.Responses.add(proto.Clone(resp).(*v3discoverypb.DeltaDiscoveryResponse))
		},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	s.Addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	xdsServer := gcpserver.NewServer(ctx, cache, callbacks)
	grpcServer := grpc.NewServer(grpc.WaitForHandlers(true), grpc.StreamInterceptor(s.intercept))
	v3discoverygrpc.RegisterAggregatedDiscoveryServiceServer(grpcServer, xdsServer)
	serveDone := make(chan error, 1)
	go func() { serveDone <- grpcServer.Serve(lis) }()
	t.Cleanup(func() {
		cancel()
		grpcServer.Stop()
		if err := <-serveDone; err != nil {
			t.Errorf("grpc.Server.Serve: %v", err)
		}
		s.handlers.Wait()
	})
	return s
}

// intercept records the requests as they come off the wire, and ends the
// stream when BreakStreams is called: the RPC returns Unavailable at once,
// and go-control-plane's handler, left running, returns when its next Recv
// fails on the closed stream.
func (s *gcpDeltaServer) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	done := make(chan error, 1)
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		done <- handler(srv, &deltaRecordingStream{ServerStream: ss, log: s.WireRequests})
	}()
	select {
	case err := <-done:
		return err
	case <-broken:
		return status.Error(codes.Unavailable, "interop: stream broken by the test")
	}
}

// BreakStreams ends every open stream.
func (s *gcpDeltaServer) BreakStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.broken)
	s.broken = make(chan struct{})
}

type deltaRecordingStream struct {
	grpc.ServerStream
	log *eventLog[*v3discoverypb.DeltaDiscoveryRequest]
}

func (r *deltaRecordingStream) RecvMsg(m any) error {
	if err := r.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if req, ok := m.(*v3discoverypb.DeltaDiscoveryRequest); ok {
		r.log.add(proto.Clone(req).(*v3discoverypb.DeltaDiscoveryRequest))
	}
	return nil
}

// newClient returns a client whose bootstrap names s with the "delta_ads"
// server feature (no client option), closed in t.Cleanup.
func (s *gcpDeltaServer) newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	js := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["delta_ads"]}],
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

// waitForRequest waits for a wire request from index from on that match
// accepts.
func (s *gcpDeltaServer) waitForRequest(ctx context.Context, from int, desc string, match func(*v3discoverypb.DeltaDiscoveryRequest) bool) (*v3discoverypb.DeltaDiscoveryRequest, int, error) {
	req, i, err := s.WireRequests.waitFor(ctx, from, match)
	if err != nil {
		return nil, 0, fmt.Errorf("waiting for %s: %w; requests seen:\n%s", desc, err, formatDeltaRequests(s.WireRequests.all()))
	}
	return req, i, nil
}

func formatDeltaRequests(reqs []*v3discoverypb.DeltaDiscoveryRequest) string {
	var out string
	for i, r := range reqs {
		out += fmt.Sprintf("  %d: type=%s nonce=%q subscribe=%q unsubscribe=%q initial=%v error_detail=%v node=%t\n",
			i, r.GetTypeUrl(), r.GetResponseNonce(), r.GetResourceNamesSubscribe(), r.GetResourceNamesUnsubscribe(),
			r.GetInitialResourceVersions(), r.GetErrorDetail(), r.GetNode() != nil)
	}
	return out
}

// isDeltaACK matches an ACK for typeURL: a nonce and no error_detail.
func isDeltaACK(typeURL string) func(*v3discoverypb.DeltaDiscoveryRequest) bool {
	return func(r *v3discoverypb.DeltaDiscoveryRequest) bool {
		return r.GetTypeUrl() == typeURL && r.GetResponseNonce() != "" && r.GetErrorDetail() == nil
	}
}

// newDeltaSnapshotCache returns a snapshot cache holding res at version for
// nodeID.
func newDeltaSnapshotCache(ctx context.Context, t *testing.T, version string, res testutil.Resources) gcpcache.SnapshotCache {
	t.Helper()
	cache := gcpcache.NewSnapshotCache(false, gcpcache.IDHash{}, gcplog.NewTestLogger(t))
	setDeltaSnapshot(ctx, t, cache, version, res)
	return cache
}

func setDeltaSnapshot(ctx context.Context, t *testing.T, cache gcpcache.SnapshotCache, version string, res testutil.Resources) {
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
	if err := cache.SetSnapshot(ctx, nodeID, snap); err != nil {
		t.Fatalf("SetSnapshot(%q): %v", version, err)
	}
}

// linearCaches are one go-control-plane LinearCache per built-in type,
// behind a MuxCache that routes requests by type URL.
type linearCaches struct {
	byType map[string]*gcpcache.LinearCache
	mux    *gcpcache.MuxCache
}

func newLinearCaches(t *testing.T) *linearCaches {
	l := &linearCaches{byType: map[string]*gcpcache.LinearCache{}}
	caches := map[string]gcpcache.Cache{}
	for _, typeURL := range []string{gcpresource.ListenerType, gcpresource.RouteType, gcpresource.ClusterType, gcpresource.EndpointType} {
		lc := gcpcache.NewLinearCache(typeURL, gcpcache.WithLogger(gcplog.NewTestLogger(t)))
		l.byType[typeURL] = lc
		caches[typeURL] = lc
	}
	l.mux = &gcpcache.MuxCache{
		Classify:      func(r *gcpcache.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *gcpcache.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        caches,
	}
	return l
}
