// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// This file carries out what the steps of cache entries ask (entry.step,
// the tables of state.go): the one place where an event of an entry
// reaches timers, TTLs, persistence, the log, the watchers and the cache.

// stepLocked applies ev, with what in brings, to e, and carries out the
// effects of the step, in this order: the does-not-exist timer, the
// TTL, persistence, the log, the watchers (in the entry's
// watcher order, flow-controlled by fc when it is not nil, R-12), and the
// release of the entry when nothing keeps it any more.
func (c *Client) stepLocked(e *entry, ev event, in *input, fc *flowControl) {
	fx := e.step(ev, in)
	if fx.fx&fxStopTimer != 0 {
		e.stopTimerLocked()
	}
	if fx.fx&fxTime != 0 {
		c.timeLocked(in.et, e)
	}
	if fx.fx&fxStopTTL != 0 {
		e.stopTTLLocked()
	}
	if fx.fx&fxSetTTL != 0 {
		c.setTTLLocked(e, in.ttl, in.now)
	}
	if fx.fx&fxPersist != 0 {
		c.persistLocked(e)
	}
	if fx.log.msg != "" {
		c.logStepLocked(e, ev, in, fx.log)
	}
	if fx.fx&fxNotify != 0 {
		c.notifyLocked(e, ev, in, fx.n, fc)
	}
	if fx.fx&fxRelease != 0 {
		e.auth.releaseLocked(e)
	}
}

// logStepLocked logs n for a step of e.
func (c *Client) logStepLocked(e *entry, ev event, in *input, n note) {
	logger := c.logger
	if in.logger != nil {
		logger = in.logger
	}
	attrs := []any{xdslog.KeyTypeURL, e.typ.TypeURL(), xdslog.KeyResource, e.name}
	switch ev {
	case evServerError, evServerNotFound:
		attrs = append(attrs, xdslog.KeyError, status.ErrorProto(in.status), xdslog.KeyCachedValueKept, e.value != nil)
	case evTTLExpired:
		attrs = append(attrs, xdslog.KeyTTL, in.ttl)
	}
	logger.Log(c.ctx, n.level, n.msg, attrs...)
}

// notifyLocked tells the watchers of e what n says, through AmbientError
// while a value is cached and ResourceError otherwise. A timer's
// does-not-exist goes to the watchers of the name only, not to
// the collections, which never had the resource.
func (c *Client) notifyLocked(e *entry, ev event, in *input, n notice, fc *flowControl) {
	ws := e.auth.watchersLocked(e)
	if ev == evTimerFired {
		ws = e.watchers
	}
	var err error
	switch n {
	case noticeChanged:
		v, version := e.value, e.version
		for _, we := range ws {
			c.scheduleChangedLocked(we, fc, v, version)
		}
		return
	case noticeReplay:
		for _, we := range ws {
			c.replayLocked(e, we)
		}
		return
	case noticeInvalid:
		err = c.invalidError(e)
	case noticeServer:
		err = c.resourceError(e.typ, e.name, e.ext().serverErr.err)
	case noticeNotFound:
		err = c.notFoundError(e)
	case noticeTimeout:
		err = c.resourceError(e.typ, e.name, fmt.Errorf("%w: not received within %v of being requested (resource_timer_is_transient_error)", ErrTimeout, in.timeout))
	}
	ambient := e.value != nil
	for _, we := range ws {
		if ambient {
			c.scheduleLocked(we, fc, func(done func()) { we.ambErr(err, done) })
		} else {
			c.scheduleLocked(we, fc, func(done func()) { we.resErr(err, done) })
		}
	}
}

// replayLocked tells a new watcher we the current state of e at once
// the cached value, then the last NACK error as an AmbientError
// (gRFC A88's order), or the error the server reported for it; or,
// with nothing cached, ResourceError when the resource does not exist, its
// last version was NACKed or the server reported an error; nothing while it
// is only requested. These calls are not tied to a response, so their
// done is not flow control.
func (c *Client) replayLocked(e *entry, we *watchEntry) {
	x := e.ext()
	switch {
	case e.state.hasValue():
		v, version := e.value, e.version
		c.scheduleLocked(we, nil, func(done func()) { we.changed(v, version, done) })
		if e.stale() {
			err := c.staleError(e)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
		if x.nack != nil {
			err := c.invalidError(e)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
		if x.serverErr != nil {
			err := c.resourceError(e.typ, e.name, x.serverErr.err)
			c.scheduleLocked(we, nil, func(done func()) { we.ambErr(err, done) })
		}
	case e.state == stMissing || e.state == stExpired:
		err := c.notFoundError(e)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case x.nack != nil:
		err := c.invalidError(e)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case x.serverErr != nil:
		err := c.resourceError(e.typ, e.name, x.serverErr.err)
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	case e.state == stTimedOut:
		err := c.resourceError(e.typ, e.name, fmt.Errorf("%w: not received in time (resource_timer_is_transient_error)", ErrTimeout))
		c.scheduleLocked(we, nil, func(done func()) { we.resErr(err, done) })
	}
}

// tellFailureLocked tells the watchers of es, entries of type t of the
// authorities told, and the WatchAll and glob collection watchers of t of
// those authorities, that their server's stream failed with cerr:
// each watcher of an entry gets ResourceError when no value is cached,
// AmbientError otherwise, in name order; each collection watcher one
// AmbientError naming the collection ("*", or the glob). These calls are
// not flow controlled.
func (c *Client) tellFailureLocked(t resources.ResourceType, es []*entry, told []*authority, cerr error) {
	slices.SortFunc(es, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
	for _, e := range es {
		rerr := c.resourceError(e.typ, e.name, cerr)
		for _, we := range e.watchers {
			if e.value == nil {
				c.scheduleLocked(we, nil, func(done func()) { we.resErr(rerr, done) })
			} else {
				c.scheduleLocked(we, nil, func(done func()) { we.ambErr(rerr, done) })
			}
		}
	}
	for _, a := range told {
		a.eachCollectionLocked(t.TypeURL(), func(name string, ws []*watchEntry) {
			werr := c.resourceError(t, name, cerr)
			for _, we := range ws {
				c.scheduleLocked(we, nil, func(done func()) { we.ambErr(werr, done) })
			}
		})
	}
}

// resourceError wraps err for delivery to a watcher of name.
func (c *Client) resourceError(typ resources.ResourceType, name string, err error) error {
	return &ResourceError{TypeURL: typ.TypeURL(), TypeName: typ.TypeName(), Name: name, NodeID: c.node.GetId(), Err: err}
}

// notFoundError is the error for watchers of a resource that does not exist.
func (c *Client) notFoundError(e *entry) error {
	return c.resourceError(e.typ, e.name, fmt.Errorf("%w: %s", ErrResourceNotFound, e.ext().dneReason))
}

// invalidError is the error for watchers of a resource whose last received
// version was NACKed.
func (c *Client) invalidError(e *entry) error {
	x := e.ext()
	return c.resourceError(e.typ, e.name, fmt.Errorf("%w: version %q rejected: %w", ErrResourceInvalid, x.nack.version, x.nack.err))
}
