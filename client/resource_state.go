// SPDX-License-Identifier: Apache-2.0

package client

import (
	"time"
	"unsafe"

	"github.com/proxyless/xds/resources"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// timerState is where a resource is in the does-not-exist timer's life
// started (subscribed, no request sent on a connected stream yet),
// requested (timer running), received (the resource was seen, valid or not,
// or the timer fired: it is never timed again).
type timerState uint8

const (
	timerStarted timerState = iota
	timerRequested
	timerReceived
)

// resourceState is the cache entry and the watchers of one resource. It
// exists while the resource has at least one watcher, or, while the
// wildcard of its type is subscribed (WatchAll), once it was received
// through it. Every field is guarded by Client.mu, except typ and name,
// which are read-only.
type resourceState struct {
	typ  resources.ResourceType // read-only
	name string                 // read-only; canonical
	list *serverList            // the servers that may serve it; nil: received through a wildcard or glob, until watched by name (adoptLocked)
	ch   *channel               // the channel of the server that serves it: the list's active one (R-15, fallback.go)
	// from is the server_uri of the server the cached value came from:
	// the ServerURI of that server's bootstrap.ServerConfig, which the
	// config keeps, so that no entry holds a string of its own; nil
	// before the first value.
	from *string

	watchers []*watchEntry // in registration order

	// The cache: the last valid value and its bytes.
	value       any    // nil when none
	raw         string // the resource as received: the unwrapped Any's value (rawString); "" when value is nil
	version     string // SotW: version_info of the response that last carried it valid; delta: its own version
	lastUpdated int64  // when value was last received, in Unix nanoseconds (see unixNanos, updated)

	// extra holds the fields that are rarely set, out of line: tens of
	// thousands of entries are common (a mesh), and each is then in a
	// smaller size class. nil while every field of it is zero.
	extra *entryExtra

	// timer is the running does-not-exist timer that times the entry,
	// shared with the other names of the request that started it; nil
	// when none.
	timer *expiryTimer

	status     entryStatus // REQUESTED, DOES_NOT_EXIST, ACKED, NACKED or RECEIVED_ERROR
	timerState timerState
	stale      bool // the cached value was loaded from persistence (persist.go), not received yet

	deletionIgnored bool // a deletion was ignored; logged once

	// notRequested: the name joined the subscription with a cached value
	// (watched again, R-10.3) and no request naming it was written since.
	// A SotW response that leaves it out answers an earlier request, so it
	// is no deletion. A name without a cached value is never
	// deleted by omission, and once a value comes the server was
	// asked for it, so the flag is not set for it: the server's answer
	// can arrive before the send loop records the write.
	notRequested bool
	// unsubWritten: a request that unsubscribed the name was written while
	// it was watched again (the unsubscription was already built). The
	// server may answer that request, leaving the name out, after the
	// request that names it again was written: so the first SotW response
	// that leaves it out after that is no deletion either (skipDeletion).
	unsubWritten bool
	skipDeletion bool

	// ttlExpired: the value was dropped because its TTL ran out, and
	// nothing was received for the resource since. It is then not cached,
	// and counts for fallback as never received.
	ttlExpired bool
}

// entryExtra are the fields of a resourceState that are rarely set. Read
// them with resourceState.ext, set them with extLocked.
type entryExtra struct {
	dneReason string // why status is DOES_NOT_EXIST

	// The last NACK of this resource; nil when the last received version
	// was valid.
	nack *nackState
	// The error the management server last reported for the resource in
	// resource_errors; nil once a valid version, a NACK or a
	// deletion followed. See serverErrorLocked.
	serverErr *serverErrState
	// Delta only: the Resource.name and aliases of the cached value, when
	// they are not just name: it came for an alias.
	delta *deltaNames
	// The TTL of the cached value, while one is set.
	ttl *ttlState
}

// ext returns a copy of the rarely set fields of rs (zero when none is
// set); it never allocates.
func (rs *resourceState) ext() entryExtra {
	if rs.extra == nil {
		return entryExtra{}
	}
	return *rs.extra
}

// extLocked returns the rarely set fields of rs, for setting one.
func (rs *resourceState) extLocked() *entryExtra {
	if rs.extra == nil {
		rs.extra = new(entryExtra)
	}
	return rs.extra
}

// tidyExtLocked releases the rarely set fields of rs once all are zero.
func (rs *resourceState) tidyExtLocked() {
	if rs.extra != nil && *rs.extra == (entryExtra{}) {
		rs.extra = nil
	}
}

// clearErrorsLocked clears the last NACK, the error reported by the
// server and the reason for DOES_NOT_EXIST.
func (rs *resourceState) clearErrorsLocked() {
	if e := rs.extra; e != nil {
		e.dneReason, e.nack, e.serverErr = "", nil, nil
		rs.tidyExtLocked()
	}
}

// unixNanos returns t in Unix nanoseconds, 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// updated returns when the cached value was last received: the zero time
// when unknown (a persisted value without a time).
func (rs *resourceState) updated() time.Time {
	if rs.lastUpdated == 0 {
		return time.Time{}
	}
	return time.Unix(0, rs.lastUpdated)
}

// fromURI returns the server_uri of the server the cached value came
// from, "" before the first value.
func (rs *resourceState) fromURI() string {
	if rs.from == nil {
		return ""
	}
	return *rs.from
}

// nackState is the last NACK of a resource.
type nackState struct {
	err     error
	version string    // the version_info (SotW) or resource version (delta) NACKed
	time    time.Time // when it was received
}

// serverErrState is an error the management server reported for a
// resource in resource_errors, with the time it arrived.
type serverErrState struct {
	err  error
	time time.Time
}

// deltaNames are the Resource.name and aliases of a cached delta value.
type deltaNames struct {
	name    string
	aliases []string
}

// ttlState is a running TTL: timer expires the value d after it
// was received. A replaced or stopped TTL is a new ttlState, which is how
// the timer's func tells that it is stale.
type ttlState struct {
	d     time.Duration
	timer *time.Timer
}

// rawString returns b, a resource's bytes as received (the unwrapped Any's
// value), as a string that shares their memory. The bytes are never
// modified once received, and the decoded value of a built-in type holds
// the same bytes (package resources keeps them the same way), so the cache
// adds no copy; and a string takes 16 bytes of the entry where a slice
// takes 24.
func rawString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// entryStatus is an entry's status for CSDS, a
// v3adminpb.ClientResourceStatus, in one byte (the enum's values are 0 to
// 6), which keeps resourceState in a smaller size class.
type entryStatus uint8

const (
	statusRequested     = entryStatus(v3adminpb.ClientResourceStatus_REQUESTED)
	statusDoesNotExist  = entryStatus(v3adminpb.ClientResourceStatus_DOES_NOT_EXIST)
	statusAcked         = entryStatus(v3adminpb.ClientResourceStatus_ACKED)
	statusNacked        = entryStatus(v3adminpb.ClientResourceStatus_NACKED)
	statusReceivedError = entryStatus(v3adminpb.ClientResourceStatus_RECEIVED_ERROR)
	statusTimeout       = entryStatus(v3adminpb.ClientResourceStatus_TIMEOUT)
)

// proto returns s as the CSDS enum.
func (s entryStatus) proto() v3adminpb.ClientResourceStatus { return v3adminpb.ClientResourceStatus(s) }
