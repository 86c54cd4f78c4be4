// SPDX-License-Identifier: Apache-2.0

// Package serving is what an xDS-enabled server does with one listening
// socket (gRFC A36, R-26): it watches the socket's Listener resource and
// the RouteConfigurations its filter chains name, checks the Listener's
// address, keeps the serving mode and tells its changes, accepts
// connections and gives each to the filter chain that matches it
// (package filterchain), or closes it while not serving, and replaces the
// chains on updates, draining those an update changes or removes. What
// serves a chain's connections is the protocol's: the gRPC server
// (package server) runs a grpc.Server per chain, the net/http server
// (package xdshttp) an http.Server; both plug in through Chain.
package serving

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/connectivity"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/filterchain"
	"github.com/proxyless/xds/internal/serializer"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// Chain serves the connections of one filter chain of the Listener in
// use. A Listener keeps a chain across updates that leave its filter
// chain unchanged (FilterChain.SameConfig), and retires it when an update
// changes or removes it, or when the listener stops serving.
type Chain interface {
	// Deliver hands the chain a connection the accept loop matched to it;
	// false when the chain takes no more connections (it is retired), and
	// the caller closes conn.
	Deliver(conn net.Conn) bool
	// SetRoutes gives the chain a new route table, for its next requests
	// on every connection (an RDS update).
	SetRoutes(*serverroutes.Table)
	// Retire drains the chain: no new connections; its connections are
	// told to go away and may finish their requests for grace (zero:
	// without limit), after which they are closed; hard closes them at
	// once. It is called once, under the Listener's lock, and must not
	// block.
	Retire(grace time.Duration, hard bool)
}

// Options configure a Listener.
type Options struct {
	// Client is the xDS client whose watches give the Listener and
	// RouteConfigurations.
	Client *client.Client
	// Name is the Listener resource's name.
	Name string
	// NodeID names the node in errors.
	NodeID string
	// Logger logs updates (Debug), configuration errors and mode changes
	// without a callback.
	Logger *slog.Logger
	// DrainGrace is the drain grace time of retired chains.
	DrainGrace time.Duration
	// ModeCallback is told each serving mode change, serially, on a
	// goroutine of the Listener; nil: the changes are logged.
	ModeCallback func(addr net.Addr, mode connectivity.ServingMode, err error)
	// Auditors are the audit logger builders by name, for the RBAC
	// filters of the route tables.
	Auditors map[string]audit.LoggerBuilder
	// NewChain starts the chain of fc, labelled label in messages
	// (filterchain.Label), with its first route table. Called under the
	// Listener's lock; must not block.
	NewChain func(fc *resources.FilterChain, label string, routes *serverroutes.Table) Chain
	// Stopping reports whether the server is stopping, and whether hard:
	// when Serve ends, its chains are then retired without a grace time
	// (graceful) or closed (hard), else with DrainGrace.
	Stopping func() (stopped, hard bool)
	// Failure says how the requests fail on a configuration error, for
	// the log: "RPCs will fail with UNAVAILABLE".
	Failure string
}

// Listener is one listening socket of an xDS-enabled server: the user's
// net.Listener, the watch of its Listener resource and of the
// RouteConfigurations it names, the serving mode and the chains of the
// Listener in use.
//
// The xDS client's callbacks and the accept loop meet under mu; mode
// changes are told on a serializer of the listener, never under mu.
type Listener struct {
	// Initialized at creation time and read-only afterwards.
	o        Options
	lis      net.Listener
	addr     *net.TCPAddr
	modes    *serializer.Serializer
	cancel   context.CancelFunc // stops modes
	quit     chan struct{}      // closed by Close
	done     chan struct{}      // closed when Serve has cleaned up
	quitOnce sync.Once

	mu        sync.Mutex
	closed    bool                     // guarded by mu; no more watches, chains or modes
	mode      connectivity.ServingMode // guarded by mu
	modeErr   string                   // guarded by mu; the error of the last NOT_SERVING told
	told      bool                     // guarded by mu; a mode was told
	current   *listenerConfig          // guarded by mu; the Listener in use; nil when not serving
	pending   *resources.Listener      // guarded by mu; a Listener waiting for its RouteConfigurations
	rds       map[string]*rdsWatch     // guarded by mu; by RouteConfiguration name
	ldsCancel func()                   // guarded by mu
	problems  bool                     // guarded by mu; the last update had configuration errors
}

// chainEntry is a chain of the Listener in use, with what the Listener
// knows of it. Guarded by the Listener's mu.
type chainEntry struct {
	ch     Chain
	fc     *resources.FilterChain
	label  string              // names the chain in messages
	routes *serverroutes.Table // the chain's current route table
}

// listenerConfig is a Listener in use: its chains, index-aligned with its
// filter chains (nil for a chain that never matches), and the default
// chain (nil if none).
type listenerConfig struct {
	lis    *resources.Listener
	chains []*chainEntry
	def    *chainEntry
}

// all returns the chains of cfg, the default one last.
func (cfg *listenerConfig) all() []*chainEntry {
	out := make([]*chainEntry, 0, len(cfg.chains)+1)
	for _, e := range append(slices.Clone(cfg.chains), cfg.def) {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// New returns the Listener of lis, whose address is addr, configured by
// o. It does nothing until Serve.
func New(lis net.Listener, addr *net.TCPAddr, o Options) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &Listener{
		o: o, lis: lis, addr: addr,
		modes: serializer.New(ctx), cancel: cancel,
		quit: make(chan struct{}), done: make(chan struct{}),
		mode: connectivity.ServingModeNotServing,
		rds:  make(map[string]*rdsWatch),
	}
}

// Addr returns the listening address.
func (sl *Listener) Addr() *net.TCPAddr { return sl.addr }

// Done is closed when Serve has returned.
func (sl *Listener) Done() <-chan struct{} { return sl.done }

// Serve watches the Listener and accepts connections until lis fails or
// Close is called, then cleans up: it stops the watches, retires the
// chains (see Options.Stopping), closes lis and waits for the mode
// callbacks. It returns nil after Close, the error of lis.Accept
// otherwise.
func (sl *Listener) Serve() error {
	defer close(sl.done)
	sl.mu.Lock()
	sl.o.Logger.Debug("watching the server's Listener", xdslog.KeyResource, sl.o.Name, xdslog.KeyAddress, sl.addr.String())
	sl.ldsCancel = client.Watch(sl.o.Client, resources.ListenerType, sl.o.Name, ldsWatcher{sl})
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
	// Stopped: at once; gracefully: without a time limit; lis failed: the
	// drain grace time.
	grace := sl.o.DrainGrace
	stopped, hard := sl.o.Stopping()
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

// Close makes Serve return.
func (sl *Listener) Close() {
	sl.mu.Lock()
	sl.closed = true
	sl.mu.Unlock()
	sl.quitOnce.Do(func() { close(sl.quit) })
	sl.lis.Close()
}

// acceptLoop accepts connections and gives each to the chain that
// matches it, closing those of a listener that is not serving and those
// no chain matches (gRFC A36). It returns when lis fails for good: nil
// when Close closed it.
func (sl *Listener) acceptLoop() error {
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
			// As grpc.Server.Serve and http.Server.Serve: back off from
			// 5 ms to 1 s.
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
		if ch == nil || !ch.Deliver(raw) {
			raw.Close()
		}
	}
}

// lookupLocked returns the chain of c, nil when not serving or when no
// chain matches.
func (sl *Listener) lookupLocked(c net.Conn) Chain {
	cfg := sl.current
	if cfg == nil {
		return nil
	}
	local, ok1 := filterchain.AddrPort(c.LocalAddr())
	remote, ok2 := filterchain.AddrPort(c.RemoteAddr())
	if !ok1 || !ok2 {
		sl.o.Logger.Debug("closing a connection without IP addresses", xdslog.KeyLocalAddress, c.LocalAddr(), xdslog.KeyRemoteAddress, c.RemoteAddr())
		return nil
	}
	if i := filterchain.Match(cfg.lis.Server.FilterChains, cfg.chains, local.Addr(), remote.Addr(), remote.Port()); i >= 0 {
		return cfg.chains[i].ch
	}
	if cfg.def == nil {
		sl.o.Logger.Debug("closing a connection no filter chain matches", xdslog.KeyResource, cfg.lis.Name, xdslog.KeyLocalAddress, local, xdslog.KeyRemoteAddress, remote)
		return nil
	}
	return cfg.def.ch
}

// ldsWatcher receives the events of the Listener watch.
type ldsWatcher struct{ sl *Listener }

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
	w.sl.o.Logger.Warn("ambient error of the server's Listener; the Listener in use stays", xdslog.KeyResource, w.sl.o.Name, xdslog.KeyError, err)
}

// listenerChanged takes a new Listener: one of the wrong side or address
// makes the listener not serving; a good one is applied once every
// RouteConfiguration it names has arrived or failed (gRFC A36).
func (sl *Listener) listenerChanged(l *resources.Listener) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		return
	}
	if err := sl.checkAddress(l); err != nil {
		sl.notServingLocked(err)
		return
	}
	sl.o.Logger.Debug("server Listener received", xdslog.KeyResource, l.Name)
	sl.pending = l
	sl.watchRDSLocked()
	sl.maybeApplyLocked()
}

// checkAddress returns why l cannot serve the listener: a client-side
// Listener, or another address (gRFC A36; a port of 0 matches any port,
// as in grpc-go).
func (sl *Listener) checkAddress(l *resources.Listener) error {
	if l.Server == nil {
		return fmt.Errorf("xds: Listener %q is a client-side Listener (it has an api_listener), not the Listener of a server (node %q)", l.Name, sl.o.NodeID)
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
			net.JoinHostPort(l.Server.Address, fmt.Sprint(l.Server.Port)), sl.addr, sl.o.NodeID)
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
func (sl *Listener) watchRDSLocked() {
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
			w.cancel = client.Watch(sl.o.Client, resources.RouteConfigType, name, w)
		}
	}
}

// maybeApplyLocked applies the pending Listener once each of its
// RouteConfigurations has arrived or failed: chains unchanged from the
// Listener in use keep their connections; the others are new, and the
// chains that are gone are drained (gRFC A36). The listener is then
// serving.
func (sl *Listener) maybeApplyLocked() {
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
	next := &listenerConfig{lis: l, chains: make([]*chainEntry, len(l.Server.FilterChains))}
	var kept []*chainEntry
	reuse := func(fc *resources.FilterChain) *chainEntry {
		if old == nil {
			return nil
		}
		for _, e := range old.all() {
			if !slices.Contains(kept, e) && e.fc.SameConfig(fc) {
				kept = append(kept, e)
				return e
			}
		}
		return nil
	}
	start := func(fc *resources.FilterChain, label string) *chainEntry {
		rt := sl.routeTableLocked(fc)
		return &chainEntry{ch: sl.o.NewChain(fc, label, rt), fc: fc, label: label, routes: rt}
	}
	for i := range l.Server.FilterChains {
		fc := &l.Server.FilterChains[i]
		if fc.Match.Unsupported() != "" {
			continue // it never matches: nothing to serve
		}
		if next.chains[i] = reuse(fc); next.chains[i] == nil {
			next.chains[i] = start(fc, filterchain.Label(fc, i))
		}
	}
	if fc := l.Server.DefaultFilterChain; fc != nil {
		if next.def = reuse(fc); next.def == nil {
			next.def = start(fc, filterchain.Label(fc, -1))
		}
	}
	sl.retireLocked(old, kept, sl.o.DrainGrace, false)
	sl.current, sl.pending = next, nil
	sl.watchRDSLocked()
	sl.logProblemsLocked()
	sl.setModeLocked(connectivity.ServingModeServing, nil)
}

// retireLocked drains the chains of cfg but those kept, for grace (zero:
// without limit; hard: not at all, they are closed).
func (sl *Listener) retireLocked(cfg *listenerConfig, kept []*chainEntry, grace time.Duration, hard bool) {
	if cfg == nil {
		return
	}
	for _, e := range cfg.all() {
		if !slices.Contains(kept, e) {
			e.ch.Retire(grace, hard)
		}
	}
}

// notServingLocked makes the listener not serving because of err: the
// chains in use are drained, and nothing is pending or watched but the
// Listener (gRFC A36).
func (sl *Listener) notServingLocked(err error) {
	sl.retireLocked(sl.current, nil, sl.o.DrainGrace, false)
	sl.current, sl.pending = nil, nil
	sl.watchRDSLocked()
	sl.setModeLocked(connectivity.ServingModeNotServing, err)
}

// setModeLocked records the mode and tells it, when it or (not serving)
// its error changed.
func (sl *Listener) setModeLocked(mode connectivity.ServingMode, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if sl.told && mode == sl.mode && msg == sl.modeErr {
		return
	}
	sl.told, sl.mode, sl.modeErr = true, mode, msg
	addr, cb, logger := net.Addr(sl.addr), sl.o.ModeCallback, sl.o.Logger
	sl.modes.Schedule(func() {
		switch {
		case cb != nil:
			cb(addr, mode, err)
		case mode == connectivity.ServingModeServing:
			logger.Info("serving", xdslog.KeyAddress, addr.String())
		default:
			logger.Warn("not serving", xdslog.KeyAddress, addr.String(), xdslog.KeyError, err)
		}
	})
}

// errNoRouteConfig is the error of a chain whose RouteConfiguration has
// not been received; it never reaches a request (a Listener is applied
// once its RouteConfigurations have arrived or failed).
var errNoRouteConfig = errors.New("no RouteConfiguration yet")

// routeTableLocked returns the route table of a chain of fc from its
// inline RouteConfiguration or the last result of its RDS watch.
func (sl *Listener) routeTableLocked(fc *resources.FilterChain) *serverroutes.Table {
	if fc.InlineRouteConfig != nil {
		return serverroutes.Build(fc.HTTPFilters, fc.InlineRouteConfig, sl.o.Auditors)
	}
	w := sl.rds[fc.RouteConfigName]
	switch {
	case w == nil || !w.received:
		return serverroutes.Error(errNoRouteConfig)
	case w.err != nil:
		return serverroutes.Error(w.err)
	}
	return serverroutes.Build(fc.HTTPFilters, w.rc, sl.o.Auditors)
}

// logProblemsLocked logs what of the chains in use fails requests, at
// each update while there is any, and once when there is no more (gRFC
// A36 "configuration error logging").
func (sl *Listener) logProblemsLocked() {
	cfg := sl.current
	if cfg == nil {
		return
	}
	found := false
	for _, e := range cfg.all() {
		if p := e.routes.Problems(); p != "" {
			found = true
			sl.o.Logger.Warn("configuration error: "+sl.o.Failure, xdslog.KeyResource, cfg.lis.Name, xdslog.KeyFilterChain, e.label, xdslog.KeyError, p)
		}
	}
	if sl.problems && !found {
		sl.o.Logger.Warn("configuration errors resolved", xdslog.KeyResource, cfg.lis.Name)
	}
	sl.problems = found
}

// rdsWatch is the watch of one RouteConfiguration. Its callbacks act only
// while it is the listener's watch of its name.
type rdsWatch struct {
	sl     *Listener // read-only
	name   string    // read-only
	cancel func()    // read-only once set, under sl.mu

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

// ResourceError: the requests of the chains that use the
// RouteConfiguration fail (gRFC A36).
func (w *rdsWatch) ResourceError(err error, done func()) {
	defer done()
	w.update(nil, err)
}

func (w *rdsWatch) AmbientError(err error, done func()) {
	defer done()
	w.sl.o.Logger.Warn("ambient error of a RouteConfiguration of the server; the one in use stays", xdslog.KeyResource, w.name, xdslog.KeyError, err)
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
		for _, e := range cfg.all() {
			if e.fc.RouteConfigName == w.name {
				e.routes = sl.routeTableLocked(e.fc)
				e.ch.SetRoutes(e.routes)
				changed = true
			}
		}
		if changed {
			sl.logProblemsLocked()
		}
	}
	sl.maybeApplyLocked()
}

// ConnListener is a net.Listener whose connections are those a Listener
// delivered to one chain (Chain.Deliver): the listener a chain gives the
// protocol's server (grpc.Server.Serve, http.Server.Serve).
type ConnListener struct {
	addr      net.Addr
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

// NewConnListener returns a ConnListener whose Addr is addr.
func NewConnListener(addr net.Addr) *ConnListener {
	return &ConnListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept returns the next connection, or net.ErrClosed once closed.
func (l *ConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close makes Accept fail; it is idempotent.
func (l *ConnListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr returns the address of the server's listener.
func (l *ConnListener) Addr() net.Addr { return l.addr }

// Deliver hands c to the server accepting on l; false when l is closed
// (the caller closes c). It blocks until the server accepts c.
func (l *ConnListener) Deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}
