// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	// defaultTestTimeout bounds waits for things that must happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout bounds waits for things that must not happen.
	defaultTestShortTimeout = 50 * time.Millisecond
)

// bubbleTimeout bounds waits inside testing/synctest bubbles, in fake
// time. It must exceed every timer a bubble test covers (15 s expiry, the
// backoff's 120 s steps over minutes); a wait that can never succeed still
// fails at once in real time, because the bubble's clock jumps to the
// deadline when every goroutine in it is blocked.
const bubbleTimeout = 24 * time.Hour

// bubbleTests holds the *testing.T of every test running inside a bubble
// (see synctestTest), so that testContext knows which bound applies.
var bubbleTests sync.Map

// synctestTest runs f in a testing/synctest bubble, where time is fake.
func synctestTest(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		bubbleTests.Store(t, struct{}{})
		defer bubbleTests.Delete(t)
		f(t)
	})
}

// testContext returns a context bounded by defaultTestTimeout, or by
// bubbleTimeout (fake time) inside a synctestTest bubble.
func testContext(t *testing.T) context.Context {
	t.Helper()
	d := defaultTestTimeout
	if _, ok := bubbleTests.Load(t); ok {
		d = bubbleTimeout
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a client of ms (over real gRPC unless ms is in-memory,
// in which case it uses ms's in-memory transport), closed at cleanup.
func newClient(t *testing.T, ms *testutil.ManagementServer, bopts testutil.BootstrapOptions, opts ...client.Option) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(ms.Bootstrap(bopts))
	if err != nil {
		t.Fatalf("bootstrap.Parse() = %v", err)
	}
	if ms.Address() == "in-memory" {
		opts = append([]client.Option{client.WithTransportBuilder(ms.TransportBuilder())}, opts...)
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		t.Fatalf("client.New() = %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// eventKind names the watcher method that produced an event.
type eventKind string

const (
	changed       eventKind = "changed"
	resourceError eventKind = "resource_error"
	ambientError  eventKind = "ambient_error"
)

// event is one watcher call.
type event[T any] struct {
	kind  eventKind
	value T
	err   error
	done  func()
}

func (e event[T]) String() string {
	switch e.kind {
	case changed:
		return fmt.Sprintf("%s(%v)", e.kind, any(e.value))
	default:
		return fmt.Sprintf("%s(%v)", e.kind, e.err)
	}
}

// recorder is a Watcher that records its calls on a channel. With
// holdDone, done is left to the test (flow-control tests); otherwise it is
// called before the event is recorded.
type recorder[T any] struct {
	events   chan event[T]
	holdDone bool
	log      *callLog // optional: a log shared by several recorders
	label    string
}

func newRecorder[T any]() *recorder[T] {
	return &recorder[T]{events: make(chan event[T], 1000)}
}

func (r *recorder[T]) record(e event[T]) {
	if !r.holdDone {
		e.done()
	}
	if r.log != nil {
		r.log.add(fmt.Sprintf("%s:%s", r.label, e.kind))
	}
	r.events <- e
}

func (r *recorder[T]) ResourceChanged(v T, done func()) {
	r.record(event[T]{kind: changed, value: v, done: done})
}

func (r *recorder[T]) ResourceError(err error, done func()) {
	r.record(event[T]{kind: resourceError, err: err, done: done})
}

func (r *recorder[T]) AmbientError(err error, done func()) {
	r.record(event[T]{kind: ambientError, err: err, done: done})
}

// next returns the next event, or fails the test when none comes in time.
func (r *recorder[T]) next(ctx context.Context, t *testing.T) event[T] {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-ctx.Done():
		t.Fatalf("timed out waiting for a watcher event: %v", ctx.Err())
	}
	panic("unreachable")
}

// wantKind returns the next event and fails the test unless it is of kind
// k (and, for errors, wraps target when target is not nil).
func (r *recorder[T]) wantKind(ctx context.Context, t *testing.T, k eventKind, target error) event[T] {
	t.Helper()
	e := r.next(ctx, t)
	if e.kind != k {
		t.Fatalf("watcher event = %v, want %s", e, k)
	}
	if target != nil && !errors.Is(e.err, target) {
		t.Fatalf("watcher event = %v, want an error wrapping %v", e, target)
	}
	return e
}

// wantNone fails the test if an event arrives within d.
func (r *recorder[T]) wantNone(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case e := <-r.events:
		t.Fatalf("unexpected watcher event %v", e)
	case <-timer.C:
	}
}

// callLog records calls of several watchers in one order.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// contextWithTimeout is context.WithTimeout on t.Context().
func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// recordingBuilder wraps a transport.Builder, decorating its transports:
// it records when streams are opened, and can hold every Send until the
// test releases it.
type recordingBuilder struct {
	inner transport.Builder

	mu      sync.Mutex
	opened  []time.Time   // when NewXDSStream was called
	gate    chan struct{} // when not nil, Send waits for it to be closed
	sending chan struct{} // receives a value when a Send starts waiting at the gate
}

func newRecordingBuilder(inner transport.Builder) *recordingBuilder {
	return &recordingBuilder{inner: inner, sending: make(chan struct{}, 100)}
}

func (b *recordingBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.inner.Build(sc, o)
	if err != nil {
		return nil, err
	}
	return &recordingTransport{XDS: x, b: b}, nil
}

// hold makes every later Send wait until release is called.
func (b *recordingBuilder) hold() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gate = make(chan struct{})
}

func (b *recordingBuilder) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.gate)
	b.gate = nil
}

// streamsOpened returns when each stream was opened.
func (b *recordingBuilder) streamsOpened() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.opened...)
}

type recordingTransport struct {
	transport.XDS
	b *recordingBuilder
}

func (tr *recordingTransport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	tr.b.mu.Lock()
	tr.b.opened = append(tr.b.opened, time.Now())
	tr.b.mu.Unlock()
	s, err := tr.XDS.NewXDSStream(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &recordingStream{XDSStream: s, b: tr.b, ctx: ctx}, nil
}

type recordingStream struct {
	transport.XDSStream
	b   *recordingBuilder
	ctx context.Context
}

func (s *recordingStream) Send(req *transport.Request) error {
	s.b.mu.Lock()
	gate := s.b.gate
	s.b.mu.Unlock()
	if gate != nil {
		s.b.sending <- struct{}{}
		select {
		case <-gate:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
	return s.XDSStream.Send(req)
}
