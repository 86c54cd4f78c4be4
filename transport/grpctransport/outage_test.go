// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// tcpProxy forwards TCP connections from its address to a backend. Down
// closes the listener and every connection (an outage); Up listens again
// on the same address.
type tcpProxy struct {
	t       *testing.T
	backend string
	addr    string

	mu    sync.Mutex
	lis   net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

func newTCPProxy(t *testing.T, backend string) *tcpProxy {
	p := &tcpProxy{t: t, backend: backend, addr: "127.0.0.1:0"}
	p.Up()
	t.Cleanup(p.Down)
	return p
}

// Up starts listening on the proxy's address.
func (p *tcpProxy) Up() {
	p.t.Helper()
	lis, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("net.Listen(%q): %v", p.addr, err)
	}
	p.mu.Lock()
	p.addr, p.lis = lis.Addr().String(), lis
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", p.backend)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(b, c); b.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, b); c.Close() }()
		}
	}()
}

// Down closes the listener and every proxied connection, and waits for
// the proxy's goroutines. It is idempotent.
func (p *tcpProxy) Down() {
	p.mu.Lock()
	if p.lis != nil {
		p.lis.Close()
		p.lis = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// TestClient_RecoversWithinNextBackoffStep is the client-level scenario of
// gRFC A57 / R-11.1 "one backoff" over real gRPC: the management server is
// unreachable for 10 s and comes back on the same address; the watcher
// sees the data changed during the outage within the client's next backoff
// step (≤ 8.5 s after the server is back), with the client's real
// 1 s × 1.6ⁿ schedule. It needs over 10 s of real time, so -short skips it.
func TestClient_RecoversWithinNextBackoffStep(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a 10 s outage in real time")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{1}}))
	proxy := newTCPProxy(t, ms.Address())

	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "test-node"}
	}`, proxy.addr))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	updates := make(chan *resources.Endpoints, 10)
	defer client.Watch(c, resources.EndpointsType, "eds-svc", watcher.Funcs[*resources.Endpoints]{
		OnChanged:       func(e *resources.Endpoints) { updates <- e },
		OnResourceError: func(error) {},
		OnAmbientError:  func(error) {},
	})()
	if _, err := nextUpdate(ctx, updates); err != nil {
		t.Fatalf("first update: %v", err)
	}

	proxy.Down()
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{2}}))
	sleepCtx(ctx, 10*time.Second)
	proxy.Up()
	back := time.Now()
	if _, err := nextUpdate(ctx, updates); err != nil {
		t.Fatalf("no update after the server came back: %v", err)
	}
	if d := time.Since(back); d > 8500*time.Millisecond {
		t.Fatalf("update arrived %v after the server came back, want <= 8.5s", d)
	}
	t.Logf("update arrived %v after the server came back", time.Since(back))
}

func nextUpdate[T any](ctx context.Context, ch <-chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, errors.New("timed out")
	}
}
