// SPDX-License-Identifier: Apache-2.0

package rpcretry

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// NewStreamFunc creates the stream of one attempt, with the attempt's
// context and call options.
type NewStreamFunc func(ctx context.Context, opts []grpc.CallOption) (grpc.ClientStream, error)

// Stream creates a streaming RPC with newStream, one stream per attempt,
// and returns a stream that retries it (gRFC A6) until it is committed:
// when response headers or a message came, when what it sent exceeds the
// retry buffer (grpc.MaxRetryRPCBufferSize in opts, else 256 KiB; a
// message that is not a protobuf message counts as exceeding it), or when
// an attempt is not to be retried. A failed attempt is replaced by a new
// stream to which everything sent so far, and CloseSend, are replayed.
// dropped is as for Unary. committed, if not nil, is called once, when
// the RPC is committed: no attempt will be made after the current one
// (also when Stream fails). The returned stream follows
// grpc.ClientStream's rules: one goroutine may send while another
// receives.
func (p *Policy) Stream(ctx context.Context, opts []grpc.CallOption, newStream NewStreamFunc, dropped func() bool, committed func()) (grpc.ClientStream, error) {
	s := &stream{
		c:         call{p: p, ctx: ctx},
		opts:      opts[:len(opts):len(opts)],
		newStream: newStream,
		dropped:   dropped,
		limit:     bufferLimit(opts),
		onCommit:  committed,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startLocked(); err != nil {
		s.commitLocked()
		return nil, err
	}
	return s, nil
}

// stream is a grpc.ClientStream that retries its RPC until committed.
//
// Only the receiving side (RecvMsg, Header) retries: a send to an
// attempt that ended is kept for the replay and reported as sent, as
// grpc's own retries do, and the receiving side, which the application
// calls to learn how the RPC ended, finds the failure and makes the next
// attempt. So no two calls of RecvMsg, which gRPC forbids, overlap on an
// attempt.
type stream struct {
	newStream NewStreamFunc
	opts      []grpc.CallOption
	dropped   func() bool
	limit     int
	onCommit  func() // called by the first commitLocked; nil for none

	// recvMu serialises RecvMsg and Header until the RPC is committed.
	recvMu sync.Mutex

	// mu guards the fields below, and is held while an attempt is
	// started (its backoff, its replay) and while a message is sent, so
	// that sending and replaying are ordered.
	mu        sync.Mutex
	c         call
	cur       grpc.ClientStream // the current attempt
	gen       int               // the number of cur's attempt
	ended     bool              // a send found cur's attempt over
	committed bool
	sent      []any // what was sent, for replay; nil once committed
	size      int   // the bytes of sent
	closeSent bool
}

// startLocked starts attempts until one is started and its replay
// succeeds, or the RPC ends with the returned error.
func (s *stream) startLocked() error {
	for {
		ctx := s.c.attemptContext()
		s.c.attempts++
		cs, err := s.newStream(ctx, s.opts)
		if err != nil {
			// grpc's NewStream fails when the pick fails: nothing was
			// sent, there is no header or trailer.
			if rerr := s.c.retry(err, nil, s.dropped != nil && s.dropped()); rerr != nil {
				return rerr
			}
			continue
		}
		s.cur, s.gen, s.ended = cs, s.gen+1, false
		s.replayLocked()
		return nil
	}
}

// replayLocked sends what was sent to the current attempt; an attempt
// that ends meanwhile is found by the receiving side.
func (s *stream) replayLocked() {
	for _, m := range s.sent {
		if err := s.cur.SendMsg(m); err != nil {
			s.ended = true
			return
		}
	}
	if s.closeSent {
		s.cur.CloseSend()
	}
}

func (s *stream) commitLocked() {
	if !s.committed && s.onCommit != nil {
		defer s.onCommit()
	}
	s.committed, s.sent, s.size = true, nil, 0
}

// current returns the current attempt and its number, and whether the
// RPC is committed.
func (s *stream) current() (grpc.ClientStream, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.gen, s.committed
}

// failed handles the end of attempt gen, the current one, whose RecvMsg
// returned err (which is not nil). It returns true when the RPC goes on
// with a new attempt; false when it ends, with the error to return
// (err, or the context's status when it ended during the backoff).
func (s *stream) failed(gen int, err error) (again bool, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen || s.committed {
		return false, err
	}
	if errors.Is(err, io.EOF) {
		s.commitLocked() // it ended with OK
		return false, err
	}
	// The attempt is over: Header returns at once, nil when no header
	// came (trailers only, or a failure before the response).
	if md, _ := s.cur.Header(); md != nil {
		s.commitLocked()
		return false, err
	}
	rerr := s.c.retry(err, s.cur.Trailer(), s.dropped != nil && s.dropped())
	if rerr == nil {
		rerr = s.startLocked()
	}
	if rerr != nil {
		s.commitLocked()
		s.cur = failedStream{ClientStream: s.cur, err: rerr}
		return false, rerr
	}
	return true, nil
}

func (s *stream) SendMsg(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.committed {
		if pm, ok := m.(proto.Message); !ok {
			s.commitLocked()
		} else if s.size += proto.Size(pm); s.size > s.limit {
			s.commitLocked()
		} else {
			s.sent = append(s.sent, m)
		}
	}
	if s.committed {
		return s.cur.SendMsg(m)
	}
	if s.ended {
		return nil // kept for the next attempt
	}
	if err := s.cur.SendMsg(m); err != nil {
		// The attempt ended (io.EOF); the message is kept for the next
		// one, if the receiving side makes one.
		s.ended = true
	}
	return nil
}

func (s *stream) CloseSend() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeSent = true
	if s.ended && !s.committed {
		return nil
	}
	return s.cur.CloseSend()
}

func (s *stream) RecvMsg(m any) error {
	if cur, _, committed := s.current(); committed {
		return cur.RecvMsg(m)
	}
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	for {
		cur, gen, committed := s.current()
		err := cur.RecvMsg(m)
		if committed {
			return err
		}
		if err == nil {
			s.mu.Lock()
			if gen == s.gen {
				s.commitLocked() // a message came, so did the headers
			}
			s.mu.Unlock()
			return nil
		}
		again, ferr := s.failed(gen, err)
		if !again {
			return ferr
		}
	}
}

func (s *stream) Header() (metadata.MD, error) {
	if cur, _, committed := s.current(); committed {
		return cur.Header()
	}
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	for {
		cur, gen, committed := s.current()
		md, err := cur.Header()
		if committed || md != nil {
			s.mu.Lock()
			if md != nil && gen == s.gen {
				s.commitLocked()
			}
			s.mu.Unlock()
			return md, err
		}
		// No header: the attempt is over, and RecvMsg (no message can
		// come without headers) gives its status. If it is retried, the
		// new attempt's headers are the stream's.
		rerr := cur.RecvMsg(new(struct{}))
		if rerr == nil {
			rerr = io.EOF // cannot happen: a message without headers
		}
		if again, _ := s.failed(gen, rerr); !again {
			// As grpc's Header: the error is left to RecvMsg, which
			// returns it (the attempt, or failedStream, keeps it).
			return nil, nil
		}
	}
}

func (s *stream) Trailer() metadata.MD {
	cur, _, _ := s.current()
	return cur.Trailer()
}

func (s *stream) Context() context.Context {
	cur, _, _ := s.current()
	return cur.Context()
}

// failedStream is an attempt whose RPC ended with err, the status the
// retries decided on (a context's status while waiting to retry).
type failedStream struct {
	grpc.ClientStream
	err error
}

func (f failedStream) RecvMsg(any) error { return f.err }
func (f failedStream) SendMsg(any) error { return io.EOF }
