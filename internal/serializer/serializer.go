// SPDX-License-Identifier: Apache-2.0

// Package serializer runs callbacks one at a time, in the order they were
// scheduled, on a goroutine it owns. The xDS client delivers every watcher
// callback through one, so watchers never run concurrently and may call
// back into the client.
package serializer

import (
	"context"
	"sync"
)

// Serializer is a FIFO of funcs run by one goroutine. Schedule never
// blocks: the queue is unbounded. It is safe for concurrent use.
type Serializer struct {
	// Initialized at creation time and read-only afterwards.
	done chan struct{} // closed when the run goroutine has exited

	mu      sync.Mutex
	queue   []func()      // guarded by mu; funcs not yet run
	wake    chan struct{} // cap 1; signalled when queue becomes non-empty
	stopped bool          // guarded by mu; no more funcs are accepted or run
}

// New starts a Serializer whose goroutine runs until ctx is done. Funcs
// still queued then are dropped; a func running then completes. Done
// reports when the goroutine has exited.
func New(ctx context.Context) *Serializer {
	s := &Serializer{
		done: make(chan struct{}),
		wake: make(chan struct{}, 1),
	}
	go s.run(ctx)
	return s
}

// Schedule queues f. It reports false, without queueing, once the
// Serializer has stopped.
func (s *Serializer) Schedule(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.queue = append(s.queue, f)
	if len(s.queue) == 1 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// Done is closed when the Serializer's goroutine has exited.
func (s *Serializer) Done() <-chan struct{} { return s.done }

func (s *Serializer) run(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			s.stop()
			return
		case <-s.wake:
		}
		for {
			if ctx.Err() != nil {
				s.stop()
				return
			}
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.mu.Unlock()
				break
			}
			f := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			f()
		}
	}
}

func (s *Serializer) stop() {
	s.mu.Lock()
	s.stopped = true
	s.queue = nil
	s.mu.Unlock()
}
