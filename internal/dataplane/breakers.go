// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"sync"
	"sync/atomic"
)

// Breakers holds the in-flight request counters of circuit breaking (gRFC
// A32) by Priority.BreakerKey: its leaf cluster and EDS service. The data
// paths of one client share one, as gRPC shares them per xDS client. Safe
// for concurrent use.
type Breakers struct {
	mu       sync.Mutex
	counters map[string]*atomic.Int64
}

// Counter returns the counter of key, created on first use. A request
// adds 1 when it is picked, and fails when the count then exceeds the
// priority's MaxRequests (Acquire); it adds -1 when it ends.
func (b *Breakers) Counter(key string) *atomic.Int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counters[key]
	if c == nil {
		if b.counters == nil {
			b.counters = make(map[string]*atomic.Int64)
		}
		c = new(atomic.Int64)
		b.counters[key] = c
	}
	return c
}

// Acquire counts one more request in flight in c, unless that makes more
// than limit (max_requests, gRFC A32): then it counts nothing and reports
// false. A request counted is released with c.Add(-1).
func Acquire(c *atomic.Int64, limit uint32) bool {
	if c.Add(1) > int64(limit) {
		c.Add(-1)
		return false
	}
	return true
}
