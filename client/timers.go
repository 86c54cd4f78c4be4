// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// startTimerLocked arms the does-not-exist timer of rs.
func (c *Client) startTimerLocked(rs *resourceState) {
	rs.stopTimerLocked()
	rs.timerState = timerRequested
	gen := rs.timerGen
	rs.timer = time.AfterFunc(c.opts.watchExpiryTimeout, func() { c.watchExpired(rs, gen) })
}

// watchExpired runs when the does-not-exist timer of rs fires: no response
// named the resource within the watch expiry timeout after it was requested
// on a connected stream. Its watchers get ResourceError wrapping
// ErrResourceNotFound and its status becomes DOES_NOT_EXIST; it is not timed
// again. These calls are not flow controlled.
func (c *Client) watchExpired(rs *resourceState, gen uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || rs.timerGen != gen || !rs.cachedLocked() {
		return // stopped, replaced or unsubscribed meanwhile
	}
	rs.timer = nil
	rs.timerState = timerReceived
	rs.status = v3adminpb.ClientResourceStatus_DOES_NOT_EXIST
	rs.extLocked().dneReason = fmt.Sprintf("not received within %v of being requested", c.opts.watchExpiryTimeout)
	c.logger.Warn("resource does not exist: watch expired", "type", rs.typ.TypeName(), "resource", rs.name)
	err := c.notFoundError(rs)
	for _, we := range rs.watchers {
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	}
}
