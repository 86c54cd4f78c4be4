// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"context"
	"fmt"
	"net"
	"sync"
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

// LRSServer is an in-process Load Reporting Service on a gRPC
// server of its own on 127.0.0.1 (and, with Options.LoadReporting, on a
// Server's listener too): it answers each stream's first request with the
// response of its options, records every LoadStatsRequest received and
// sends more responses with Respond. Its methods are safe for concurrent
// use.
type LRSServer struct {
	v3lrspb.UnimplementedLoadReportingServiceServer

	opts    LRSServerOptions
	address string
	server  *grpc.Server
	wg      sync.WaitGroup // Serve and every stream's receiver

	mu       sync.Mutex
	requests []*v3lrspb.LoadStatsRequest
	added    chan struct{} // closed and replaced when a request is recorded
	streams  map[*lrsStream]struct{}
}

type lrsStream struct {
	st   v3lrspb.LoadReportingService_StreamLoadStatsServer
	send chan *v3lrspb.LoadStatsResponse
}

// StartLRSServer starts an LRSServer on a free port of 127.0.0.1. The
// caller must call Stop. It returns an error when the listener cannot be
// created.
func StartLRSServer(opts LRSServerOptions) (*LRSServer, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mgmtserver: LRS server: listening on 127.0.0.1: %w", err)
	}
	s := &LRSServer{opts: opts, address: lis.Addr().String(), server: grpc.NewServer(), added: make(chan struct{}), streams: make(map[*lrsStream]struct{})}
	v3lrspb.RegisterLoadReportingServiceServer(s.server, s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.server.Serve(lis) // returns on Stop
	}()
	return s, nil
}

// Address returns the server's "host:port".
func (s *LRSServer) Address() string { return s.address }

// Stop stops the server and waits for its goroutines, the receivers of
// the streams it served on another server's listener
// (Options.LoadReporting) included: stop that server first. Stop is
// idempotent.
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
			return nil, fmt.Errorf("mgmtserver: %d LRS requests received, want %d: %w", got, n, ctx.Err())
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
		default: // the stream is not keeping up: Respond drops the response (the channel holds 16)
		}
	}
}

// StreamLoadStats implements the LRS service.
func (s *LRSServer) StreamLoadStats(st v3lrspb.LoadReportingService_StreamLoadStatsServer) error {
	ls := &lrsStream{st: st, send: make(chan *v3lrspb.LoadStatsResponse, 16)}
	first := true
	recvErr := make(chan error, 1)
	reqs := make(chan *v3lrspb.LoadStatsRequest)
	// The receiver ends when the stream does, after this handler returns
	// (gRPC's Recv returns only then); Stop waits for it.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
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
