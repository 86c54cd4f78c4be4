// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/recvlimit"
	"github.com/proxyless/xds/transport"
)

// streamInfo is what a stream learns besides its messages: whether the
// server's trailers (its status) arrived, and the size of the largest
// request sent, so that a codes.ResourceExhausted status can be told
// apart: the client's own receive limit (no trailers: gRPC ended the
// stream locally) or the server refusing a request.
type streamInfo struct {
	gotTrailers atomic.Bool  // set by statsHandler on stats.InTrailer
	maxSent     atomic.Int64 // bytes of the largest message sent
}

type streamInfoKey struct{}

// statsHandler marks the streamInfo in the stream's context when the
// server's trailers arrive. It is installed on every conn; other stats
// handlers given with WithDialOptions run as well.
type statsHandler struct{}

func (statsHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (statsHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InTrailer); !ok {
		return
	}
	if si, _ := ctx.Value(streamInfoKey{}).(*streamInfo); si != nil {
		si.gotTrailers.Store(true)
	}
}

func (statsHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (statsHandler) HandleConn(context.Context, stats.ConnStats) {}

// sizeError wraps a stream error caused by a size limit in
// transport.ErrMessageTooLarge, with a text naming the limit and the way
// to raise it (limit.Hint); other errors are returned as they are.
//
// A ResourceExhausted status that gRPC generated locally (no trailers
// from the server) is a response above maxRecv. One sent by the server
// is a refused request only if its message says so in the words of the
// gRPC implementations ("larger than max", "exceeds maximum size"); other
// ResourceExhausted statuses (quota, rate limits) are not size errors.
func sizeError(err error, si *streamInfo, limit recvlimit.Limit) error {
	if status.Code(err) != codes.ResourceExhausted {
		return err
	}
	if !si.gotTrailers.Load() {
		return fmt.Errorf("%w: a response exceeded the client's receive limit of %d bytes (%s): %w",
			transport.ErrMessageTooLarge, limit.Bytes, limit.Hint, err)
	}
	msg := strings.ToLower(status.Convert(err).Message())
	if strings.Contains(msg, "larger than max") || strings.Contains(msg, "exceeds maximum size") {
		return fmt.Errorf("%w: the management server refused a request as too large (largest request sent on the stream: %d bytes): %w",
			transport.ErrMessageTooLarge, si.maxSent.Load(), err)
	}
	return err
}
