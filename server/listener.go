// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/filterchain"
	"github.com/proxyless/xds/internal/serializer"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// servingListener is one Serve call: the user's listener, the watch of
// its Listener resource and of the RouteConfigurations it names, the
// serving mode and the chains of the Listener in use.
//
// The xDS client's callbacks and the accept loop meet under mu; the
// chains' grpc.Servers and drains run on goroutines of the server's wait
// group; mode changes are told on a serializer of the listener, never
// under mu.
type servingListener struct {
	// Initialized at creation time and read-only afterwards.
	s        *GRPCServer
	lis      net.Listener
	addr     *net.TCPAddr
	name     string // the Listener resource name
	modes    *serializer.Serializer
	cancel   context.CancelFunc // stops modes
	quit     chan struct{}      // closed by close
	done     chan struct{}      // closed when serve has cleaned up
	quitOnce sync.Once

	mu        sync.Mutex
	closed    bool                 // guarded by mu; no more watches, chains or modes
	mode      ServingMode          // guarded by mu
	modeErr   string               // guarded by mu; the error of the last NOT_SERVING told
	told      bool                 // guarded by mu; a mode was told
	current   *listenerConfig      // guarded by mu; the Listener in use; nil when not serving
	pending   *resources.Listener  // guarded by mu; a Listener waiting for its RouteConfigurations
	rds       map[string]*rdsWatch // guarded by mu; by RouteConfiguration name
	ldsCancel func()               // guarded by mu
	problems  bool                 // guarded by mu; the last update had configuration errors
}

// listenerConfig is a Listener in use: its chains, index-aligned with its
// filter chains (nil for a chain that never matches), and the default
// chain (nil if none).
type listenerConfig struct {
	lis    *resources.Listener
	chains []*chain
	def    *chain
}

func newServingListener(s *GRPCServer, lis net.Listener, addr *net.TCPAddr, name string) *servingListener {
	ctx, cancel := context.WithCancel(context.Background())
	return &servingListener{
		s: s, lis: lis, addr: addr, name: name,
		modes: serializer.New(ctx), cancel: cancel,
		quit: make(chan struct{}), done: make(chan struct{}),
		mode: ServingModeNotServing,
		rds:  make(map[string]*rdsWatch),
	}
}

// serve watches the Listener and accepts connections until lis fails or
// close is called, then cleans up.
func (sl *servingListener) serve() error {
	defer close(sl.done)
	sl.mu.Lock()
	sl.s.logger.Debug("watching the server's Listener", xdslog.KeyResource, sl.name, xdslog.KeyAddress, sl.addr.String())
	sl.ldsCancel = client.Watch(sl.s.c, resources.ListenerType, sl.name, ldsWatcher{sl})
	sl.mu.Unlock()

	err := sl.acceptLoop()

	sl.mu.Lock()
	sl.closed = true
	sl.ldsCancel()
	for _, w := range sl.rds {
		w.cancel()
	}
	sl.rds = nil
	sl.pending = nil
	// Stop: at once; GracefulStop: without a time limit; lis failed: the
	// drain grace time.
	grace := sl.s.opts.drainGrace
	stopped, hard := sl.s.stopping()
	if stopped {
		grace = 0
	}
	sl.retireLocked(sl.current, nil, grace, hard)
	sl.current = nil
	sl.mu.Unlock()
	sl.lis.Close()
	sl.cancel()
	<-sl.modes.Done()
	return err
}

// close makes serve return.
func (sl *servingListener) close() {
	sl.mu.Lock()
	sl.closed = true
	sl.mu.Unlock()
	sl.quitOnce.Do(func() { close(sl.quit) })
	sl.lis.Close()
}

// acceptLoop accepts connections and gives each to the chain that
// matches it, closing those of a listener that is not serving and those
// no chain matches (gRFC A36). It returns when lis fails for good: nil
// when close closed it.
func (sl *servingListener) acceptLoop() error {
	var tempDelay time.Duration
	for {
		raw, err := sl.lis.Accept()
		if err != nil {
			sl.mu.Lock()
			closed := sl.closed
			sl.mu.Unlock()
			if closed {
				return nil
			}
			var ne interface{ Temporary() bool }
			if !errors.As(err, &ne) || !ne.Temporary() {
				return err
			}
			// As grpc.Server.Serve: back off from 5 ms to 1 s.
			tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
			t := time.NewTimer(tempDelay)
			select {
			case <-t.C:
			case <-sl.quit:
			}
			t.Stop()
			continue
		}
		tempDelay = 0
		sl.mu.Lock()
		ch := sl.lookupLocked(raw)
		sl.mu.Unlock()
		if ch == nil || !ch.lis.deliver(&conn{Conn: raw, ch: ch}) {
			raw.Close()
		}
	}
}

// lookupLocked returns the chain of c, nil when not serving or when no
// chain matches.
func (sl *servingListener) lookupLocked(c net.Conn) *chain {
	cfg := sl.current
	if cfg == nil {
		return nil
	}
	local, ok1 := filterchain.AddrPort(c.LocalAddr())
	remote, ok2 := filterchain.AddrPort(c.RemoteAddr())
	if !ok1 || !ok2 {
		sl.s.logger.Debug("closing a connection without IP addresses", xdslog.KeyLocalAddress, c.LocalAddr(), xdslog.KeyRemoteAddress, c.RemoteAddr())
		return nil
	}
	if i := filterchain.Match(cfg.lis.Server.FilterChains, cfg.chains, local.Addr(), remote.Addr(), remote.Port()); i >= 0 {
		return cfg.chains[i]
	}
	if cfg.def == nil {
		sl.s.logger.Debug("closing a connection no filter chain matches", xdslog.KeyResource, cfg.lis.Name, xdslog.KeyLocalAddress, local, xdslog.KeyRemoteAddress, remote)
	}
	return cfg.def
}

// ldsWatcher receives the events of the Listener watch.
type ldsWatcher struct{ sl *servingListener }

func (w ldsWatcher) ResourceChanged(l *resources.Listener, done func()) {
	defer done()
	w.sl.listenerChanged(l)
}

func (w ldsWatcher) ResourceError(err error, done func()) {
	defer done()
	sl := w.sl
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		return
	}
	sl.notServingLocked(err)
}

// AmbientError keeps the Listener in use (a NACKed update, a lost
// connection to the management server).
func (w ldsWatcher) AmbientError(err error, done func()) {
	defer done()
	w.sl.s.logger.Warn("ambient error of the server's Listener; the Listener in use stays", xdslog.KeyResource, w.sl.name, xdslog.KeyError, err)
}

// listenerChanged takes a new Listener: one of the wrong side or address
// makes the listener not serving; a good one is applied once every
// RouteConfiguration it names has arrived or failed (gRFC A36).
func (sl *servingListener) listenerChanged(l *resources.Listener) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		return
	}
	if err := sl.checkAddress(l); err != nil {
		sl.notServingLocked(err)
		return
	}
	sl.s.logger.Debug("server Listener received", xdslog.KeyResource, l.Name)
	sl.pending = l
	sl.watchRDSLocked()
	sl.maybeApplyLocked()
}

// checkAddress returns why l cannot serve the listener: a client-side
// Listener, or another address (gRFC A36; a port of 0 matches any port,
// as in grpc-go).
func (sl *servingListener) checkAddress(l *resources.Listener) error {
	if l.Server == nil {
		return fmt.Errorf("xds: Listener %q is a client-side Listener (it has an api_listener), not the Listener of a server (node %q)", l.Name, sl.s.nodeID)
	}
	ip, _ := netip.AddrFromSlice(sl.addr.IP)
	ip = ip.Unmap()
	want, err := netip.ParseAddr(l.Server.Address)
	sameIP := err == nil && want.Unmap() == ip
	if err != nil {
		sameIP = l.Server.Address == sl.addr.IP.String()
	}
	if !sameIP || (l.Server.Port != 0 && int(l.Server.Port) != sl.addr.Port) {
		return fmt.Errorf("xds: the address of Listener %q, %s, is not the listening address %s (node %q)", l.Name,
			net.JoinHostPort(l.Server.Address, fmt.Sprint(l.Server.Port)), sl.addr, sl.s.nodeID)
	}
	return nil
}

// routeNames returns the RouteConfiguration names of l's chains.
func routeNames(l *resources.Listener) []string {
	if l == nil {
		return nil
	}
	var names []string
	add := func(fc *resources.FilterChain) {
		if fc != nil && fc.RouteConfigName != "" && !slices.Contains(names, fc.RouteConfigName) {
			names = append(names, fc.RouteConfigName)
		}
	}
	for i := range l.Server.FilterChains {
		add(&l.Server.FilterChains[i])
	}
	add(l.Server.DefaultFilterChain)
	return names
}

// watchRDSLocked watches the RouteConfigurations of the Listener in use
// and of the pending one, and no others.
func (sl *servingListener) watchRDSLocked() {
	var cur *resources.Listener
	if sl.current != nil {
		cur = sl.current.lis
	}
	want := append(routeNames(cur), routeNames(sl.pending)...)
	for name, w := range sl.rds {
		if !slices.Contains(want, name) {
			w.cancel()
			delete(sl.rds, name)
		}
	}
	for _, name := range want {
		if sl.rds[name] == nil {
			w := &rdsWatch{sl: sl, name: name}
			sl.rds[name] = w
			w.cancel = client.Watch(sl.s.c, resources.RouteConfigType, name, w)
		}
	}
}

// maybeApplyLocked applies the pending Listener once each of its
// RouteConfigurations has arrived or failed: chains unchanged from the
// Listener in use keep their connections; the others are new, and the
// chains that are gone are drained (gRFC A36). The listener is then
// serving.
func (sl *servingListener) maybeApplyLocked() {
	l := sl.pending
	if l == nil {
		return
	}
	for _, name := range routeNames(l) {
		if !sl.rds[name].received {
			return
		}
	}
	old := sl.current
	next := &listenerConfig{lis: l, chains: make([]*chain, len(l.Server.FilterChains))}
	var kept []*chain
	reuse := func(fc *resources.FilterChain) *chain {
		if old == nil {
			return nil
		}
		for _, ch := range append(slices.Clone(old.chains), old.def) {
			if ch != nil && !slices.Contains(kept, ch) && ch.fc.SameConfig(fc) {
				kept = append(kept, ch)
				return ch
			}
		}
		return nil
	}
	for i := range l.Server.FilterChains {
		fc := &l.Server.FilterChains[i]
		if fc.Match.Unsupported() != "" {
			continue // it never matches: nothing to serve
		}
		if next.chains[i] = reuse(fc); next.chains[i] == nil {
			next.chains[i] = sl.s.newChain(fc, filterchain.Label(fc, i), sl.addr, sl.routeTableLocked(fc))
		}
	}
	if fc := l.Server.DefaultFilterChain; fc != nil {
		if next.def = reuse(fc); next.def == nil {
			next.def = sl.s.newChain(fc, filterchain.Label(fc, -1), sl.addr, sl.routeTableLocked(fc))
		}
	}
	sl.retireLocked(old, kept, sl.s.opts.drainGrace, false)
	sl.current, sl.pending = next, nil
	sl.watchRDSLocked()
	sl.logProblemsLocked()
	sl.setModeLocked(ServingModeServing, nil)
}

// retireLocked drains the chains of cfg but those kept, for grace (zero:
// without limit; hard: not at all, they are stopped).
func (sl *servingListener) retireLocked(cfg *listenerConfig, kept []*chain, grace time.Duration, hard bool) {
	if cfg == nil {
		return
	}
	for _, ch := range append(slices.Clone(cfg.chains), cfg.def) {
		if ch != nil && !slices.Contains(kept, ch) {
			ch.retire(grace, hard)
		}
	}
}

// notServingLocked makes the listener not serving because of err: the
// chains in use are drained, and nothing is pending or watched but the
// Listener (gRFC A36).
func (sl *servingListener) notServingLocked(err error) {
	sl.retireLocked(sl.current, nil, sl.s.opts.drainGrace, false)
	sl.current, sl.pending = nil, nil
	sl.watchRDSLocked()
	sl.setModeLocked(ServingModeNotServing, err)
}

// setModeLocked records the mode and tells it, when it or (not serving)
// its error changed.
func (sl *servingListener) setModeLocked(mode ServingMode, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if sl.told && mode == sl.mode && msg == sl.modeErr {
		return
	}
	sl.told, sl.mode, sl.modeErr = true, mode, msg
	addr, cb, logger := net.Addr(sl.addr), sl.s.opts.modeCB, sl.s.logger
	sl.modes.Schedule(func() {
		switch {
		case cb != nil:
			cb(addr, mode, err)
		case mode == ServingModeServing:
			logger.Info("serving", xdslog.KeyAddress, addr.String())
		default:
			logger.Warn("not serving", xdslog.KeyAddress, addr.String(), xdslog.KeyError, err)
		}
	})
}

// routeTableLocked returns the route table of a chain of fc from its
// inline RouteConfiguration or the last result of its RDS watch.
func (sl *servingListener) routeTableLocked(fc *resources.FilterChain) *routeTable {
	s := sl.s
	if fc.InlineRouteConfig != nil {
		return buildRouteTable(fc.HTTPFilters, fc.InlineRouteConfig, s.auditors, s.nodeID)
	}
	w := sl.rds[fc.RouteConfigName]
	switch {
	case w == nil || !w.received:
		return errorTable(errNoRouteConfig, s.nodeID)
	case w.err != nil:
		return errorTable(w.err, s.nodeID)
	}
	return buildRouteTable(fc.HTTPFilters, w.rc, s.auditors, s.nodeID)
}

// logProblemsLocked logs what of the chains in use fails RPCs, at each
// update while there is any, and once when there is no more (gRFC A36
// "configuration error logging").
func (sl *servingListener) logProblemsLocked() {
	cfg := sl.current
	if cfg == nil {
		return
	}
	found := false
	for _, ch := range append(slices.Clone(cfg.chains), cfg.def) {
		if ch == nil {
			continue
		}
		if p := ch.routes.Load().problems(); p != "" {
			found = true
			sl.s.logger.Warn("configuration error: RPCs will fail with UNAVAILABLE", xdslog.KeyResource, cfg.lis.Name, xdslog.KeyFilterChain, ch.label, xdslog.KeyError, p)
		}
	}
	if sl.problems && !found {
		sl.s.logger.Warn("configuration errors resolved", xdslog.KeyResource, cfg.lis.Name)
	}
	sl.problems = found
}

// rdsWatch is the watch of one RouteConfiguration. Its callbacks act only
// while it is the listener's watch of its name.
type rdsWatch struct {
	sl     *servingListener // read-only
	name   string           // read-only
	cancel func()           // read-only once set, under sl.mu

	// Guarded by sl.mu.
	received bool                   // a value or an error arrived
	rc       *resources.RouteConfig // the last value; nil after an error
	err      error                  // the last resource error; nil after a value
}

var _ watcher.Watcher[*resources.RouteConfig] = (*rdsWatch)(nil)

func (w *rdsWatch) ResourceChanged(rc *resources.RouteConfig, done func()) {
	defer done()
	w.update(rc, nil)
}

// ResourceError: the RPCs of the chains that use the RouteConfiguration
// fail with UNAVAILABLE (gRFC A36).
func (w *rdsWatch) ResourceError(err error, done func()) {
	defer done()
	w.update(nil, err)
}

func (w *rdsWatch) AmbientError(err error, done func()) {
	defer done()
	w.sl.s.logger.Warn("ambient error of a RouteConfiguration of the server; the one in use stays", xdslog.KeyResource, w.name, xdslog.KeyError, err)
}

// update applies a new value or error: to the chains in use that name the
// RouteConfiguration at once (their existing connections included), then
// to the pending Listener's readiness.
func (w *rdsWatch) update(rc *resources.RouteConfig, err error) {
	sl := w.sl
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed || sl.rds[w.name] != w {
		return
	}
	w.received, w.rc, w.err = true, rc, err
	if cfg := sl.current; cfg != nil {
		changed := false
		for _, ch := range append(slices.Clone(cfg.chains), cfg.def) {
			if ch != nil && ch.fc.RouteConfigName == w.name {
				ch.routes.Store(sl.routeTableLocked(ch.fc))
				changed = true
			}
		}
		if changed {
			sl.logProblemsLocked()
		}
	}
	sl.maybeApplyLocked()
}
