// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"
)

// Draining tests run in a synctest bubble, on an in-memory management
// server and an in-memory network, so that the drain grace time passes
// in fake time.

// pipeNet is an in-memory network: a net.Listener at a TCP address whose
// connections are those of its DialContext, over net.Pipe, with TCP
// addresses on both ends (the server matches filter chains by them).
type pipeNet struct {
	addr  *net.TCPAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	dials atomic.Int64
}

func newPipeNet(addr string) *pipeNet {
	return &pipeNet{addr: net.TCPAddrFromAddrPort(mustAddrPort(addr)), conns: make(chan net.Conn), done: make(chan struct{})}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return p.addr }

// DialContext connects to the listener from 10.0.0.2, a new port each
// time.
func (p *pipeNet) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	n := p.dials.Add(1)
	from := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 40000 + int(n)}
	c, s := net.Pipe()
	select {
	case p.conns <- &tcpPipe{Conn: s, local: p.addr, remote: from}:
		return &tcpPipe{Conn: c, local: from, remote: p.addr}, nil
	case <-p.done:
	case <-ctx.Done():
	}
	c.Close()
	s.Close()
	return nil, errors.New("pipeNet: connection refused")
}

// client returns an HTTP client of the network: HTTP/1.1 with
// keep-alives, or h2c (HTTP/2 with prior knowledge) when h2.
func (p *pipeNet) client(t *testing.T, h2 bool) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: p.DialContext}
	if h2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

type tcpPipe struct {
	net.Conn
	local, remote net.Addr
}

func (c *tcpPipe) LocalAddr() net.Addr  { return c.local }
func (c *tcpPipe) RemoteAddr() net.Addr { return c.remote }

// routesOnly is a plaintext chain whose only route serves paths under
// prefix: requests to other paths get 404 there.
func routesOnly(name, prefix string) *v3listenerpb.FilterChain {
	rc := &v3routepb.RouteConfiguration{Name: name, VirtualHosts: []*v3routepb.VirtualHost{{
		Name: "all", Domains: []string{"*"},
		Routes: []*v3routepb.Route{nonForwarding(&v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: prefix}})},
	}}}
	return testutil.ServerFilterChain(testutil.FilterChainOptions{Name: name, RouteConfig: rc})
}

// heldResult is the outcome of a held request.
type heldResult struct {
	resp *http.Response
	err  error
}

// startHeld sends GET /hold with hc and returns its result's channel,
// once the handler holds it.
func startHeld(t *testing.T, ts *testServer, hc *http.Client, url string) (<-chan heldResult, func()) {
	t.Helper()
	arrived, release := ts.h.hold()
	res := make(chan heldResult, 1)
	go func() {
		resp, err := hc.Get(url + "/hold")
		if err == nil {
			resp.Body.Close()
		}
		res <- heldResult{resp, err}
	}()
	select {
	case <-arrived:
	case r := <-res:
		release()
		t.Fatalf("GET /hold ended before the handler held it: %v, %v", r.resp, r.err)
	}
	return res, release
}

// TestServer_DrainOnUpdate checks draining on a Listener update that
// changes the chain (gRFC A36; Envoy drains the connections of changed
// filter chains): over HTTP/1.1 the idle connection is closed and the
// request in flight finishes, answered with "Connection: close"; over
// HTTP/2 the connection gets a GOAWAY and the request in flight
// finishes; in both, the next request goes on a new connection to the
// new chain. Nothing fails.
func TestServer_DrainOnUpdate(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "h2c"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newInMemoryEnv(t)
				pn := newPipeNet("10.0.0.1:8080")
				var opts []xdshttp.ServerOption
				if h2 {
					p := new(http.Protocols)
					p.SetHTTP1(true)
					p.SetUnencryptedHTTP2(true)
					opts = append(opts, xdshttp.WithHTTPServer(&http.Server{Protocols: p}))
				}
				ts := e.startServer(t, pn, opts...)
				e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(routesOnly("old", "/"))}})
				ts.waitMode(t, xdshttp.ServingModeServing)
				hc := pn.client(t, h2)
				url := "http://" + ts.addr
				mustGet(t, hc, url+"/x", http.StatusOK) // an idle connection of the old chain
				held, release := startHeld(t, ts, hc, url)
				dialsBefore := pn.dials.Load()

				e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(routesOnly("new", "/hold"))}})
				synctest.Wait()
				r := mustGet(t, hc, url+"/x", http.StatusNotFound) // the new chain's routes
				if r.code != http.StatusNotFound {
					t.Fatalf("GET /x after the update: %d", r.code)
				}
				if n := pn.dials.Load(); n <= dialsBefore {
					t.Errorf("the request after the update went on an old connection (%d dials, %d before)", n, dialsBefore)
				}
				ts.noModeChange(t)

				release()
				hr := <-held
				if hr.err != nil {
					t.Fatalf("the request in flight during the drain failed: %v", hr.err)
				}
				if hr.resp.StatusCode != http.StatusOK {
					t.Errorf("the request in flight: %d, want 200", hr.resp.StatusCode)
				}
				if !h2 && !hr.resp.Close {
					t.Error("the HTTP/1.1 response in flight during the drain has no Connection: close")
				}
			})
		})
	}
}

// TestServer_DrainGraceTime checks that the connections of a replaced
// chain are closed when the drain grace time passes (gRFC A36): a
// request held past it fails, one finished before it succeeds.
func TestServer_DrainGraceTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = time.Minute
		e := newInMemoryEnv(t)
		pn := newPipeNet("10.0.0.1:8080")
		ts := e.startServer(t, pn, xdshttp.WithDrainGraceTime(grace))
		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(routesOnly("a", "/"))}})
		ts.waitMode(t, xdshttp.ServingModeServing)
		hc := pn.client(t, false)
		url := "http://" + ts.addr
		held, release := startHeld(t, ts, hc, url)
		defer release()

		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(routesOnly("b", "/"))}})
		time.Sleep(grace - time.Second)
		synctest.Wait()
		select {
		case r := <-held:
			t.Fatalf("the held request ended before the grace time: %v", r.err)
		default:
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case r := <-held:
			if r.err == nil {
				t.Fatalf("the held request succeeded (%d), want it cut when the grace time passed", r.resp.StatusCode)
			}
		default:
			t.Fatal("the held request still runs after the grace time")
		}
		mustGet(t, hc, url+"/", http.StatusOK) // the new chain serves
	})
}

// TestServer_UnchangedChainKeepsConnections checks that a Listener
// update that keeps a chain unchanged keeps its connections (as Envoy):
// the next request goes on the same connection.
func TestServer_UnchangedChainKeepsConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newInMemoryEnv(t)
		pn := newPipeNet("10.0.0.1:8080")
		ts := e.startServer(t, pn)
		chain := routesOnly("a", "/")
		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener(chain)}})
		ts.waitMode(t, xdshttp.ServingModeServing)
		hc := pn.client(t, false)
		url := "http://" + ts.addr
		mustGet(t, hc, url+"/", http.StatusOK)

		l := ts.listener(chain, routesOnly("other", "/other"))
		l.FilterChains[1].FilterChainMatch = &v3listenerpb.FilterChainMatch{SourcePorts: []uint32{1}}
		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{l}})
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		mustGet(t, hc, url+"/", http.StatusOK)
		if n := pn.dials.Load(); n != 1 {
			t.Errorf("%d connections, want 1: the unchanged chain keeps its connection", n)
		}
	})
}

// TestServer_NotServingDrains checks that the deletion of the Listener
// drains the connections (gRFC A36): the request in flight finishes,
// later connections are closed at once.
func TestServer_NotServingDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newInMemoryEnv(t)
		pn := newPipeNet("10.0.0.1:8080")
		ts := e.startServer(t, pn)
		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
		ts.waitMode(t, xdshttp.ServingModeServing)
		hc := pn.client(t, false)
		url := "http://" + ts.addr
		held, release := startHeld(t, ts, hc, url)
		e.update(t, testutil.Resources{})
		ts.waitMode(t, xdshttp.ServingModeNotServing)
		synctest.Wait()
		if r, err := get(t, hc, url+"/", ""); err == nil {
			t.Errorf("GET while not serving: %d, want the connection closed", r.code)
		}
		release()
		if r := <-held; r.err != nil || r.resp.StatusCode != http.StatusOK {
			t.Errorf("the request in flight when the Listener was deleted: %v, %v; want 200", r.resp, r.err)
		}
	})
}

// TestServer_ShutdownAndClose checks Shutdown and Close (http.Server's
// semantics): Shutdown waits for the request in flight and makes Serve
// return http.ErrServerClosed; a Shutdown whose context ends first
// returns its error, and Close then cuts the request; Serve after either
// returns http.ErrServerClosed.
func TestServer_ShutdownAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newInMemoryEnv(t)
		pn := newPipeNet("10.0.0.1:8080")
		ts := e.startServer(t, pn)
		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
		ts.waitMode(t, xdshttp.ServingModeServing)
		hc := pn.client(t, false)
		url := "http://" + ts.addr
		held, release := startHeld(t, ts, hc, url)

		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		shut := make(chan error, 1)
		go func() { shut <- ts.srv.Shutdown(ctx) }()
		synctest.Wait()
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned (%v) with a request in flight", err)
		default:
		}
		release()
		if r := <-held; r.err != nil || r.resp.StatusCode != http.StatusOK {
			t.Fatalf("the request in flight during Shutdown: %v, %v; want 200", r.resp, r.err)
		}
		if err := <-shut; err != nil {
			t.Fatalf("Shutdown() = %v, want nil", err)
		}
		if err := ts.srv.Serve(newPipeNet("10.0.0.1:8081")); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve after Shutdown = %v, want http.ErrServerClosed", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		e := newInMemoryEnv(t)
		pn := newPipeNet("10.0.0.1:8080")
		ts := e.startServer(t, pn)
		e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
		ts.waitMode(t, xdshttp.ServingModeServing)
		hc := pn.client(t, false)
		held, release := startHeld(t, ts, hc, "http://"+ts.addr)
		defer release()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown() = %v with a request held past its context, want context.DeadlineExceeded", err)
		}
		ts.srv.Close()
		if r := <-held; r.err == nil {
			t.Fatalf("the held request succeeded (%d) after Close, want it cut", r.resp.StatusCode)
		}
	})
}
