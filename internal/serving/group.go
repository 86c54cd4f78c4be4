// SPDX-License-Identifier: Apache-2.0

package serving

import (
	"errors"
	"net"
	"sync"
)

// Group is what a server keeps of its listening sockets: the Listeners
// its Serve calls run, its stop state, and the wait group and hard-stop
// channel of its chains. Its zero value is not usable: call NewGroup. It
// is safe for concurrent use.
type Group struct {
	// HardStop is closed by a hard Stop: drains end at once
	// (RunnerOptions.HardStop).
	HardStop chan struct{}
	// WG counts every goroutine of the server's chains
	// (RunnerOptions.WG).
	WG sync.WaitGroup

	mu        sync.Mutex
	stopped   bool                   // guarded by mu; Stop was called
	graceful  bool                   // guarded by mu; the first Stop was graceful
	listeners map[*Listener]struct{} // guarded by mu; the running Serve calls
	stopOnce  sync.Once
}

// NewGroup returns a Group without listeners, not stopped.
func NewGroup() *Group {
	return &Group{HardStop: make(chan struct{}), listeners: make(map[*Listener]struct{})}
}

// ErrStopped is the error of Serve called after Stop.
var ErrStopped = errors.New("the server is stopped")

// Serve serves lis, listening on addr, with a Listener of o (o.Stopping
// is the group's), until lis fails or the group is stopped. It returns
// nil when the group was stopped meanwhile, ErrStopped (closing lis at
// once) when it was stopped before, and otherwise the error of
// lis.Accept.
func (g *Group) Serve(lis net.Listener, addr *net.TCPAddr, o Options) error {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		lis.Close()
		return ErrStopped
	}
	o.Stopping = g.stopping
	sl := New(lis, addr, o)
	g.listeners[sl] = struct{}{}
	g.mu.Unlock()

	err := sl.Serve()

	g.mu.Lock()
	delete(g.listeners, sl)
	stopped := g.stopped
	g.mu.Unlock()
	if stopped {
		return nil
	}
	return err
}

// Stop stops the group: no more Serve calls; the running ones end, and
// their chains are retired without a grace time (see Options.Stopping),
// gracefully unless hard; a hard Stop also ends the drains in progress.
// The first Stop decides whether the stop is graceful. It does not wait:
// Wait does.
func (g *Group) Stop(hard bool) {
	g.mu.Lock()
	if !g.stopped {
		g.stopped, g.graceful = true, !hard
	}
	if hard {
		g.stopOnce.Do(func() { close(g.HardStop) })
	}
	sls := make([]*Listener, 0, len(g.listeners))
	for sl := range g.listeners {
		sls = append(sls, sl)
	}
	g.mu.Unlock()
	for _, sl := range sls {
		sl.Close()
	}
}

// Wait waits, after Stop, until every Serve call has cleaned up and
// every chain's goroutine has ended.
func (g *Group) Wait() {
	g.mu.Lock()
	sls := make([]*Listener, 0, len(g.listeners))
	for sl := range g.listeners {
		sls = append(sls, sl)
	}
	g.mu.Unlock()
	for _, sl := range sls {
		<-sl.Done()
	}
	g.WG.Wait()
}

// stopping reports whether the group is stopping, and whether hard.
func (g *Group) stopping() (stopped, hard bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopped, g.stopped && !g.graceful
}
