// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"

	v3adsgrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// InMemoryAddress is what Address returns for a server started with
// Options.InMemory.
const InMemoryAddress = "in-memory"

// Options configures a Server. The zero value is a gRPC server on a free
// port of 127.0.0.1 that answers from snapshots.
type Options struct {
	// ListenAddress is the "host:port" the gRPC server listens on.
	// Default "127.0.0.1:0": a free port of the loopback interface. The
	// server has no authentication and sends the whole snapshot to any
	// client: listen on other interfaces only on a network you trust.
	ListenAddress string

	// InMemory starts no network listener: the server is reachable only
	// through TransportBuilder, and Address returns InMemoryAddress. Such a
	// server can run inside a testing/synctest bubble, provided it is
	// created there (Start called in the bubble) and its streams are opened
	// there.
	InMemory bool

	// Manual makes the server never answer from snapshots: every response
	// is scripted with SendResponse. Requests are still recorded.
	Manual bool

	// OnRequest, when set, is given every request instead of the log:
	// Requests, NextRequest and WaitForRequest then see none, and the
	// server keeps no request once it has acted on it. It is called on the
	// stream's handler goroutine before the server acts on the request,
	// with no lock held, and must not block; r must not be modified. The
	// log keeps every request for the server's life: a long-running
	// program (a demo, a tool) that does not read it sets OnRequest, to a
	// function that does nothing if need be, and so do measurements that
	// must not count the log's memory.
	OnRequest func(r *Request)

	// WrapResources wraps each resource of snapshot responses in an
	// envoy.service.discovery.v3.Resource {name, version, resource}, the
	// version being the snapshot's version_info. Scripted responses
	// (SendResponse) are sent as given.
	WrapResources bool

	// LoadReporting, when not nil, is also served on the server's gRPC
	// listener (not InMemory), so that load reports can share the ADS
	// connection; for example a *LRSServer.
	LoadReporting v3lrspb.LoadReportingServiceServer
}

// Server is an in-process xDS management server serving the aggregated
// discovery service (ADS,
// envoy.service.discovery.v3.AggregatedDiscoveryService), both
// StreamAggregatedResources (SotW) and DeltaAggregatedResources (delta,
// see the package doc), and the per-type discovery services, from the
// same snapshots, over gRPC or in memory (Options.InMemory); RESTHandler
// serves them over REST-JSON.
//
// It answers from per-node snapshots set with Update (see Update for the
// rules), records every request (Requests, NextRequest, WaitForRequest),
// and lets a caller script raw responses (SendResponse,
// SendDeltaResponse), break streams (BreakStreams) and refuse new ones
// (RejectStreams).
//
// All methods are safe for concurrent use.
type Server struct {
	// Initialized at creation time and read-only afterwards.
	opts       Options
	address    string         // Address(): "127.0.0.1:PORT" or InMemoryAddress
	grpcServer *grpc.Server   // nil when opts.InMemory
	stopped    chan struct{}  // closed by Stop, before waiting for goroutines
	stopOnce   sync.Once      // runs the body of Stop once
	wg         sync.WaitGroup // every goroutine and handler the server runs; Add through enter, or from a counted goroutine

	// Accessed atomically.
	lastNonce atomic.Int64 // last nonce handed out; nonces are unique server-wide

	// Guarded by mu. mu is never held while blocking, and never held while
	// calling user code or a stream's Send. Lock order: inMemoryTransport.mu,
	// then mu, then a stream's streamCore.sendMu.
	mu             sync.Mutex
	isStopped      bool                   // Stop was called; enter refuses
	rejectErr      error                  // RejectStreams; nil accepts new streams
	lastStreamID   int64                  // ID of the last accepted stream
	streams        map[int64]*sotwStream  // open SotW streams: accepted, not broken, not ended
	deltaStreams   map[int64]*deltaStream // open delta streams, likewise
	streamOpened   chan struct{}          // closed and replaced when a stream is added to streams
	streamClosed   chan struct{}          // closed and replaced when a stream's handler ends
	versionCounter int64                  // incremented by every Update
	snapshots      map[string]*snapshot   // node ID ("" = default) → snapshot
	requests       []*Request             // every request, in arrival order
	consumed       int                    // requests[:consumed] were returned by NextRequest
	requestAdded   chan struct{}          // closed and replaced when a request is recorded
}

// Start starts a management server: a gRPC server listening on
// opts.ListenAddress (a free port of 127.0.0.1 by default), or an
// in-memory one when opts.InMemory. It has no snapshot yet, so it answers
// no request until Update gives it one. The caller must call Stop, which
// waits for every goroutine the server started. Start returns an error
// when the listener cannot be created.
func Start(opts Options) (*Server, error) {
	ms := &Server{
		opts:         opts,
		address:      InMemoryAddress,
		stopped:      make(chan struct{}),
		streams:      make(map[int64]*sotwStream),
		deltaStreams: make(map[int64]*deltaStream),
		streamOpened: make(chan struct{}),
		streamClosed: make(chan struct{}),
		snapshots:    make(map[string]*snapshot),
		requestAdded: make(chan struct{}),
	}
	if opts.InMemory {
		return ms, nil
	}
	addr := opts.ListenAddress
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mgmtserver: listening on %s: %w", addr, err)
	}
	ms.address = lis.Addr().String()
	ms.grpcServer = grpc.NewServer()
	ads := &adsService{ms: ms}
	v3adsgrpc.RegisterAggregatedDiscoveryServiceServer(ms.grpcServer, ads)
	registerPerTypeServices(ms.grpcServer, ads)
	if opts.LoadReporting != nil {
		v3lrspb.RegisterLoadReportingServiceServer(ms.grpcServer, opts.LoadReporting)
	}
	ms.enter() // cannot fail: nothing can have stopped ms yet
	go func() {
		defer ms.wg.Done()
		// Serve returns when Stop stops the gRPC server; its error then
		// says nothing useful.
		_ = ms.grpcServer.Serve(lis)
	}()
	return ms, nil
}

// Stop ends every stream, stops the listener and waits until every
// goroutine the server started has returned. Streams end with
// codes.Unavailable. Stop is idempotent; a second call returns once the
// first has finished. After Stop, in-memory NewStream fails and
// SendResponse returns an error; Update and the request accessors keep
// working.
func (ms *Server) Stop() {
	ms.stopOnce.Do(func() {
		ms.mu.Lock()
		ms.isStopped = true
		ms.mu.Unlock()
		close(ms.stopped)
		if ms.grpcServer != nil {
			// Stop (not GracefulStop) closes the connections, which also
			// unblocks a handler's Send that waits on flow control because
			// its client stopped reading.
			ms.grpcServer.Stop()
		}
		ms.wg.Wait()
	})
}

// enter counts a goroutine or stream handler in ms.wg, unless Stop was
// called, in which case it returns false and counts nothing. A true result
// must be matched by ms.wg.Done.
func (ms *Server) enter() bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.isStopped {
		return false
	}
	ms.wg.Add(1)
	return true
}

// errStopped is the status of streams ended by Stop.
var errStopped = status.Error(codes.Unavailable, "mgmtserver: management server stopped")

// Address returns the address clients dial: the listener's "host:port"
// (for example "127.0.0.1:PORT") for a gRPC server, InMemoryAddress
// ("in-memory") for an in-memory one.
func (ms *Server) Address() string { return ms.address }

// TransportBuilder returns the transport.Builder clients of this server
// should use: for an in-memory server, an in-process transport that
// ignores the ServerConfig it is given and always reaches this server (see
// the package doc, "In-memory transport"); otherwise
// grpctransport.NewBuilder().
func (ms *Server) TransportBuilder() transport.Builder {
	if ms.opts.InMemory {
		return &inMemoryBuilder{ms: ms}
	}
	return grpctransport.NewBuilder()
}

// Dialer returns the transport.Dialer of the byte-level transports of
// this server, which TransportBuilder speaks ADS over: the in-process
// transport of an in-memory server, otherwise grpctransport.NewBuilder().
// Use it for per-type streams (pertype.NewBuilder(ms.Dialer())) or to
// wrap the serialized messages of a test.
func (ms *Server) Dialer() transport.Dialer {
	if ms.opts.InMemory {
		return &inMemoryBuilder{ms: ms}
	}
	return grpctransport.NewBuilder()
}

// BreakStreams ends every open stream with codes.Unavailable, as a server
// restart would. The streams no longer count in OpenStreams and no longer
// receive SendResponse's responses once BreakStreams returns; their
// handlers finish asynchronously. A gRPC stream whose client stopped
// reading while the server had a response to send ends only when the
// client reads, goes away or Stop is called.
func (ms *Server) BreakStreams() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for id, s := range ms.streams {
		close(s.broken)
		delete(ms.streams, id)
	}
	for id, s := range ms.deltaStreams {
		close(s.broken)
		delete(ms.deltaStreams, id)
	}
}

// RejectStreams makes every new stream fail at once, before any response,
// with codes.Unavailable and err's message, while err is not nil. Such
// streams get no stream ID and their requests are not recorded. The
// client's NewStream may still succeed: its first Recv fails. Open streams
// are not affected (see BreakStreams). RejectStreams(nil) accepts streams
// again.
func (ms *Server) RejectStreams(err error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.rejectErr = err
}

// OpenStreams returns the number of open streams: accepted, and neither
// ended nor broken by BreakStreams.
func (ms *Server) OpenStreams() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.streams) + len(ms.deltaStreams)
}

// WaitForOpenStreams blocks until exactly n streams are open (see
// OpenStreams), for example 0 once a client closed its stream. It returns
// an error wrapping ctx.Err() if ctx ends first.
func (ms *Server) WaitForOpenStreams(ctx context.Context, n int) error {
	for {
		ms.mu.Lock()
		got, opened, closed := len(ms.streams)+len(ms.deltaStreams), ms.streamOpened, ms.streamClosed
		ms.mu.Unlock()
		if got == n {
			return nil
		}
		select {
		case <-opened:
		case <-closed:
		case <-ctx.Done():
			return fmt.Errorf("mgmtserver: waiting for %d open streams (%d open): %w", n, got, ctx.Err())
		}
	}
}

// nextNonce returns a nonce no other response of this server carries.
func (ms *Server) nextNonce() string {
	return fmt.Sprint(ms.lastNonce.Add(1))
}

// adsService adapts the gRPC ADS service to the shared stream handler.
type adsService struct {
	v3adsgrpc.UnimplementedAggregatedDiscoveryServiceServer

	ms *Server
}

func (a *adsService) StreamAggregatedResources(st v3adsgrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	if !a.ms.enter() {
		return errStopped
	}
	defer a.ms.wg.Done()
	return a.ms.serveSotW(st)
}

func (a *adsService) DeltaAggregatedResources(st v3adsgrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	if !a.ms.enter() {
		return errStopped
	}
	defer a.ms.wg.Done()
	return a.ms.serveDelta(st)
}

// errServerStopped is returned by SendResponse after Stop.
var errServerStopped = errors.New("mgmtserver: management server stopped")
