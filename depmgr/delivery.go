// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"slices"
	"sync"
)

// deliveryKind names the method of the watcher a delivery calls.
type deliveryKind uint8

const (
	deliverChanged       deliveryKind = iota // ResourceChanged(cfg)
	deliverResourceError                     // ResourceError(err)
	deliverAmbientError                      // AmbientError(err)
)

// delivery is one call of a method of the watcher, not started yet.
type delivery struct {
	kind deliveryKind
	cfg  *XDSConfig // for deliverChanged
	err  error      // for deliverResourceError and deliverAmbientError
}

// isState reports whether d replaces the configuration state
// (ResourceChanged or ResourceError), rather than reporting an ambient
// error about it.
func (d delivery) isState() bool { return d.kind != deliverAmbientError }

// deliveryQueue holds the calls the watcher has not been given yet: at
// most one state (ResourceChanged or ResourceError) and one AmbientError,
// in the order they happened. A newer one of either class replaces the
// queued one of its class and goes last, so a watcher that is slow to
// call done gets the latest state and the latest ambient error, in the
// order they happened, and the queue never holds more than two calls.
type deliveryQueue struct {
	items []delivery // oldest first; len ≤ 2
}

// push queues d, dropping the queued delivery of its class, if any.
func (q *deliveryQueue) push(d delivery) {
	for i, o := range q.items {
		if o.isState() == d.isState() {
			q.items = slices.Delete(q.items, i, i+1)
			break
		}
	}
	q.items = append(q.items, d)
}

// pop removes and returns the oldest delivery; ok is false when the queue
// is empty.
func (q *deliveryQueue) pop() (d delivery, ok bool) {
	if len(q.items) == 0 {
		return delivery{}, false
	}
	d = q.items[0]
	q.items = slices.Delete(q.items, 0, 1)
	return d, true
}

// len returns the number of deliveries queued.
func (q *deliveryQueue) len() int { return len(q.items) }

// deliverLocked queues d for the watcher. The call is scheduled on the
// serializer at once when the watcher has no call outstanding (busy is
// false); otherwise the done of the outstanding call schedules it. Until
// it starts, a newer delivery of its class replaces it (deliveryQueue).
// After Close it does nothing.
func (m *Manager) deliverLocked(d delivery) {
	if m.closed {
		return
	}
	m.queue.push(d)
	if !m.busy {
		m.busy = true
		m.serializer.Schedule(m.handleDelivery)
	}
}

// handleDelivery makes the oldest queued watcher call, on the serializer.
// The watcher is not called again until the call's done (watcherDone).
// It holds no lock while the watcher runs.
func (m *Manager) handleDelivery() {
	m.mu.Lock()
	d, ok := m.queue.pop()
	if m.closed || !ok {
		m.busy = false
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	done := sync.OnceFunc(m.watcherDone)
	switch d.kind {
	case deliverChanged:
		m.watcher.ResourceChanged(d.cfg, done)
	case deliverResourceError:
		m.watcher.ResourceError(d.err, done)
	default:
		m.watcher.AmbientError(d.err, done)
	}
}

// watcherDone is the done of a watcher call (run once per call, from any
// goroutine): it schedules the next call if one is queued, or lets the
// next deliverLocked schedule it. After Close it does nothing.
func (m *Manager) watcherDone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if m.queue.len() > 0 {
		m.serializer.Schedule(m.handleDelivery)
		return
	}
	m.busy = false
}
