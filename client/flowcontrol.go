// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"sync/atomic"
)

// flowControl counts the watcher calls caused by one response that have not
// called done yet; the stream reads its next response only when the count
// is zero. It starts with one reference, held by the code that
// handles the response and given back by seal once every call is scheduled,
// so the count cannot reach zero half-way (R-12.3: with no calls, seal
// releases at once).
type flowControl struct {
	pending  atomic.Int64
	released chan struct{} // closed when pending reaches zero
}

func newFlowControl() *flowControl {
	fc := &flowControl{released: make(chan struct{})}
	fc.pending.Store(1)
	return fc
}

// add takes a reference for one watcher call, which the call gives back
// with release (the done func of one delivery, which makes it idempotent).
func (fc *flowControl) add() { fc.pending.Add(1) }

// seal gives back the initial reference.
func (fc *flowControl) seal() { fc.release() }

func (fc *flowControl) release() {
	if fc.pending.Add(-1) == 0 {
		close(fc.released)
	}
}

// wait blocks until every reference is released or ctx ends.
func (fc *flowControl) wait(ctx context.Context) error {
	select {
	case <-fc.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
