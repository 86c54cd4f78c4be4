// SPDX-License-Identifier: Apache-2.0

package balance

import "sync/atomic"

// ejections counts the ejection changes of every Host of the process. A
// Cluster keeps the priority loads it computed with the count it read
// before; a Pick that sees another count computes them again. Ejections
// change rarely (at most once per outlier detection interval and endpoint,
// or when consecutive failures reach a threshold), so that one count for
// all hosts costs less than a count per Cluster each Host would have to
// know.
var ejections atomic.Uint64

// Host is the live state of one endpoint address, kept by the transport
// across configurations (one per dataplane.Endpoint.Key): whether outlier
// detection ejected it, and its requests in flight. The zero value is a
// host that is not ejected, with no request in flight. Safe for concurrent
// use.
type Host struct {
	ejected  atomic.Bool
	inFlight atomic.Int64
}

// Ejected reports whether outlier detection ejected the host.
func (h *Host) Ejected() bool { return h.ejected.Load() }

// SetEjected marks the host ejected (true) or back in service (false).
// The priority loads of every Cluster holding it change at their next
// Pick.
func (h *Host) SetEjected(ejected bool) {
	if h.ejected.Swap(ejected) != ejected {
		ejections.Add(1)
	}
}

// Begin counts a request that starts on the host (least_request compares
// the counts); End counts its end.
func (h *Host) Begin() { h.inFlight.Add(1) }

// End counts the end of a request that Begin counted.
func (h *Host) End() { h.inFlight.Add(-1) }

// InFlight returns the number of requests in flight on the host: those
// Begin counted and End did not.
func (h *Host) InFlight() int64 { return h.inFlight.Load() }
