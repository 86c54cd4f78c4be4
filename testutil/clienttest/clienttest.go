// SPDX-License-Identifier: Apache-2.0

// Package clienttest holds helpers for testing a transport (a
// transport.Builder: the ones in transport/..., or your own) with the real
// client: a recording watcher, watchers of a whole Listener → Endpoints
// chain, and a transport wrapper that records and breaks streams. It is for
// tests only; production code never imports it.
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

// Builder wraps a transport.Builder: it records the method of every
// stream opened and can break the open streams of one method. The xDS
// streams of a transport that speaks xDS itself (REST, files,
// transport.XDS) are recorded under the method XDSMethod(typeURL); those of
// a gRPC transport go through ADS on the wrapper, and so are recorded
// under their gRPC method.
type Builder struct {
	Inner transport.Builder

	mu      sync.Mutex
	methods []string                        // of every NewStream, in order
	times   []time.Time                     // when each NewStream was called
	cancels map[string][]context.CancelFunc // open streams by method
}

// Build implements transport.Builder.
func (b *Builder) Build(sc *bootstrap.ServerConfig) (transport.Transport, error) {
	tr, err := b.Inner.Build(sc)
	if err != nil {
		return nil, err
	}
	return &recTransport{Transport: tr, b: b}, nil
}

// Methods returns the method of every stream opened, in order.
func (b *Builder) Methods() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.methods...)
}

// Opened returns when each stream of method was opened, in order.
func (b *Builder) Opened(method string) []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []time.Time
	for i, m := range b.methods {
		if m == method {
			out = append(out, b.times[i])
		}
	}
	return out
}

// Break cancels every open stream of method, as a stream failure.
func (b *Builder) Break(method string) {
	b.mu.Lock()
	cancels := b.cancels[method]
	delete(b.cancels, method)
	b.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// BreakAll cancels every open stream, of any method.
func (b *Builder) BreakAll() {
	b.mu.Lock()
	cancels := b.cancels
	b.cancels = nil
	b.mu.Unlock()
	for _, cs := range cancels {
		for _, c := range cs {
			c()
		}
	}
}

// XDSMethod is the method under which Builder records an xDS stream of a
// transport that speaks xDS itself: "xds:" and the stream's type URL
// ("xds:" alone for an aggregated stream).
func XDSMethod(typeURL string) string { return "xds:" + typeURL }

// record records a stream of method opened now, and returns its context.
func (b *Builder) record(ctx context.Context, method string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.methods = append(b.methods, method)
	b.times = append(b.times, time.Now())
	if b.cancels == nil {
		b.cancels = make(map[string][]context.CancelFunc)
	}
	b.cancels[method] = append(b.cancels[method], cancel)
	return ctx, cancel
}

type recTransport struct {
	transport.Transport
	b *Builder
}

func (t *recTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	ctx, cancel := t.b.record(ctx, method)
	st, err := t.Transport.NewStream(ctx, method)
	if err != nil {
		cancel()
		return nil, err
	}
	return st, nil
}

// PerType implements transport.XDS: the wrapped transport's layout.
func (t *recTransport) PerType() bool { return transport.AsXDS(t.Transport).PerType() }

// NewXDSStream implements transport.XDS: the wrapped transport's own xDS
// stream, recorded under XDSMethod, or ADS over the wrapper.
func (t *recTransport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	x, ok := t.Transport.(transport.XDS)
	if !ok {
		return transport.ADS(t).NewXDSStream(ctx, spec)
	}
	ctx, cancel := t.b.record(ctx, XDSMethod(spec.TypeURL))
	st, err := x.NewXDSStream(ctx, spec)
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
