// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"time"

	"github.com/proxyless/xds/internal/dataplane"
)

// FakeTimer is a timer started by a router under test: a failover timer
// (D 10 s), a child retention timer (D 15 min) or an outlier detection
// interval.
type FakeTimer struct {
	D       time.Duration
	f       func()
	stopped chan struct{}
}

// Fire runs the timer's function unless it was stopped.
func (t *FakeTimer) Fire() {
	select {
	case <-t.stopped:
	default:
		t.f()
	}
}

// WithFakeTimers makes the routers of the Builder send each timer they
// start to timers instead of starting it.
func WithFakeTimers(timers chan<- *FakeTimer) Option {
	return func(o *options) {
		o.timer = func(d time.Duration, f func()) func() bool {
			t := &FakeTimer{D: d, f: f, stopped: make(chan struct{})}
			timers <- t
			return func() bool {
				select {
				case <-t.stopped:
					return false
				default:
					close(t.stopped)
					return true
				}
			}
		}
	}
}

// ActiveFaults returns the number of RPCs with an injected fault in
// progress in the process (max_active_faults, gRFC A33).
func ActiveFaults() int64 { return dataplane.ActiveFaults() }
