// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdshttp/internal/policy"
)

// upstreamKey identifies the *http.Transport of an endpoint: its address,
// how its connections are secured, and its HTTP protocol.
type upstreamKey struct {
	addr string
	// hs is the TLS configuration of the endpoint's cluster (gRFC A29);
	// nil when the cluster has none.
	hs *handshake.ClientHandshakeInfo
	// https: the request's URL is https:// and the cluster has no TLS: the
	// connection is TLS verified as http.Transport verifies the URL.
	https bool
	// hostname is the endpoint's host name (SNI with auto_host_sni, gRFC
	// A101) when hs is set, the URL's host name when https is.
	hostname string
	proto    resources.UpstreamHTTPProtocol
}

// upstream is the *http.Transport of one endpoint, with every connection
// it made, so that closing it closes them all, including the ones a
// response in flight puts back in its pool afterwards.
type upstream struct {
	key    upstreamKey
	rt     *http.Transport
	scheme string // of the URLs sent to rt: "http" or "https"

	active  atomic.Int64 // requests in flight
	retired atomic.Bool  // no configuration names it any more

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

// upstreams holds the endpoints' transports of a Transport. get is called
// by every request, under a read lock.
type upstreams struct {
	base *http.Transport
	tls  *tls.Config // WithTLSClientConfig; nil for the zero config

	mu     sync.RWMutex
	m      map[upstreamKey]*upstream
	closed bool
}

// get returns the upstream of k, made on first use, and counts a request
// on it (release it with done). It fails only once the Transport is
// closed.
func (u *upstreams) get(k upstreamKey) (*upstream, error) {
	u.mu.RLock()
	up, ok := u.m[k]
	if ok {
		up.active.Add(1)
		u.mu.RUnlock()
		return up, nil
	}
	u.mu.RUnlock()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, ErrClosed
	}
	if up = u.m[k]; up == nil {
		up = u.newUpstream(k)
		u.m[k] = up
	}
	up.active.Add(1)
	return up, nil
}

// done ends a request of up. The last request of a retired upstream
// closes its connections.
func (up *upstream) done() {
	if up.active.Add(-1) == 0 && up.retired.Load() {
		up.close()
	}
}

// retain retires the upstreams whose endpoint no configuration uses any
// more (used returns false): they leave the table at once, and are closed
// when their last request ends.
func (u *upstreams) retain(used func(addr string, hs *handshake.ClientHandshakeInfo) bool) {
	var gone []*upstream
	u.mu.Lock()
	for k, up := range u.m {
		if !used(k.addr, k.hs) {
			delete(u.m, k)
			gone = append(gone, up)
		}
	}
	u.mu.Unlock()
	for _, up := range gone {
		up.retire()
	}
}

// closeAll closes every upstream, with every connection, in use or not;
// get fails afterwards.
func (u *upstreams) closeAll() {
	u.mu.Lock()
	u.closed = true
	m := u.m
	u.m = nil
	u.mu.Unlock()
	for _, up := range m {
		up.retired.Store(true)
		up.close()
	}
}

func (up *upstream) retire() {
	up.retired.Store(true)
	if up.active.Load() == 0 {
		up.close()
	} else {
		up.rt.CloseIdleConnections()
	}
}

// close closes up's connections, and those it makes afterwards.
func (up *upstream) close() {
	up.mu.Lock()
	up.closed = true
	conns := up.conns
	up.conns = nil
	up.mu.Unlock()
	up.rt.CloseIdleConnections()
	for c := range conns {
		c.Conn.Close()
	}
}

// newUpstream returns the upstream of k: a clone of the base transport
// whose connections go to k.addr, secured and speaking the protocol k
// says (docs/http.md, "Connections and TLS").
func (u *upstreams) newUpstream(k upstreamKey) *upstream {
	rt := u.base.Clone()
	up := &upstream{key: k, rt: rt, scheme: "http", conns: make(map[*trackedConn]struct{})}
	rt.Proxy, rt.OnProxyConnectResponse, rt.GetProxyConnectHeader = nil, nil, nil
	rt.DialTLSContext = nil // DialContext and DialTLSContext take priority over the deprecated Dial and DialTLS
	dial := rt.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	rt.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		c, err := dial(ctx, network, k.addr)
		if err != nil {
			return nil, err
		}
		return up.track(c)
	}
	tlsOn := k.hs != nil || k.https
	var p http.Protocols
	switch k.proto {
	case resources.UpstreamHTTP2:
		if tlsOn {
			p.SetHTTP2(true)
		} else {
			p.SetUnencryptedHTTP2(true)
		}
	case resources.UpstreamHTTPAuto, resources.UpstreamHTTP3:
		p.SetHTTP1(true)
		p.SetHTTP2(tlsOn)
	default:
		p.SetHTTP1(true)
	}
	rt.Protocols = &p
	rt.ForceAttemptHTTP2 = p.HTTP2() || p.UnencryptedHTTP2()
	switch {
	case k.hs != nil:
		up.scheme = "https"
		rt.TLSClientConfig = nil
		alpn := alpnFor(&p)
		timeout := rt.TLSHandshakeTimeout
		rt.DialTLSContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			cfg, err := xdscreds.ClientTLSConfig(ctx, k.hs, k.hostname)
			if err != nil {
				return nil, err
			}
			cfg.NextProtos = alpn
			raw, err := dial(ctx, network, k.addr)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", policy.ErrConnectFailure, err)
			}
			tc, err := up.track(raw)
			if err != nil {
				return nil, err
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			conn := tls.Client(tc, cfg)
			if err := conn.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, fmt.Errorf("%w: TLS handshake with %s (cluster %q): %w", policy.ErrConnectFailure, k.addr, k.hs.Cluster, err)
			}
			return conn, nil
		}
	case k.https:
		up.scheme = "https"
		cfg := &tls.Config{}
		if u.tls != nil {
			cfg = u.tls.Clone()
		}
		cfg.ServerName = k.hostname
		rt.TLSClientConfig = cfg
	default:
		rt.TLSClientConfig = nil
	}
	return up
}

// alpnFor returns the ALPN protocols of a TLS connection speaking p.
func alpnFor(p *http.Protocols) []string {
	var out []string
	if p.HTTP2() {
		out = append(out, "h2")
	}
	if p.HTTP1() {
		out = append(out, "http/1.1")
	}
	return out
}

// trackedConn is a connection of an upstream, which forgets it when
// closed.
type trackedConn struct {
	net.Conn
	up   *upstream
	once sync.Once
}

func (up *upstream) track(c net.Conn) (net.Conn, error) {
	tc := &trackedConn{Conn: c, up: up}
	up.mu.Lock()
	if up.closed {
		up.mu.Unlock()
		c.Close()
		return nil, fmt.Errorf("connection to %s: %w", up.key.addr, ErrClosed)
	}
	up.conns[tc] = struct{}{}
	up.mu.Unlock()
	return tc, nil
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.up.mu.Lock()
		delete(c.up.conns, c)
		c.up.mu.Unlock()
	})
	return c.Conn.Close()
}
