// SPDX-License-Identifier: Apache-2.0

package rpcretry

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// policy is num_retries retries of UNAVAILABLE, with the default
// backoff of A44 (25 ms, at most 250 ms).
func policy(numRetries uint32) *Policy {
	return NewPolicy(&resources.RetryPolicy{
		RetryOn:      []codes.Code{codes.Unavailable},
		NumRetries:   numRetries,
		BaseInterval: 25 * time.Millisecond,
		MaxInterval:  250 * time.Millisecond,
	})
}

func TestNewPolicy(t *testing.T) {
	if NewPolicy(nil) != nil || NewPolicy(&resources.RetryPolicy{NumRetries: 3}) != nil {
		t.Error("NewPolicy without codes is not nil")
	}
	p := NewPolicy(&resources.RetryPolicy{RetryOn: []codes.Code{codes.Internal, codes.Unavailable}, NumRetries: 10, BaseInterval: time.Microsecond, MaxInterval: 0})
	if p.maxAttempts != 5 || p.initialBackoff != time.Millisecond || p.maxBackoff != time.Millisecond {
		t.Errorf("NewPolicy = %+v, want 5 attempts and 1 ms backoffs (gRFC A44)", p)
	}
	if !p.retries(codes.Internal) || !p.retries(codes.Unavailable) || p.retries(codes.Unknown) {
		t.Errorf("NewPolicy codes = %b", p.codes)
	}
	p = NewPolicy(&resources.RetryPolicy{RetryOn: []codes.Code{codes.Unavailable}, NumRetries: 2, BaseInterval: 100 * time.Millisecond, MaxInterval: 300 * time.Millisecond})
	if p.maxAttempts != 3 || p.initialBackoff != 100*time.Millisecond || p.maxBackoff != 300*time.Millisecond {
		t.Errorf("NewPolicy = %+v, want 3 attempts, backoff from 100ms up to 300ms", p)
	}
}

// outcome is what an attempt does.
type outcome struct {
	code     codes.Code // its status; OK for success
	headers  bool       // response headers came (before the status)
	pushback []string   // grpc-retry-pushback-ms in the trailer
	sendEOF  bool       // sends fail as on a stream that ended
	dropped  bool       // the pick failed with a status
	replies  int        // messages received before the status (streams)
}

func (o outcome) err() error {
	if o.code == codes.OK {
		return nil
	}
	return status.Errorf(o.code, "attempt failed with %v", o.code)
}

func (o outcome) trailer() metadata.MD {
	if o.pushback == nil {
		return metadata.MD{}
	}
	return metadata.MD{pushbackKey: o.pushback}
}

// script plays the outcomes in order and records each attempt.
type script struct {
	t        *testing.T
	outcomes []outcome
	mu       sync.Mutex
	starts   []time.Duration // when each attempt started, since the script's start
	previous []string        // grpc-previous-rpc-attempts of each attempt
	begin    time.Time
	last     outcome
}

func newScript(t *testing.T, outcomes ...outcome) *script {
	return &script{t: t, outcomes: outcomes, begin: time.Now()}
}

func (s *script) next(ctx context.Context) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.starts) >= len(s.outcomes) {
		s.t.Fatalf("attempt %d, the script has %d", len(s.starts)+1, len(s.outcomes))
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	s.previous = append(s.previous, strings.Join(md.Get(previousAttemptsKey), ","))
	s.starts = append(s.starts, time.Since(s.begin))
	s.last = s.outcomes[len(s.starts)-1]
	return s.last
}

func (s *script) dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.dropped
}

// invoke is a unary invoker playing the script.
func (s *script) invoke(ctx context.Context, opts []grpc.CallOption) error {
	o := s.next(ctx)
	for _, opt := range opts {
		switch opt := opt.(type) {
		case grpc.HeaderCallOption:
			if o.headers {
				*opt.HeaderAddr = metadata.MD{}
			}
		case grpc.TrailerCallOption:
			*opt.TrailerAddr = o.trailer()
		}
	}
	return o.err()
}

func TestUnary(t *testing.T) {
	unavailable := outcome{code: codes.Unavailable}
	tests := []struct {
		name         string
		policy       *Policy
		outcomes     []outcome
		wantCode     codes.Code
		wantPrevious []string
	}{
		{name: "success at once", policy: policy(2), outcomes: []outcome{{}}, wantPrevious: []string{""}},
		{name: "retried until success", policy: policy(2), outcomes: []outcome{unavailable, unavailable, {}}, wantPrevious: []string{"", "1", "2"}},
		{name: "attempts exhausted", policy: policy(1), outcomes: []outcome{unavailable, unavailable}, wantCode: codes.Unavailable, wantPrevious: []string{"", "1"}},
		{name: "at most five attempts", policy: policy(9), outcomes: []outcome{unavailable, unavailable, unavailable, unavailable, unavailable}, wantCode: codes.Unavailable, wantPrevious: []string{"", "1", "2", "3", "4"}},
		{name: "code not retried", policy: policy(2), outcomes: []outcome{{code: codes.Internal}}, wantCode: codes.Internal, wantPrevious: []string{""}},
		{name: "not after response headers", policy: policy(2), outcomes: []outcome{{code: codes.Unavailable, headers: true}}, wantCode: codes.Unavailable, wantPrevious: []string{""}},
		{name: "not after a drop", policy: policy(2), outcomes: []outcome{{code: codes.Unavailable, dropped: true}}, wantCode: codes.Unavailable, wantPrevious: []string{""}},
		{name: "pushback", policy: policy(2), outcomes: []outcome{{code: codes.Unavailable, pushback: []string{"300"}}, {}}, wantPrevious: []string{"", "1"}},
		{name: "negative pushback stops", policy: policy(2), outcomes: []outcome{{code: codes.Unavailable, pushback: []string{"-1"}}}, wantCode: codes.Unavailable, wantPrevious: []string{""}},
		{name: "invalid pushback stops", policy: policy(2), outcomes: []outcome{{code: codes.Unavailable, pushback: []string{"soon"}}}, wantCode: codes.Unavailable, wantPrevious: []string{""}},
		{name: "two pushbacks stop", policy: policy(2), outcomes: []outcome{{code: codes.Unavailable, pushback: []string{"1", "2"}}}, wantCode: codes.Unavailable, wantPrevious: []string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScript(t, tc.outcomes...)
				err := tc.policy.Unary(t.Context(), nil, s.invoke, s.dropped)
				if status.Code(err) != tc.wantCode {
					t.Fatalf("Unary() = %v, want code %v", err, tc.wantCode)
				}
				if !slices.Equal(s.previous, tc.wantPrevious) {
					t.Errorf("grpc-previous-rpc-attempts of the attempts = %q, want %q", s.previous, tc.wantPrevious)
				}
				checkBackoffs(t, s, tc.outcomes)
			})
		})
	}
}

// checkBackoffs checks the waits between attempts: the pushback exactly,
// else a random wait below min(25 ms × 2^n, 250 ms), n the retries since
// the last pushback (gRFC A6).
func checkBackoffs(t *testing.T, s *script, outcomes []outcome) {
	t.Helper()
	n := 0
	for i := 1; i < len(s.starts); i++ {
		wait := s.starts[i] - s.starts[i-1]
		if ps := outcomes[i-1].pushback; ps != nil {
			if want := 300 * time.Millisecond; wait != want {
				t.Errorf("wait before attempt %d = %v, want the pushback %v", i+1, wait, want)
			}
			n = 0
			continue
		}
		if limit := min(25*time.Millisecond<<n, 250*time.Millisecond); wait > limit {
			t.Errorf("wait before attempt %d = %v, want at most %v", i+1, wait, limit)
		}
		n++
	}
}

// TestUnary_Backoff checks retry_back_off (gRFC A44 as A6 applies it):
// the wait before retry n (from 0) is uniform in [0, min(base × 2^n,
// max)], so over many RPCs its mean is half of that bound and none
// exceeds it. A backoff of 0, one that does not grow, or one not capped
// at max_interval fails.
func TestUnary_Backoff(t *testing.T) {
	const rpcs = 400
	p := NewPolicy(&resources.RetryPolicy{
		RetryOn:      []codes.Code{codes.Unavailable},
		NumRetries:   4,
		BaseInterval: 100 * time.Millisecond,
		MaxInterval:  300 * time.Millisecond,
	})
	bounds := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
	sums := make([]time.Duration, len(bounds))
	synctest.Test(t, func(t *testing.T) {
		unavailable := outcome{code: codes.Unavailable}
		for range rpcs {
			s := newScript(t, unavailable, unavailable, unavailable, unavailable, unavailable)
			if err := p.Unary(t.Context(), nil, s.invoke, s.dropped); status.Code(err) != codes.Unavailable {
				t.Fatalf("Unary() = %v, want UNAVAILABLE", err)
			}
			if len(s.starts) != 5 {
				t.Fatalf("%d attempts, want 5", len(s.starts))
			}
			for n := range bounds {
				wait := s.starts[n+1] - s.starts[n]
				if wait > bounds[n] {
					t.Fatalf("wait before retry %d = %v, want at most %v", n+1, wait, bounds[n])
				}
				sums[n] += wait
			}
		}
	})
	for n, bound := range bounds {
		// The mean of 400 uniform draws in [0, b] is b/2 within ±0.1 b
		// (seven standard deviations).
		if mean := sums[n] / rpcs; mean < bound*4/10 || mean > bound*6/10 {
			t.Errorf("mean wait before retry %d = %v, want about %v (uniform up to %v)", n+1, mean, bound/2, bound)
		}
	}
}

// TestUnary_ContextEnds checks that an RPC whose context ends while it
// waits to retry ends at once with the context's status.
func TestUnary_ContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		s := newScript(t, outcome{code: codes.Unavailable, pushback: []string{"10000"}})
		start := time.Now()
		err := policy(2).Unary(ctx, nil, s.invoke, s.dropped)
		if status.Code(err) != codes.DeadlineExceeded || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("Unary() = %v after %v, want DEADLINE_EXCEEDED after 100ms", err, time.Since(start))
		}
	})
}

// fakeStream is an attempt's stream playing an outcome.
type fakeStream struct {
	grpc.ClientStream
	o        outcome
	ctx      context.Context
	mu       sync.Mutex
	sent     []string
	closed   bool
	received int
}

func (f *fakeStream) SendMsg(m any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.o.sendEOF {
		return io.EOF
	}
	f.sent = append(f.sent, m.(*wrapperspb.StringValue).GetValue())
	return nil
}

func (f *fakeStream) CloseSend() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeStream) RecvMsg(m any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.received < f.o.replies {
		f.received++
		if sv, ok := m.(*wrapperspb.StringValue); ok {
			sv.Value = "reply"
		}
		return nil
	}
	if err := f.o.err(); err != nil {
		return err
	}
	return io.EOF
}

func (f *fakeStream) Header() (metadata.MD, error) {
	if f.o.headers || f.o.replies > 0 {
		return metadata.MD{"h": {"v"}}, nil
	}
	return nil, nil
}

func (f *fakeStream) Trailer() metadata.MD     { return f.o.trailer() }
func (f *fakeStream) Context() context.Context { return f.ctx }

// streams plays a script as streams, keeping each attempt's stream.
type streams struct {
	*script
	all []*fakeStream
}

func (ss *streams) newStream(ctx context.Context, _ []grpc.CallOption) (grpc.ClientStream, error) {
	o := ss.next(ctx)
	if o.dropped {
		return nil, o.err()
	}
	f := &fakeStream{o: o, ctx: ctx}
	ss.all = append(ss.all, f)
	return f, nil
}

func sv(s string) *wrapperspb.StringValue { return wrapperspb.String(s) }

// TestStream_ReplaysToNewAttempts checks a client-streaming RPC: the
// messages and CloseSend of a failed attempt are replayed to the next
// one, also when sends found the attempt over.
func TestStream_ReplaysToNewAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := &streams{script: newScript(t, outcome{code: codes.Unavailable, sendEOF: true}, outcome{code: codes.Unavailable}, outcome{replies: 1})}
		s, err := policy(3).Stream(t.Context(), nil, ss.newStream, ss.dropped, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"a", "b", "c"} {
			if err := s.SendMsg(sv(m)); err != nil {
				t.Fatalf("SendMsg(%s) = %v, want nil (kept for the next attempt)", m, err)
			}
		}
		s.CloseSend()
		got := new(wrapperspb.StringValue)
		if err := s.RecvMsg(got); err != nil || got.GetValue() != "reply" {
			t.Fatalf("RecvMsg() = %v, %q; want the reply", err, got.GetValue())
		}
		if err := s.RecvMsg(got); err != io.EOF {
			t.Fatalf("second RecvMsg() = %v, want io.EOF", err)
		}
		if len(ss.all) != 3 {
			t.Fatalf("%d attempts, want 3", len(ss.all))
		}
		for i, f := range ss.all[1:] {
			if !slices.Equal(f.sent, []string{"a", "b", "c"}) || !f.closed {
				t.Errorf("attempt %d got %q, CloseSend %v; want a, b, c and CloseSend", i+2, f.sent, f.closed)
			}
		}
		if !slices.Equal(ss.previous, []string{"", "1", "2"}) {
			t.Errorf("grpc-previous-rpc-attempts = %q", ss.previous)
		}
	})
}

// TestStream_Commit checks what ends the retries of a stream: response
// headers, a message, a buffer over the limit, a code not retried, a
// drop at NewStream.
func TestStream_Commit(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []outcome
		opts     []grpc.CallOption
		send     []string
		wantCode codes.Code
		wantN    int // attempts
	}{
		{name: "headers", outcomes: []outcome{{code: codes.Unavailable, headers: true}}, wantCode: codes.Unavailable, wantN: 1},
		{name: "a message", outcomes: []outcome{{code: codes.Unavailable, replies: 1}}, wantCode: codes.Unavailable, wantN: 1},
		{name: "buffer over the limit", outcomes: []outcome{{code: codes.Unavailable}}, opts: []grpc.CallOption{grpc.MaxRetryRPCBufferSize(3)}, send: []string{"abcd"}, wantCode: codes.Unavailable, wantN: 1},
		{name: "buffer within the limit", outcomes: []outcome{{code: codes.Unavailable}, {}}, opts: []grpc.CallOption{grpc.MaxRetryRPCBufferSize(100)}, send: []string{"abcd"}, wantN: 2},
		{name: "code not retried", outcomes: []outcome{{code: codes.Internal}}, wantCode: codes.Internal, wantN: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := &streams{script: newScript(t, tc.outcomes...)}
				s, err := policy(3).Stream(t.Context(), tc.opts, ss.newStream, ss.dropped, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range tc.send {
					s.SendMsg(sv(m))
				}
				s.CloseSend()
				var rerr error
				for rerr == nil {
					rerr = s.RecvMsg(new(wrapperspb.StringValue))
				}
				if rerr == io.EOF {
					rerr = nil
				}
				if status.Code(rerr) != tc.wantCode || len(ss.all) != tc.wantN {
					t.Fatalf("RecvMsg() = %v after %d attempts, want %v after %d", rerr, len(ss.all), tc.wantCode, tc.wantN)
				}
			})
		})
	}
	t.Run("drop at NewStream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss := &streams{script: newScript(t, outcome{code: codes.Unavailable, dropped: true})}
			if _, err := policy(3).Stream(t.Context(), nil, ss.newStream, ss.dropped, nil); status.Code(err) != codes.Unavailable {
				t.Fatalf("Stream() = %v, want the drop's UNAVAILABLE", err)
			}
		})
	})
	t.Run("pick failure at NewStream retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss := &streams{script: newScript(t, outcome{code: codes.Unavailable, dropped: true}, outcome{})}
			ss.outcomes[0].dropped = false // a pick error without status
			fail := ss.newStream
			first := true
			newStream := func(ctx context.Context, opts []grpc.CallOption) (grpc.ClientStream, error) {
				if first {
					first = false
					ss.next(ctx)
					return nil, status.Error(codes.Unavailable, "no ready endpoint")
				}
				return fail(ctx, opts)
			}
			s, err := policy(3).Stream(t.Context(), nil, newStream, ss.dropped, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.RecvMsg(new(wrapperspb.StringValue)); err != io.EOF {
				t.Fatalf("RecvMsg() = %v, want io.EOF", err)
			}
		})
	})
}

// TestStream_Header checks that Header retries an attempt that ended
// without headers and returns the next attempt's, and that the error of
// an RPC that ends is left to RecvMsg, as grpc's Header does.
func TestStream_Header(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := &streams{script: newScript(t, outcome{code: codes.Unavailable}, outcome{headers: true})}
		s, err := policy(3).Stream(t.Context(), nil, ss.newStream, ss.dropped, nil)
		if err != nil {
			t.Fatal(err)
		}
		if md, err := s.Header(); err != nil || md == nil {
			t.Fatalf("Header() = %v, %v; want the second attempt's headers", md, err)
		}
		if err := s.RecvMsg(new(wrapperspb.StringValue)); err != io.EOF {
			t.Fatalf("RecvMsg() = %v, want io.EOF", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ss := &streams{script: newScript(t, outcome{code: codes.Unavailable}, outcome{code: codes.Internal})}
		s, err := policy(3).Stream(t.Context(), nil, ss.newStream, ss.dropped, nil)
		if err != nil {
			t.Fatal(err)
		}
		if md, err := s.Header(); err != nil || md != nil {
			t.Fatalf("Header() = %v, %v; want nil, nil", md, err)
		}
		if err := s.RecvMsg(new(wrapperspb.StringValue)); status.Code(err) != codes.Internal {
			t.Fatalf("RecvMsg() = %v, want INTERNAL", err)
		}
	})
}

// TestStream_ContextEnds checks that a stream whose context ends while it
// waits to retry ends with the context's status.
func TestStream_ContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		ss := &streams{script: newScript(t, outcome{code: codes.Unavailable, pushback: []string{"10000"}})}
		s, err := policy(3).Stream(ctx, nil, ss.newStream, ss.dropped, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(time.Second, cancel)
		if err := s.RecvMsg(new(wrapperspb.StringValue)); status.Code(err) != codes.Canceled {
			t.Fatalf("RecvMsg() = %v, want CANCELLED", err)
		}
		if err := s.SendMsg(sv("x")); !errors.Is(err, io.EOF) {
			t.Fatalf("SendMsg() after the end = %v, want io.EOF", err)
		}
	})
}

// TestStream_Committed checks that committed is called exactly once, when
// no attempt will follow: after a retry succeeds, after the last attempt,
// and when the stream cannot be created.
func TestStream_Committed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes []outcome
	}{
		{"retried, then a reply", []outcome{{code: codes.Unavailable}, {replies: 1}}},
		{"attempts exhausted", []outcome{{code: codes.Unavailable}, {code: codes.Unavailable}}},
		{"dropped at creation", []outcome{{code: codes.Unavailable, dropped: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := &streams{script: newScript(t, tc.outcomes...)}
				n := 0
				s, err := policy(1).Stream(t.Context(), nil, ss.newStream, ss.dropped, func() { n++ })
				for err == nil {
					err = s.RecvMsg(new(wrapperspb.StringValue))
				}
				if n != 1 {
					t.Fatalf("committed called %d times, want 1", n)
				}
			})
		})
	}
}
