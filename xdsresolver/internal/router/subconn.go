// SPDX-License-Identifier: Apache-2.0

package router

import (
	"errors"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/internal/dataplane"
)

// errEjected is the error of an ejected endpoint's SubConns, which their
// policy may put in the RPCs it fails.
var errEjected = errors.New("endpoint ejected by outlier detection (gRFC A50)")

// subConn is a SubConn of a child whose priority has outlier detection
// (outlier.go) or sessions (session.go): the child sees it, the channel
// the SubConn it wraps (the picker unwraps it).
//
// r, c, ep, sess, addr and addrs are set at creation. listener, health and
// ejected are accessed under the router's childMu (the health listener
// calls into the child). The atomics are read by pickers.
type subConn struct {
	balancer.SubConn
	r     *router
	c     *child
	ep    *dataplane.OutlierEndpoint // outlier detection's endpoint; nil without, or when the address is not one
	od    *odGroup                   // the priority's outlier detection; nil without
	sess  *sessGroup                 // the priority's sessions; nil without
	addr  string                     // the SubConn's address
	addrs string                     // its endpoint's addresses, joined with ",", for session cookies

	listener func(balancer.SubConnState) // the child's health listener
	health   balancer.SubConnState       // the last health grpc reported
	ejected  bool

	ejectedNow atomic.Bool  // ejected, for pickers
	state      atomic.Int32 // the last connectivity.State grpc reported
	// orphan: the child shut the SubConn down while its endpoint was
	// DRAINING and sessions may still use it (gRFC A55): the router keeps
	// it, and shuts it down when sessions may no longer use it.
	orphan atomic.Bool
}

// newSubConn wraps sc, a SubConn of c for addrs, whose priority has the
// outlier detection group g and the sessions s (either may be nil); the
// caller holds mu.
func newSubConn(r *router, c *child, g *odGroup, s *sessGroup, sc balancer.SubConn, addrs []resolver.Address) *subConn {
	w := &subConn{SubConn: sc, r: r, c: c, sess: s, health: balancer.SubConnState{ConnectivityState: connectivity.Connecting}}
	w.state.Store(int32(connectivity.Idle))
	if len(addrs) == 0 {
		return w
	}
	w.addr = addrs[0].Addr
	if g != nil {
		if e := g.det.Endpoint(w.addr); e != nil {
			w.ep, w.od = e, g
			g.add(e, w)
			w.ejected = e.Ejected()
			w.ejectedNow.Store(w.ejected)
		}
	}
	if s != nil {
		w.addrs = w.addr
		if e := s.table.Entry(w.addr); e != nil {
			w.addrs = e.Addrs
			e.Conn.Store(w)
		}
	}
	return w
}

// RegisterHealthListener registers the child's health listener: the
// SubConn's health as grpc reports it, but TRANSIENT_FAILURE while the
// endpoint is ejected by outlier detection. grpc calls the listener it is
// given on its own goroutine; it runs under the router's childMu. The
// child calls this under childMu (from a state listener).
func (s *subConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	s.listener = l
	if l == nil {
		s.SubConn.RegisterHealthListener(nil)
		return
	}
	r, c := s.r, s.c
	s.SubConn.RegisterHealthListener(func(st balancer.SubConnState) {
		r.withChildren(func() {
			r.mu.Lock()
			gone := c.removed || r.closed
			r.mu.Unlock()
			if gone || s.orphan.Load() {
				return
			}
			s.health = st
			if !s.ejected && s.listener != nil {
				s.listener(st)
			}
		})
	})
}

// apply delivers an ejection or unejection; the caller holds childMu.
func (s *subConn) apply(eject bool) {
	if s.ejected == eject {
		return
	}
	s.ejected = eject
	s.ejectedNow.Store(eject)
	if s.listener == nil || s.orphan.Load() {
		return
	}
	if eject {
		s.listener(balancer.SubConnState{ConnectivityState: connectivity.TransientFailure, ConnectionError: errEjected})
		return
	}
	s.listener(s.health)
}

// Shutdown shuts the SubConn down, unless sessions may still use it: its
// endpoint is DRAINING, the cluster's override_host_status has DRAINING,
// and it is READY (gRFC A55). Then it becomes an orphan of the router,
// which shuts it down when that no longer holds (see sessGroup).
func (s *subConn) Shutdown() {
	if s.sess != nil && connectivity.State(s.state.Load()) == connectivity.Ready {
		if e := s.sess.table.Entry(s.addr); e != nil && e.Draining && e.Conn.Load() == s {
			s.orphan.Store(true)
			s.sess.adopt(s)
			return
		}
	}
	s.SubConn.Shutdown()
}

// stateChanged notes a connectivity state of the SubConn; the caller
// holds childMu. It returns whether the child is to hear of it: not when
// the SubConn is an orphan (which is shut down when it leaves READY).
func (s *subConn) stateChanged(st connectivity.State) bool {
	s.state.Store(int32(st))
	if st == connectivity.Shutdown {
		if s.ep != nil {
			s.r.mu.Lock()
			s.od.remove(s.ep, s)
			s.r.mu.Unlock()
		}
		if s.sess != nil {
			s.sess.forget(s)
		}
	}
	if !s.orphan.Load() {
		return true
	}
	if st != connectivity.Ready && st != connectivity.Shutdown {
		s.SubConn.Shutdown()
		s.r.mu.Lock()
		s.r.children.dirty = true // pickers may no longer use it
		s.r.mu.Unlock()
	}
	return false
}
