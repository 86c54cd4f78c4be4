// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// channelHeader names, in the RPCs of side-by-side tests, the channel
// that sent them, so that one backend counts each channel's RPCs.
const channelHeader = "x-test-channel"

// flakyServer is a TestService whose UnaryCall fails with UNAVAILABLE,
// before any header, every other RPC (failOdd) or every RPC (failAll),
// and counts per channel (channelHeader) the RPCs it gets and the
// largest grpc-previous-rpc-attempts it sees.
type flakyServer struct {
	testgrpc.UnimplementedTestServiceServer
	id      string
	port    uint32
	failOdd bool
	failAll atomic.Bool

	mu      sync.Mutex
	calls   map[string]int64 // by channel
	maxPrev map[string]int64 // by channel
}

func (s *flakyServer) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ch := ""
	if v := md.Get(channelHeader); len(v) == 1 {
		ch = v[0]
	}
	s.mu.Lock()
	s.calls[ch]++
	n := s.calls[ch]
	if v := md.Get("grpc-previous-rpc-attempts"); len(v) == 1 {
		if p, err := strconv.ParseInt(v[0], 10, 64); err == nil && p > s.maxPrev[ch] {
			s.maxPrev[ch] = p
		}
	}
	s.mu.Unlock()
	if s.failAll.Load() || s.failOdd && n%2 == 1 {
		return nil, status.Error(codes.Unavailable, "failing on purpose")
	}
	return &testgrpc.SimpleResponse{ServerId: s.id}, nil
}

// counts returns the RPCs of channel ch and its largest
// grpc-previous-rpc-attempts.
func (s *flakyServer) counts(ch string) (calls, maxPrev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[ch], s.maxPrev[ch]
}

func startFlakyServer(t *testing.T, id string, failOdd, failAll bool) *flakyServer {
	t.Helper()
	s := &flakyServer{id: id, failOdd: failOdd, calls: map[string]int64{}, maxPrev: map[string]int64{}}
	s.failAll.Store(failAll)
	s.port = serveTestService(t, s)
	return s
}

// channelCtx returns ctx with the channel header of ch.
func channelCtx(ctx context.Context, ch channel) context.Context {
	return metadata.AppendToOutgoingContext(ctx, channelHeader, ch.name)
}
