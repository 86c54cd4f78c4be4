// SPDX-License-Identifier: Apache-2.0

// Package faultproxy is a TCP proxy on loopback that injects network
// faults between a client and a server, for tests of how a client rides
// out a flaky network: it forwards every connection it accepts to a
// target address, and on command resets every connection, resets each
// connection a fixed time after it opens, refuses new connections, or
// stalls the traffic (a black hole: nothing is lost, nothing arrives).
//
//	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
//	p := faultproxy.New(t, ms.Address())
//	// point the client at p.Addr() instead of ms.Address()
//	p.ResetEach(3 * time.Second) // a server that drops every connection after 3 s
//
// A reset closes both sides of a connection with SO_LINGER 0, so that each
// peer gets a TCP RST (ECONNRESET), as from a crashed middlebox, rather
// than an orderly FIN.
//
// It runs on real TCP, so it cannot run inside a testing/synctest bubble
// (whose goroutines must not block on network I/O); tests that use it run
// in real time and wait for its events (WaitForAccepted) rather than
// sleeping.
//
// # Concurrency
//
// All methods are safe for concurrent use. Close ends every connection
// and waits for every goroutine the proxy started.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from Addr to a target address, with
// faults injected on command. Create one with New or Start.
type Proxy struct {
	// Initialized at creation time and read-only afterwards.
	target string
	lis    net.Listener
	ctx    context.Context    // ends with Close: cancels dials to the target
	cancel context.CancelFunc // cancels ctx
	wg     sync.WaitGroup     // the accept loop and every connection's goroutines

	mu sync.Mutex
	// Guarded by mu.
	closed    bool
	conns     map[*conn]struct{} // open connections
	accepted  []time.Time        // when each connection was accepted, in order
	acceptedC chan struct{}      // closed and replaced when a connection is accepted
	resetEach time.Duration      // > 0: each connection is reset this long after it opens
	refuse    bool               // new connections are reset at once
	stalled   bool               // no byte is forwarded
	resumed   chan struct{}      // closed and replaced when stalled becomes false
}

// conn is one proxied connection: the client's side and the target's.
type conn struct {
	client, server net.Conn
	opened         time.Time
	gone           chan struct{} // closed when the connection is reset or closed

	// Guarded by Proxy.mu.
	timer *time.Timer // ResetEach's; nil when none
	done  bool        // reset or closed; gone is closed
}

// New starts a Proxy for a test: it listens on 127.0.0.1 (a free port)
// and forwards to target ("host:port"). It calls tb.Fatal when it cannot
// listen, and registers Close with tb.Cleanup.
func New(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := Start(target)
	if err != nil {
		tb.Fatalf("faultproxy: %v", err)
	}
	tb.Cleanup(p.Close)
	return p
}

// Start is New for programs without a testing.TB; the caller calls Close.
// It returns an error when it cannot listen on 127.0.0.1.
func Start(target string) (*Proxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:    target,
		lis:       lis,
		ctx:       ctx,
		cancel:    cancel,
		conns:     make(map[*conn]struct{}),
		acceptedC: make(chan struct{}),
		resumed:   make(chan struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the address clients connect to: "127.0.0.1:PORT". It stays
// the same until Close, whatever the faults.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

// Close stops listening, resets every connection and waits until every
// goroutine of the proxy has returned. Idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	open := p.takeConnsLocked()
	p.mu.Unlock()
	p.cancel()
	p.lis.Close()
	for _, c := range open {
		c.reset()
	}
	p.wg.Wait()
}

// ResetAll resets every open connection now. New connections are not
// affected.
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	open := p.takeConnsLocked()
	p.mu.Unlock()
	for _, c := range open {
		c.reset()
	}
}

// ResetEach makes every connection reset d after it was accepted: new
// ones, and the open ones (at once when they are older than d). Zero or
// negative turns it off for the open connections and the new ones.
func (p *Proxy) ResetEach(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetEach = max(d, 0)
	for c := range p.conns {
		p.armLocked(c)
	}
}

// Refuse makes the proxy reset every new connection as soon as it is
// accepted (on) or forward them again (off). The port stays bound, so a
// client sees its connection reset rather than refused by the kernel;
// open connections are not affected.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Stall stops forwarding bytes in both directions on every connection,
// open or new (on), or forwards them again (off): a black hole in which
// nothing is lost. Connections stay open while stalled; the peers' own
// timeouts (keepalives, deadlines) or a reset end them. Bytes already read
// when the stall began are delivered when it ends.
func (p *Proxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == on || p.closed {
		return
	}
	p.stalled = on
	if !on {
		close(p.resumed)
		p.resumed = make(chan struct{})
	}
}

// Accepted returns when each connection the proxy accepted was accepted,
// in order, refused ones included.
func (p *Proxy) Accepted() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.accepted...)
}

// OpenConns returns the number of connections open: accepted, and
// neither reset nor closed.
func (p *Proxy) OpenConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// WaitForAccepted blocks until the proxy has accepted at least n
// connections since it started, or ctx ends (its error is returned).
func (p *Proxy) WaitForAccepted(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		got, ch := len(p.accepted), p.acceptedC
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faultproxy: %d connections accepted, want %d: %w", got, n, ctx.Err())
		case <-ch:
		}
	}
}

// takeConnsLocked removes every open connection from p.conns, stopping
// their timers, and returns them, to be reset outside p.mu.
func (p *Proxy) takeConnsLocked() []*conn {
	open := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		p.removeLocked(c)
		open = append(open, c)
	}
	return open
}

// removeLocked forgets c: it is being reset or closed.
func (p *Proxy) removeLocked(c *conn) {
	delete(p.conns, c)
	if !c.done {
		c.done = true
		close(c.gone)
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// armLocked sets c's ResetEach timer for the current setting.
func (p *Proxy) armLocked(c *conn) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if p.resetEach <= 0 {
		return
	}
	c.timer = time.AfterFunc(time.Until(c.opened.Add(p.resetEach)), func() {
		p.mu.Lock()
		if c.done {
			p.mu.Unlock()
			return
		}
		p.removeLocked(c)
		p.mu.Unlock()
		c.reset()
	})
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.lis.Accept()
		if err != nil {
			return // closed; or failing (out of file descriptors): the test sees no new connection
		}
		p.mu.Lock()
		p.accepted = append(p.accepted, time.Now())
		close(p.acceptedC)
		p.acceptedC = make(chan struct{})
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if closed || refuse {
			resetConn(nc)
			continue
		}
		p.wg.Add(1) // the accept loop is counted: Close's Wait cannot be done
		go p.serve(nc)
	}
}

// serve connects nc to the target and forwards bytes both ways until
// either side ends or the connection is reset. Counted in p.wg.
func (p *Proxy) serve(nc net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	sc, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		resetConn(nc) // the target refused (or Close): so does the proxy
		return
	}
	c := &conn{client: nc, server: sc, opened: time.Now(), gone: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.reset()
		return
	}
	p.conns[c] = struct{}{}
	p.armLocked(c)
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.copy(c, sc, nc)
	}()
	go func() {
		defer wg.Done()
		p.copy(c, nc, sc)
	}()
	wg.Wait()
	p.mu.Lock()
	reset := c.done // someone else resets it
	if !reset {
		p.removeLocked(c)
	}
	p.mu.Unlock()
	if !reset {
		c.client.Close()
		c.server.Close()
	}
}

// copy forwards bytes of c from src to dst until src ends or either
// fails, holding them while the proxy is stalled. When src ends cleanly,
// dst's write side is closed (a half-close), as a plain TCP relay does.
func (p *Proxy) copy(c *conn, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitUnstalled(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close() // unblocks the other direction's Read
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				return
			}
			dst.Close() // unblocks the other direction's Read
			return
		}
	}
}

// waitUnstalled blocks while the proxy is stalled. It returns false when
// c was reset or closed meanwhile.
func (p *Proxy) waitUnstalled(c *conn) bool {
	for {
		p.mu.Lock()
		stalled, resumed, done := p.stalled, p.resumed, c.done
		p.mu.Unlock()
		if done {
			return false
		}
		if !stalled {
			return true
		}
		select {
		case <-resumed:
		case <-c.gone:
		}
	}
}

// reset closes both sides of c with a TCP RST.
func (c *conn) reset() {
	resetConn(c.client)
	resetConn(c.server)
}

// resetConn closes nc so that its peer gets a TCP RST: SO_LINGER 0 makes
// close(2) discard unsent data and send RST instead of FIN.
func resetConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	nc.Close()
}
