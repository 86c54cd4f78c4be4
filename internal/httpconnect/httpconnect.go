// SPDX-License-Identifier: Apache-2.0

// Package httpconnect opens TCP connections through an HTTP CONNECT proxy
// (RFC 9110 §9.3.6), as gRFC A86 configures them from xDS: the proxy is
// reached over plain TCP, asked with "CONNECT host:port HTTP/1.1" for a
// tunnel to the endpoint, and the connection it returns is the tunnel, on
// which the caller does its TLS handshake, if any, with the endpoint
// itself. It knows nothing of gRPC or xDS.
package httpconnect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// maxResponseBody bounds what of a refusal's body goes into the error.
const maxResponseBody = 256

// Dialer opens connections directly or through a proxy. The zero value
// is not usable; see NewDialer. It is safe for concurrent use.
type Dialer struct {
	d         *net.Dialer
	userAgent string
}

// NewDialer returns a Dialer whose TCP connections have keep-alive probes
// on with the operating system's settings (as grpc-go's own dialer), and
// whose CONNECT requests carry userAgent ("" for no User-Agent header).
func NewDialer(userAgent string) *Dialer {
	return &Dialer{
		d:         &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}},
		userAgent: userAgent,
	}
}

// Dial connects to target ("host:port") over TCP: directly when proxy is
// "", else through a tunnel that the HTTP CONNECT proxy at proxy
// ("host:port") opens to target. The CONNECT request names target as it
// is given (gRFC A86: the endpoint's IP address and port). ctx bounds the
// TCP connection and the proxy's answer; once Dial returns, it no longer
// affects the connection.
//
// Errors: those of net.Dialer.DialContext; the proxy's answer when it is
// not 2xx ("HTTP CONNECT: proxy 10.0.0.1:3128 refused CONNECT
// 10.0.0.2:443: 403 Forbidden: <start of the body>"); one wrapping ctx's
// error when it ends first. On error nothing stays open.
func (d *Dialer) Dial(ctx context.Context, proxy, target string) (net.Conn, error) {
	if proxy == "" {
		return d.d.DialContext(ctx, "tcp", target)
	}
	conn, err := d.d.DialContext(ctx, "tcp", proxy)
	if err != nil {
		return nil, fmt.Errorf("dialing HTTP CONNECT proxy %s: %w", proxy, err)
	}
	tunnel, err := d.connect(ctx, conn, proxy, target)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return tunnel, nil
}

// connect asks the proxy on conn for a tunnel to target, within ctx.
func (d *Dialer) connect(ctx context.Context, conn net.Conn, proxy, target string) (net.Conn, error) {
	// The end of ctx (its deadline included) unblocks the exchange; ctx's
	// error is then set before the read or write fails.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	tunnel, err := d.exchange(conn, proxy, target)
	if !stop() || ctx.Err() != nil {
		// ctx ended: the connection's deadline may be in the past.
		return nil, fmt.Errorf("HTTP CONNECT to %s through proxy %s: %w", target, proxy, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return tunnel, nil
}

// exchange writes the CONNECT request and reads the answer.
func (d *Dialer) exchange(conn net.Conn, proxy, target string) (net.Conn, error) {
	req := &http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Host: target},
		Host:   target,
		Header: http.Header{},
	}
	if d.userAgent != "" {
		req.Header.Set("User-Agent", d.userAgent)
	}
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("HTTP CONNECT to %s through proxy %s: writing the request: %w", target, proxy, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("HTTP CONNECT to %s through proxy %s: reading the answer: %w", target, proxy, err)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
		resp.Body.Close()
		msg := fmt.Sprintf("HTTP CONNECT: proxy %s refused CONNECT %s: %s", proxy, target, resp.Status)
		if len(body) > 0 {
			msg += fmt.Sprintf(": %q", body)
		}
		return nil, errors.New(msg)
	}
	// A 2xx answer to CONNECT has no body (RFC 9110 §9.3.6): whatever
	// follows it is the tunnel's, possibly already read into br.
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// bufferedConn is a tunnel whose first bytes were read with the proxy's
// answer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
