// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"io"
	"net"
	"net/http"
	"sync"
)

// ConnectProxy is an HTTP CONNECT proxy on loopback for tests of gRFC A86:
// it answers each CONNECT request with 200 and relays bytes both ways
// between the client and the request's target, and records the targets
// it was asked for. Requests other than CONNECT get 405. Close it with
// Close, which waits for its goroutines.
type ConnectProxy struct {
	// Addr is its address, "127.0.0.1:PORT".
	Addr string

	srv *http.Server
	lis net.Listener
	wg  sync.WaitGroup // Serve and the relays

	mu      sync.Mutex
	targets []string
	conns   map[net.Conn]struct{}
	refuse  int // WithStatus: the status to answer, 0 for 200
	closed  bool
}

// StartConnectProxy starts a ConnectProxy on a free loopback port.
func StartConnectProxy() (*ConnectProxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ConnectProxy{Addr: lis.Addr().String(), lis: lis, conns: make(map[net.Conn]struct{})}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.srv.Serve(lis)
	}()
	return p, nil
}

// Refuse makes the proxy answer later CONNECT requests with status (for
// example http.StatusForbidden) instead of opening tunnels; 0 opens them
// again.
func (p *ConnectProxy) Refuse(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = status
}

// Targets returns the targets of the CONNECT requests so far, in order.
func (p *ConnectProxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// Close stops the proxy and closes every tunnel, and waits for its
// goroutines to end.
func (p *ConnectProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.srv.Close()
	p.wg.Wait()
}

// track records c as open, false when the proxy is closed (c is then
// closed).
func (p *ConnectProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *ConnectProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *ConnectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	refuse := p.refuse
	p.mu.Unlock()
	if refuse != 0 {
		http.Error(w, "refused by the test proxy", refuse)
		return
	}
	backend, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		backend.Close()
		return
	}
	if !p.track(client) || !p.track(backend) {
		client.Close()
		backend.Close()
		return
	}
	rw.WriteString("HTTP/1.1 200 OK\r\n\r\n")
	rw.Flush()
	// What the client sent after its request, already read.
	if n := rw.Reader.Buffered(); n > 0 {
		buf, _ := rw.Reader.Peek(n)
		backend.Write(buf)
	}
	p.wg.Add(2)
	relay := func(dst, src net.Conn) {
		defer p.wg.Done()
		io.Copy(dst, src) // until either side closes or fails
		p.untrack(dst)
		p.untrack(src)
	}
	go relay(backend, client)
	go relay(client, backend)
}
