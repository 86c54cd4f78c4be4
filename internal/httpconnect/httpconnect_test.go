// SPDX-License-Identifier: Apache-2.0

package httpconnect

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const defaultTestTimeout = 10 * time.Second

// server accepts connections on loopback and runs handle on each, until
// the test ends.
func server(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() { lis.Close(); wg.Wait() })
	return lis.Addr().String()
}

// echo copies what it reads back to the writer.
func echo(c net.Conn) { io.Copy(c, c) }

func startProxy(t *testing.T) *testutil.ConnectProxy {
	t.Helper()
	p, err := testutil.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// roundTrip writes msg on c and reads it back.
func roundTrip(t *testing.T, c io.ReadWriter, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("Write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("read back %q, %v; want %q", buf, err, msg)
	}
}

// TestDial_Direct checks that without a proxy the target is dialled.
func TestDial_Direct(t *testing.T) {
	target := server(t, echo)
	c, err := NewDialer("").Dial(testContext(t), "", target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "hello")
}

// TestDial_Proxy checks a tunnel through a CONNECT proxy: the request
// names the target, its User-Agent is the dialer's, and bytes flow both
// ways.
func TestDial_Proxy(t *testing.T) {
	target := server(t, echo)
	p := startProxy(t)
	c, err := NewDialer("test-agent/1").Dial(testContext(t), p.Addr, target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "through the tunnel")
	if got := p.Targets(); !slices.Equal(got, []string{target}) {
		t.Errorf("the proxy was asked for %v, want [%s]", got, target)
	}
}

// TestDial_TLSThroughProxy checks a TLS handshake with the target over
// the tunnel, the proxy seeing only ciphertext.
func TestDial_TLSThroughProxy(t *testing.T) {
	ca, err := certs.NewCA("test ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(certs.Options{DNSNames: []string{"backend.example"}})
	if err != nil {
		t.Fatal(err)
	}
	target := server(t, func(c net.Conn) {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{leaf.TLS}})
		defer tc.Close()
		echo(tc)
	})
	p := startProxy(t)
	c, err := NewDialer("").Dial(testContext(t), p.Addr, target)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "backend.example", RootCAs: certs.Pool(ca)})
	defer tc.Close()
	roundTrip(t, tc, "secret")
	if got := tc.ConnectionState().PeerCertificates[0].DNSNames; !slices.Equal(got, []string{"backend.example"}) {
		t.Errorf("server certificate DNS names %v", got)
	}
}

// TestDial_Refused checks the error of a proxy that does not open the
// tunnel: its status and the start of its body.
func TestDial_Refused(t *testing.T) {
	target := server(t, echo)
	p := startProxy(t)
	p.Refuse(http.StatusForbidden)
	_, err := NewDialer("").Dial(testContext(t), p.Addr, target)
	want := "HTTP CONNECT: proxy " + p.Addr + " refused CONNECT " + target + ": 403 Forbidden: \"refused by the test proxy\\n\""
	if err == nil || err.Error() != want {
		t.Fatalf("Dial() = %v, want %s", err, want)
	}
}

// TestDial_ProxyDown checks the error when the proxy cannot be reached.
func TestDial_ProxyDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	if _, err := NewDialer("").Dial(testContext(t), addr, "10.0.0.1:80"); err == nil || !strings.Contains(err.Error(), "dialing HTTP CONNECT proxy "+addr) {
		t.Fatalf("Dial() = %v, want an error naming the proxy", err)
	}
}

// TestDial_ContextEnds checks that a proxy that never answers holds Dial
// only until its context ends, by deadline or cancellation.
func TestDial_ContextEnds(t *testing.T) {
	quiet := server(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := NewDialer("").Dial(ctx, quiet, "10.0.0.1:80"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial() with a deadline = %v, want context.DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := NewDialer("").Dial(ctx, quiet, "10.0.0.1:80"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial() cancelled = %v, want context.Canceled", err)
	}
}

// TestDial_BytesAfterAnswer checks that bytes the proxy sends right after
// its answer, read with it, are the tunnel's first bytes; and that the
// deadline of the exchange does not stay on the tunnel.
func TestDial_BytesAfterAnswer(t *testing.T) {
	proxy := server(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil || req.Method != http.MethodConnect {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\nearly")
		time.Sleep(100 * time.Millisecond) // past the Dial's deadline
		io.WriteString(c, " and late")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	c, err := NewDialer("").Dial(ctx, proxy, "10.0.0.1:80")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, len("early and late"))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "early and late" {
		t.Fatalf("tunnel read %q, %v; want %q", buf, err, "early and late")
	}
}
