// SPDX-License-Identifier: Apache-2.0

// Package clienttest holds helpers for testing a transport (a
// transport.Builder or transport.Dialer: the ones in transport/..., or your
// own) with the real client: a recording watcher, watchers of a whole
// Listener → Endpoints chain, and transport wrappers that record and break
// streams (Builder, Dialer). It is for tests only; production code never
// imports it.
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// Kind names the watcher method that produced an Event.
type Kind string

// The watcher methods.
const (
	Changed       Kind = "changed"
	ResourceError Kind = "resource_error"
	AmbientError  Kind = "ambient_error"
)

// Event is one watcher call.
type Event[T any] struct {
	Kind  Kind
	Value T
	Err   error
}

// String returns "kind(value)" or "kind(error)", for test failures.
func (e Event[T]) String() string {
	if e.Kind == Changed {
		return fmt.Sprintf("%s(%v)", e.Kind, any(e.Value))
	}
	return fmt.Sprintf("%s(%v)", e.Kind, e.Err)
}

// Recorder is a watcher.Watcher that records its calls; it calls done
// before recording.
type Recorder[T any] struct {
	events chan Event[T]
}

// NewRecorder returns a Recorder that buffers up to 1000 events.
func NewRecorder[T any]() *Recorder[T] {
	return &Recorder[T]{events: make(chan Event[T], 1000)}
}

// ResourceChanged calls done, then records a Changed event with v. It
// blocks while 1000 events are unread.
func (r *Recorder[T]) ResourceChanged(v T, done func()) {
	done()
	r.events <- Event[T]{Kind: Changed, Value: v}
}

// ResourceError calls done, then records a ResourceError event with err.
func (r *Recorder[T]) ResourceError(err error, done func()) {
	done()
	r.events <- Event[T]{Kind: ResourceError, Err: err}
}

// AmbientError calls done, then records an AmbientError event with err.
func (r *Recorder[T]) AmbientError(err error, done func()) {
	done()
	r.events <- Event[T]{Kind: AmbientError, Err: err}
}

// Next returns the next event, or fails the test when none comes before
// ctx ends.
func (r *Recorder[T]) Next(ctx context.Context, t testing.TB) Event[T] {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-ctx.Done():
		t.Fatalf("timed out waiting for a watcher event: %v", ctx.Err())
	}
	panic("unreachable")
}

// Want returns the next event and fails the test unless it is of kind k
// and, when target is not nil, its error wraps target.
func (r *Recorder[T]) Want(ctx context.Context, t testing.TB, k Kind, target error) Event[T] {
	t.Helper()
	e := r.Next(ctx, t)
	if e.Kind != k {
		t.Fatalf("watcher event = %v, want %s", e, k)
	}
	if target != nil && !errors.Is(e.Err, target) {
		t.Fatalf("watcher event = %v, want an error wrapping %v", e, target)
	}
	return e
}

// WantNone fails the test if an event arrives within d (real time).
func (r *Recorder[T]) WantNone(t testing.TB, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case e := <-r.events:
		t.Fatalf("unexpected watcher event %v", e)
	case <-timer.C:
	}
}

// StreamLog records the streams of the transports of a Builder or a
// Dialer, by method, and can break those still open. Safe for concurrent
// use.
type StreamLog struct {
	mu      sync.Mutex
	methods []string                        // of every stream opened, in order
	times   []time.Time                     // when each was opened
	cancels map[string][]context.CancelFunc // open streams by method
}

// Methods returns the method of every stream opened, in order.
func (l *StreamLog) Methods() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.methods...)
}

// Opened returns when each stream of method was opened, in order.
func (l *StreamLog) Opened(method string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for i, m := range l.methods {
		if m == method {
			out = append(out, l.times[i])
		}
	}
	return out
}

// Break cancels every open stream of method, as a stream failure.
func (l *StreamLog) Break(method string) {
	l.mu.Lock()
	cancels := l.cancels[method]
	delete(l.cancels, method)
	l.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// BreakAll cancels every open stream, of any method.
func (l *StreamLog) BreakAll() {
	l.mu.Lock()
	cancels := l.cancels
	l.cancels = nil
	l.mu.Unlock()
	for _, cs := range cancels {
		for _, c := range cs {
			c()
		}
	}
}

// record records a stream of method opened now, and returns its context.
func (l *StreamLog) record(ctx context.Context, method string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.methods = append(l.methods, method)
	l.times = append(l.times, time.Now())
	if l.cancels == nil {
		l.cancels = make(map[string][]context.CancelFunc)
	}
	l.cancels[method] = append(l.cancels[method], cancel)
	return ctx, cancel
}

// XDSMethod is the method under which Builder records an xDS stream:
// "xds:" and the stream's type URL ("xds:" alone for an aggregated
// stream). To see the gRPC methods (ADS, per-type services), record the
// Transports below with a Dialer instead.
func XDSMethod(typeURL string) string { return "xds:" + typeURL }

// Builder wraps a transport.Builder, decorating the transports it builds:
// it records their streams in its StreamLog and can break them. An xDS
// stream is recorded under XDSMethod(typeURL), a load reporting stream
// under transport.LRSMethod. The layout, the streams and their names are
// the inner transport's, whatever it is (ADS, per-type, REST, file).
type Builder struct {
	Inner transport.Builder
	StreamLog
}

var _ transport.Builder = (*Builder)(nil)

// Build implements transport.Builder.
func (b *Builder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.Inner.Build(sc, o)
	if err != nil {
		return nil, err
	}
	return &recXDS{XDS: x, log: &b.StreamLog}, nil
}

type recXDS struct {
	transport.XDS
	log *StreamLog
}

func (x *recXDS) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	ctx, cancel := x.log.record(ctx, XDSMethod(spec.TypeURL))
	st, err := x.XDS.NewXDSStream(ctx, spec)
	if err != nil {
		cancel()
		return nil, err
	}
	return st, nil
}

func (x *recXDS) NewLRSStream(ctx context.Context) (transport.Stream, error) {
	ctx, cancel := x.log.record(ctx, transport.LRSMethod)
	st, err := x.XDS.NewLRSStream(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return st, nil
}

// Dialer wraps a transport.Dialer: it records the gRPC method of every
// stream of the Transports it dials in its StreamLog, and can break them.
// Give it to transport.ADSBuilder, pertype.NewBuilder or mixed.WithGRPC to
// see the gRPC streams the client opens.
type Dialer struct {
	Inner transport.Dialer
	StreamLog
}

var _ transport.Dialer = (*Dialer)(nil)

// Dial implements transport.Dialer.
func (d *Dialer) Dial(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.Transport, error) {
	tr, err := d.Inner.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return &recTransport{Transport: tr, log: &d.StreamLog}, nil
}

type recTransport struct {
	transport.Transport
	log *StreamLog
}

func (t *recTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	ctx, cancel := t.log.record(ctx, method)
	st, err := t.Transport.NewStream(ctx, method)
	if err != nil {
		cancel()
		return nil, err
	}
	return st, nil
}

// ChainWatchers watch the Listener → RouteConfiguration → Cluster →
// ClusterLoadAssignment chain of testutil.Chain for one Listener name L:
// L, "route-"+L, "cluster-"+L and "eds-"+L.
type ChainWatchers struct {
	L *Recorder[*resources.Listener]
	R *Recorder[*resources.RouteConfig]
	C *Recorder[*resources.Cluster]
	E *Recorder[*resources.Endpoints]
}

// WatchChain watches the chain of listener on c; the watches are
// cancelled at the end of the test.
func WatchChain(t testing.TB, c *client.Client, listener string) *ChainWatchers {
	w := &ChainWatchers{
		L: NewRecorder[*resources.Listener](),
		R: NewRecorder[*resources.RouteConfig](),
		C: NewRecorder[*resources.Cluster](),
		E: NewRecorder[*resources.Endpoints](),
	}
	t.Cleanup(client.Watch(c, resources.ListenerType, listener, w.L))
	t.Cleanup(client.Watch(c, resources.RouteConfigType, "route-"+listener, w.R))
	t.Cleanup(client.Watch(c, resources.ClusterType, "cluster-"+listener, w.C))
	t.Cleanup(client.Watch(c, resources.EndpointsType, "eds-"+listener, w.E))
	return w
}

// WantChain waits for a value of every resource of the chain.
func (w *ChainWatchers) WantChain(ctx context.Context, t testing.TB) {
	t.Helper()
	w.L.Want(ctx, t, Changed, nil)
	w.R.Want(ctx, t, Changed, nil)
	w.C.Want(ctx, t, Changed, nil)
	w.E.Want(ctx, t, Changed, nil)
}

// WantEndpoint waits for the next endpoints update and fails the test
// unless its first address is addr.
func (w *ChainWatchers) WantEndpoint(ctx context.Context, t testing.TB, addr string) {
	t.Helper()
	e := w.E.Want(ctx, t, Changed, nil)
	l := e.Value.Localities
	if len(l) == 0 || len(l[0].Endpoints) == 0 || len(l[0].Endpoints[0].Addresses) == 0 || l[0].Endpoints[0].Addresses[0] != addr {
		t.Fatalf("endpoints update %v, want first address %s", e, addr)
	}
}
