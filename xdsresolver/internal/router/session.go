// SPDX-License-Identifier: Apache-2.0

package router

import (
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/proxyless/xds/internal/dataplane"
)

// Stateful session affinity (gRFC A55, A60): when the configuration has
// the stateful session filter, every SubConn of its priorities is wrapped
// (subConn), so that the router knows the SubConn of each address and its
// state (a dataplane.SessionTable per priority). A DRAINING endpoint is
// not given to the endpoint policies, but when the cluster's
// override_host_status has DRAINING, its READY SubConn is kept (the
// policy's Shutdown is not passed on) while the endpoint stays DRAINING
// and the connection READY: the sessions it has go on, no new session
// comes to it.

// sessGroup is what the router knows for sessions of one priority of a
// leaf cluster: its addresses, their SubConns, and the SubConns it keeps
// for DRAINING endpoints (orphans). Safe for concurrent use: pickers read
// the table without lock.
type sessGroup struct {
	table *dataplane.SessionTable[subConn]

	mu      sync.Mutex
	orphans map[*subConn]bool
}

func newSessGroup() *sessGroup {
	return &sessGroup{table: dataplane.NewSessionTable[subConn](), orphans: make(map[*subConn]bool)}
}

// update makes hosts the addresses of g, keeping the SubConns of those
// that stay, and shuts down the orphans sessions may no longer use.
func (g *sessGroup) update(hosts []dataplane.SessionHost) {
	m := g.table.Update(hosts)
	g.mu.Lock()
	var drop []*subConn
	for sc := range g.orphans {
		if e := m[sc.addr]; e == nil || !e.Draining || e.Conn.Load() != sc {
			drop = append(drop, sc)
			delete(g.orphans, sc)
		}
	}
	g.mu.Unlock()
	for _, sc := range drop {
		sc.SubConn.Shutdown()
	}
}

// adopt keeps sc, whose child shut it down, for sessions.
func (g *sessGroup) adopt(sc *subConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.orphans[sc] = true
}

// forget notes that sc is shut down.
func (g *sessGroup) forget(sc *subConn) {
	if e := g.table.Entry(sc.addr); e != nil {
		e.Conn.CompareAndSwap(sc, nil)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.orphans, sc)
}

// close shuts down the orphans.
func (g *sessGroup) close() {
	g.mu.Lock()
	drop := g.orphans
	g.orphans = make(map[*subConn]bool)
	g.mu.Unlock()
	for sc := range drop {
		sc.SubConn.Shutdown()
	}
}

// pick picks for a session pinned to addrs (gRFC A55): the first READY
// SubConn (not ejected) of an allowed address; else, when one is IDLE, it
// asks it to connect and the RPC waits, as when one is CONNECTING; else
// ok is false: the endpoint policy picks.
func (g *sessGroup) pick(addrs []string) (sc *subConn, e *dataplane.SessionEntry[subConn], err error, ok bool) {
	var idle *subConn
	connecting := false
	for _, a := range addrs {
		en := g.table.Entry(a)
		if en == nil || !en.Allowed {
			continue
		}
		s := en.Conn.Load()
		if s == nil || s.ejectedNow.Load() {
			continue
		}
		switch connectivity.State(s.state.Load()) {
		case connectivity.Ready:
			return s, en, nil, true
		case connectivity.Idle:
			if idle == nil {
				idle = s
			}
		case connectivity.Connecting:
			connecting = true
		}
	}
	if idle != nil {
		idle.Connect()
		return nil, nil, balancer.ErrNoSubConnAvailable, true
	}
	if connecting {
		return nil, nil, balancer.ErrNoSubConnAvailable, true
	}
	return nil, nil, nil, false
}

// updateSessLocked makes the sessions of p follow its hosts, creating
// them if needed; the caller holds mu.
func (r *router) updateSessLocked(p *Priority) {
	k := p.GroupKey()
	g := r.sess[k]
	if g == nil {
		g = newSessGroup()
		r.sess[k] = g
	}
	g.update(p.Hosts)
}
