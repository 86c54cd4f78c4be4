// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"

	v3lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// LRSServerOptions configures an LRSServer: the LoadStatsResponse it
// sends when a stream's first request arrives.
type LRSServerOptions struct {
	// Clusters are the clusters the server asks reports for.
	Clusters []string
	// SendAllClusters asks reports for every cluster.
	SendAllClusters bool
	// Interval is load_reporting_interval; 0 leaves it unset (the
	// client then uses its minimum, 1 s).
	Interval time.Duration
}

// LRSServer is an in-process Load Reporting Service on a real gRPC
// server on 127.0.0.1: it answers each stream's first request with the
// response of its options and records every LoadStatsRequest received.
// Its methods are safe for concurrent use.
type LRSServer struct {
	v3lrspb.UnimplementedLoadReportingServiceServer

	opts    LRSServerOptions
	address string
	server  *grpc.Server
	wg      sync.WaitGroup

	mu       sync.Mutex
	requests []*v3lrspb.LoadStatsRequest
	added    chan struct{} // closed and replaced when a request is recorded
	streams  map[*lrsStream]struct{}
}

type lrsStream struct {
	st   v3lrspb.LoadReportingService_StreamLoadStatsServer
	send chan *v3lrspb.LoadStatsResponse
}

// NewLRSServer starts an LRSServer, stopped when the test ends.
func NewLRSServer(tb testing.TB, opts LRSServerOptions) *LRSServer {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testutil: listening on 127.0.0.1: %v", err)
	}
	s := &LRSServer{opts: opts, address: lis.Addr().String(), server: grpc.NewServer(), added: make(chan struct{}), streams: make(map[*lrsStream]struct{})}
	v3lrspb.RegisterLoadReportingServiceServer(s.server, s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.server.Serve(lis) // returns on Stop
	}()
	tb.Cleanup(s.Stop)
	return s
}

// Address returns the server's "host:port".
func (s *LRSServer) Address() string { return s.address }

// Stop stops the server and waits for its goroutines. Idempotent.
func (s *LRSServer) Stop() {
	s.server.Stop()
	s.wg.Wait()
}

// TransportBuilder returns a transport.Builder whose transports reach this
// server whatever ServerConfig they are built for, so that a client's
// lrs_server "self" reports here.
func (s *LRSServer) TransportBuilder() transport.Builder {
	return lrsBuilder{b: grpctransport.NewBuilder(), sc: &bootstrap.ServerConfig{ServerURI: s.address, ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}}}
}

type lrsBuilder struct {
	b  transport.Builder
	sc *bootstrap.ServerConfig
}

func (l lrsBuilder) Build(_ *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	return l.b.Build(l.sc, o)
}

// Requests returns copies of the requests received so far, in order.
func (s *LRSServer) Requests() []*v3lrspb.LoadStatsRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v3lrspb.LoadStatsRequest, len(s.requests))
	for i, r := range s.requests {
		out[i] = proto.Clone(r).(*v3lrspb.LoadStatsRequest)
	}
	return out
}

// WaitForRequests waits until at least n requests were received, and
// returns them all; an error when ctx ends first.
func (s *LRSServer) WaitForRequests(ctx context.Context, n int) ([]*v3lrspb.LoadStatsRequest, error) {
	for {
		s.mu.Lock()
		got, added := len(s.requests), s.added
		s.mu.Unlock()
		if got >= n {
			return s.Requests(), nil
		}
		select {
		case <-added:
		case <-ctx.Done():
			return nil, fmt.Errorf("testutil: %d LRS requests received, want %d: %w", got, n, ctx.Err())
		}
	}
}

// Respond sends resp on every open stream: a new cluster list or
// interval.
func (s *LRSServer) Respond(resp *v3lrspb.LoadStatsResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		select {
		case st.send <- resp:
		default: // the stream is not keeping up; tests send few responses
		}
	}
}

// StreamLoadStats implements the LRS service.
func (s *LRSServer) StreamLoadStats(st v3lrspb.LoadReportingService_StreamLoadStatsServer) error {
	ls := &lrsStream{st: st, send: make(chan *v3lrspb.LoadStatsResponse, 16)}
	first := true
	recvErr := make(chan error, 1)
	reqs := make(chan *v3lrspb.LoadStatsRequest)
	go func() {
		for {
			req, err := st.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- req:
			case <-st.Context().Done():
				return
			}
		}
	}()
	defer func() {
		s.mu.Lock()
		delete(s.streams, ls)
		s.mu.Unlock()
	}()
	for {
		select {
		case req := <-reqs:
			s.mu.Lock()
			s.requests = append(s.requests, req)
			close(s.added)
			s.added = make(chan struct{})
			if first {
				s.streams[ls] = struct{}{}
			}
			s.mu.Unlock()
			if first {
				first = false
				resp := &v3lrspb.LoadStatsResponse{Clusters: s.opts.Clusters, SendAllClusters: s.opts.SendAllClusters}
				if s.opts.Interval > 0 {
					resp.LoadReportingInterval = durationpb.New(s.opts.Interval)
				}
				if err := st.Send(resp); err != nil {
					return err
				}
			}
		case resp := <-ls.send:
			if err := st.Send(resp); err != nil {
				return err
			}
		case err := <-recvErr:
			return err
		case <-st.Context().Done():
			return st.Context().Err()
		}
	}
}
