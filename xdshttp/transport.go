// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/loadreport"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdshttp/internal/balance"
)

// Transport is an http.RoundTripper whose requests are routed, balanced,
// retried and secured by the xDS configuration of the host their URL
// names, as a sidecar Envoy in front of the application would do it
// (docs/http.md). Make one with NewTransport and use it as an
// http.Client's Transport. A Transport is safe for concurrent use; Close
// it before its client.
type Transport struct {
	c        *client.Client
	opts     options
	logger   *slog.Logger
	load     *loadreport.Reporter
	breakers dataplane.Breakers
	ups      upstreams
	od       outliers
	nodeID   string

	mu        sync.RWMutex
	hosts     map[hostKey]*host
	endpoints map[endpointKey]*balance.Host // kept across configurations
	security  map[*resources.SecurityConfig]*handshake.ClientHandshakeInfo
	noted     map[string]bool // policy notes logged, by leaf cluster and note
	closed    bool
	closing   chan struct{} // closed by Close
	janitor   sync.WaitGroup
	janitorOn bool
}

// hostKey identifies a host: the URL host that names its Listener, and
// the authority its virtual host is selected for (the request's Host),
// both lowercase.
type hostKey struct {
	urlHost, authority string
}

// endpointKey identifies an endpoint of a leaf cluster, whose state
// (outlier ejection, requests in flight) outlives configurations.
type endpointKey struct {
	leaf, addrs string
}

// NewTransport returns a Transport whose requests use c's configuration.
// It starts nothing: each URL host is watched from its first request on.
// c must outlive the Transport.
func NewTransport(c *client.Client, opts ...Option) *Transport {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = c.Logger()
	}
	if o.base == nil {
		o.base = http.DefaultTransport.(*http.Transport)
	}
	if o.lrsBuilder == nil {
		o.lrsBuilder = c.TransportBuilder()
	}
	cfg := c.BootstrapConfig()
	t := &Transport{
		c:         c,
		opts:      o,
		logger:    o.logger,
		hosts:     make(map[hostKey]*host),
		endpoints: make(map[endpointKey]*balance.Host),
		security:  make(map[*resources.SecurityConfig]*handshake.ClientHandshakeInfo),
		closing:   make(chan struct{}),
		ups:       upstreams{base: o.base, tls: o.tlsConfig, m: make(map[upstreamKey]*upstream)},
	}
	t.nodeID = cfg.Node.ID
	t.od.init()
	if o.providers == nil {
		t.opts.providers = xdscreds.NewClientProviderStore(c, xdscreds.WithStoreLogger(o.logger))
	}
	t.load = loadreport.New(o.lrsBuilder, cfg, o.logger)
	t.load.Acquire()
	return t
}

// RoundTrip sends req as the xDS configuration of its URL host says
// (docs/http.md, "What a request gets"). It implements
// http.RoundTripper: it does not modify req, and a response it returns
// has a nil error; errors are *Error values (see the package's Err
// variables) or the request's context error. The first request to a host
// waits for the host's first configuration, bounded by its context and
// the client's does-not-exist timer.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("xdshttp: nil Request.URL")
	}
	urlHost := req.URL.Host
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		closeBody(req)
		return nil, &Error{Host: urlHost, Err: ErrUnsupportedScheme}
	}
	if urlHost == "" {
		closeBody(req)
		return nil, errors.New("xdshttp: request URL has no host")
	}
	h, st, err := t.hostFor(req)
	if err != nil {
		closeBody(req)
		return nil, &Error{Host: urlHost, Err: err}
	}
	return h.roundTrip(req, st)
}

// hostFor returns the host of req and its current state, waiting for its
// first configuration: the host of the URL host, or, for a request whose
// Host differs, the host of that Host, unless the URL host's configuration
// is at hand and that Host selects the same virtual host in it
// (docs/http.md, "The dependency manager").
func (t *Transport) hostFor(req *http.Request) (*host, *hostState, error) {
	urlHost := strings.ToLower(req.URL.Host)
	authority := urlHost
	if req.Host != "" {
		authority = strings.ToLower(req.Host)
	}
	k := hostKey{urlHost, authority}
	if authority != urlHost {
		t.mu.RLock()
		base := t.hosts[hostKey{urlHost, urlHost}]
		t.mu.RUnlock()
		if base != nil {
			if st := base.state(); st != nil && st.err == nil && st.selects(authority) {
				base.touch()
				return base, st, nil
			}
		}
	}
	for {
		h, err := t.host(k)
		if err != nil {
			return nil, nil, err
		}
		st, err := h.wait(req.Context())
		if err == errHostDropped {
			continue // dropped as idle just as this request came: start it again
		}
		if err != nil {
			return nil, nil, err
		}
		return h, st, nil
	}
}

// host returns the host of k, started on first use.
func (t *Transport) host(k hostKey) (*host, error) {
	t.mu.RLock()
	h := t.hosts[k]
	closed := t.closed
	t.mu.RUnlock()
	if h != nil {
		h.touch()
		return h, nil
	}
	if closed {
		return nil, ErrClosed
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if h = t.hosts[k]; h == nil {
		var err error
		if h, err = t.startHost(k); err != nil {
			return nil, err
		}
		t.hosts[k] = h
		if !t.janitorOn {
			t.janitorOn = true
			t.janitor.Add(1)
			go t.dropIdleHosts()
		}
	}
	h.touch()
	return h, nil
}

// dropIdleHosts closes the hosts that no request used for the idle time
// (WithHostIdleTimeout), until the Transport is closed.
func (t *Transport) dropIdleHosts() {
	defer t.janitor.Done()
	period := t.opts.idleTimeout / 4
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-t.closing:
			return
		case now := <-tick.C:
			var idle []*host
			t.mu.Lock()
			for k, h := range t.hosts {
				if now.Sub(h.lastUsed()) >= t.opts.idleTimeout {
					delete(t.hosts, k)
					idle = append(idle, h)
				}
			}
			t.mu.Unlock()
			for _, h := range idle {
				t.logger.Debug("dropping idle host", xdslog.KeyListener, h.listener, xdslog.KeyDataPlaneAuthority, h.key.authority)
				h.close()
			}
			if len(idle) > 0 {
				t.sweep()
			}
		}
	}
}

// sweep releases what no host's configuration uses any more: the
// endpoints' state, their transports (closed once their requests end) and
// the clusters' TLS configurations.
func (t *Transport) sweep() {
	t.mu.Lock()
	usedEPs := make(map[endpointKey]bool)
	usedSec := make(map[*handshake.ClientHandshakeInfo]bool)
	usedAddr := make(map[upstreamUse]bool)
	usedOD := make(map[string]bool)
	for _, h := range t.hosts {
		st := h.state()
		if st == nil {
			continue
		}
		for k := range st.endpoints {
			usedEPs[k] = true
		}
		for _, hs := range st.security {
			usedSec[hs] = true
		}
		for u := range st.addrs {
			usedAddr[u] = true
		}
		for g := range st.odGroups {
			usedOD[g] = true
		}
	}
	for k := range t.endpoints {
		if !usedEPs[k] {
			delete(t.endpoints, k)
		}
	}
	var oldSec []*handshake.ClientHandshakeInfo
	for sc, hs := range t.security {
		if !usedSec[hs] {
			delete(t.security, sc)
			oldSec = append(oldSec, hs)
		}
	}
	t.mu.Unlock()
	t.od.retain(func(g string) bool { return usedOD[g] })
	t.ups.retain(func(addr string, hs *handshake.ClientHandshakeInfo) bool {
		return usedAddr[upstreamUse{addr, hs}]
	})
	for _, hs := range oldSec {
		hs.Close()
	}
}

// Close stops the Transport: every host's watches are cancelled, the
// load reports end after a final report, and every connection is
// closed, those of requests in flight included (their responses fail).
// Requests made afterwards fail with ErrClosed. Close waits for the
// goroutines of the Transport; it returns nil, and does nothing the
// second time. Close the client afterwards, not before.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.closing)
	hosts := t.hosts
	t.hosts = nil
	t.mu.Unlock()
	t.janitor.Wait()
	for _, h := range hosts {
		h.close() // no snapshot is handled after it returns
	}
	t.mu.Lock()
	sec := t.security
	t.security = nil
	t.mu.Unlock()
	t.od.stop()
	t.ups.closeAll()
	for _, hs := range sec {
		hs.Close()
	}
	t.load.Release()
	return nil
}

// closeBody closes the body of a request that is not sent, as an
// http.RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// errContext returns ctx's error, with its cause when it has one.
func errContext(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, ctx.Err()) {
		return c
	}
	return ctx.Err()
}
