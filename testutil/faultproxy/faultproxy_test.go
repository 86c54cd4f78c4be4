// SPDX-License-Identifier: Apache-2.0

package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil/faultproxy"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	defaultTestTimeout      = 10 * time.Second
	defaultTestShortTimeout = 50 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// echoServer is a TCP echo server on loopback, stopped at the end of the
// test.
func echoServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return lis.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, defaultTestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echo writes msg on c and returns what comes back, or an error; it waits
// at most d.
func echo(c net.Conn, msg string, d time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, len(msg))
	_, err := io.ReadFull(c, b)
	return string(b), err
}

// wantReset fails the test unless c ends with a reset (or, when the reset
// raced with nothing to read, an EOF) within the default timeout.
func wantReset(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(defaultTestTimeout))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("read after the reset: %v, want ECONNRESET", err)
	}
}

// TestForward checks that bytes go both ways and that the connection is
// counted.
func TestForward(t *testing.T) {
	ctx := testContext(t)
	p := faultproxy.New(t, echoServer(t))
	c := dial(t, p.Addr())
	if got, err := echo(c, "hello", defaultTestTimeout); err != nil || got != "hello" {
		t.Fatalf("echo = %q, %v; want hello", got, err)
	}
	if err := p.WaitForAccepted(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := p.OpenConns(); n != 1 {
		t.Fatalf("OpenConns() = %d, want 1", n)
	}
}

// TestResetAll checks that every open connection is reset, and that new
// ones are forwarded.
func TestResetAll(t *testing.T) {
	p := faultproxy.New(t, echoServer(t))
	c1, c2 := dial(t, p.Addr()), dial(t, p.Addr())
	for _, c := range []net.Conn{c1, c2} {
		if _, err := echo(c, "x", defaultTestTimeout); err != nil {
			t.Fatal(err)
		}
	}
	p.ResetAll()
	wantReset(t, c1)
	wantReset(t, c2)
	if got, err := echo(dial(t, p.Addr()), "again", defaultTestTimeout); err != nil || got != "again" {
		t.Fatalf("echo on a new connection = %q, %v; want again", got, err)
	}
}

// TestResetEach checks that each connection is reset the given time after
// it was accepted, and that turning it off keeps new connections.
func TestResetEach(t *testing.T) {
	ctx := testContext(t)
	p := faultproxy.New(t, echoServer(t))
	const life = 200 * time.Millisecond
	p.ResetEach(life)
	c := dial(t, p.Addr())
	if _, err := echo(c, "x", defaultTestTimeout); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitForAccepted(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wantReset(t, c)
	if lived := time.Since(p.Accepted()[0]); lived < life {
		t.Fatalf("connection reset after %v, want at least %v", lived, life)
	}

	p.ResetEach(0)
	c = dial(t, p.Addr())
	if _, err := echo(c, "x", defaultTestTimeout); err != nil {
		t.Fatal(err)
	}
	if _, err := echo(c, "y", 2*life); err != nil {
		t.Fatalf("connection made after ResetEach(0) failed: %v", err)
	}
}

// TestRefuse checks that new connections are reset at once while refusing,
// that open ones are kept, and that they are forwarded again after.
func TestRefuse(t *testing.T) {
	ctx := testContext(t)
	p := faultproxy.New(t, echoServer(t))
	open := dial(t, p.Addr())
	if _, err := echo(open, "x", defaultTestTimeout); err != nil {
		t.Fatal(err)
	}
	p.Refuse(true)
	// The kernel completes the handshake; the reset comes before or after
	// connect(2) returns.
	refused, err := net.DialTimeout("tcp", p.Addr(), defaultTestTimeout)
	switch {
	case err == nil:
		defer refused.Close()
		wantReset(t, refused)
	case !errors.Is(err, syscall.ECONNRESET):
		t.Fatalf("dial while refusing: %v, want a connection reset", err)
	}
	if err := p.WaitForAccepted(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := echo(open, "y", defaultTestTimeout); err != nil {
		t.Fatalf("open connection while refusing: %v", err)
	}
	p.Refuse(false)
	if got, err := echo(dial(t, p.Addr()), "z", defaultTestTimeout); err != nil || got != "z" {
		t.Fatalf("echo after Refuse(false) = %q, %v", got, err)
	}
}

// TestStall checks that nothing is forwarded while stalled, on open and new
// connections, and that what was held is delivered after.
func TestStall(t *testing.T) {
	p := faultproxy.New(t, echoServer(t))
	c := dial(t, p.Addr())
	if _, err := echo(c, "x", defaultTestTimeout); err != nil {
		t.Fatal(err)
	}
	p.Stall(true)
	if _, err := echo(c, "held", defaultTestShortTimeout); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("echo while stalled: %v, want a timeout", err)
	}
	c2 := dial(t, p.Addr())
	if _, err := echo(c2, "new", defaultTestShortTimeout); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("echo on a new connection while stalled: %v, want a timeout", err)
	}
	p.Stall(false)
	c.SetReadDeadline(time.Now().Add(defaultTestTimeout))
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "held" {
		t.Fatalf("after the stall: %q, %v; want held", b, err)
	}
	c2.SetReadDeadline(time.Now().Add(defaultTestTimeout))
	b = make([]byte, 3)
	if _, err := io.ReadFull(c2, b); err != nil || string(b) != "new" {
		t.Fatalf("after the stall, new connection: %q, %v; want new", b, err)
	}
}

// TestClose checks that Close resets every connection, stalled ones too,
// returns, and that the address then refuses.
func TestClose(t *testing.T) {
	p, err := faultproxy.Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	if _, err := echo(c, "x", defaultTestTimeout); err != nil {
		t.Fatal(err)
	}
	p.Stall(true)
	c.Write([]byte("held"))
	p.Close()
	p.Close() // idempotent
	wantReset(t, c)
	if c, err := net.DialTimeout("tcp", p.Addr(), defaultTestTimeout); err == nil {
		c.Close()
		t.Fatal("dial after Close succeeded")
	}
}
