// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/xdshttp/internal/balance"
)

// defaultRouteTimeout is the timeout of a route that sets none: Envoy's
// 15 s (RouteAction.timeout).
const defaultRouteTimeout = 15 * time.Second

// errServerError is the error a 5xx response counts as in load reports
// (an errored request, R-22) and for outlier detection.
var errServerError = errors.New("5xx response")

// call is one request of the application through a host: what its
// attempts share, and the state of the attempt whose response is handed
// over. One allocation holds it all, the response body wrapper included.
type call struct {
	h         *host
	req       *http.Request
	st        *hostState
	rt        *Route
	cs        *clusterState
	authority string
	hh        routing.HTTPHeaders
	headers   routing.Headers
	ctx       context.Context // req's, bounded by the route's timeout
	cancel    context.CancelFunc
	releases  []func() // of the fault filters
	url       url.URL  // of the attempt
	session   *dataplane.Session

	// The attempt in flight.
	pick   balance.Pick
	n      *atomic.Int64 // the circuit breaker's count
	loc    *lrs.LocalityLoad
	up     *upstream
	result error // the attempt's result for load reports
	body   responseBody
}

// roundTrip sends req with st, the host's configuration: route, faults,
// timeout, then the attempt (docs/http.md, "What a request gets").
func (h *host) roundTrip(req *http.Request, st *hostState) (*http.Response, error) {
	c := &call{h: h, req: req, st: st, authority: req.Host, ctx: req.Context()}
	if c.authority == "" {
		c.authority = req.URL.Host
	}
	c.hh = routing.HTTPHeaders{Authority: c.authority, Method: req.Method, Path: req.URL.RequestURI(), Scheme: req.URL.Scheme, Fields: req.Header}
	c.headers = routing.Headers{Source: &c.hh, RawQuery: req.URL.RawQuery}
	rt := st.cfg.Route(req.URL.EscapedPath(), &c.headers)
	if rt == nil {
		return c.fail(fmt.Errorf("%w (virtual host %q)", ErrNoRoute, st.cfg.VirtualHost.Name))
	}
	c.rt = rt
	if !rt.Forwards() {
		return c.fail(fmt.Errorf("%w: action %v", ErrRouteAction, rt.Action))
	}
	target := rt.PickTarget()
	if rt.SessionErr != nil {
		return c.fail(rt.SessionErr)
	}
	if rt.Session != nil && dataplane.CookiePathMatches(rt.Session.Path, req.URL.Path) {
		// gRFC A55, A60: the cookie may name the cluster and endpoint.
		c.session, target = dataplane.NewSession(rt.Session, req.Header.Values("Cookie"), rt, target)
	}
	c.cs = st.cluster(target.Cluster)
	if c.cs == nil || c.cs.err != nil {
		var err error = errors.New("not in the configuration")
		if c.cs != nil {
			err = c.cs.err
		}
		return c.fail(fmt.Errorf("%w: %w", ErrClusterUnavailable, err))
	}
	// The route's timeout bounds the whole request, until its response
	// body is read to the end (docs/http.md, "Timeouts").
	if d := routeTimeout(st.cfg, rt); d > 0 {
		c.ctx, c.cancel = context.WithTimeoutCause(c.ctx, d, ErrTimeout)
	}
	faults, err := target.FaultsFor(rt)
	if err != nil {
		return c.fail(err)
	}
	for _, f := range faults {
		abort, release, err := dataplane.InjectFault(c.ctx, f, &c.headers)
		c.releases = append(c.releases, release)
		if err != nil {
			return c.fail(err)
		}
		if abort != nil {
			status := int(abort.Code)
			if abort.GRPC {
				status = http.StatusServiceUnavailable // a gRPC status aborts an HTTP request as 503
			}
			return c.fail(&FaultAbortError{Status: status})
		}
	}
	resp, err := c.attempt()
	if err != nil {
		return c.fail(err)
	}
	return resp, nil
}

// fail ends c, which failed with err, and returns err in an *Error.
func (c *call) fail(err error) (*http.Response, error) {
	closeBody(c.req)
	if cause := context.Cause(c.ctx); errors.Is(cause, ErrTimeout) && c.req.Context().Err() == nil {
		err = fmt.Errorf("%w (%v)", cause, routeTimeout(c.st.cfg, c.rt)) // not what the timeout made the attempt fail with
	}
	c.end()
	e := &Error{Host: c.req.URL.Host, Err: err}
	if c.rt != nil {
		e.Route = c.rt.Desc
		if c.cs != nil && c.cs.c != nil {
			e.Cluster = c.cs.c.Name
		} else if len(c.rt.Targets) == 1 {
			e.Cluster = c.rt.Targets[0].Cluster
		}
	}
	return nil, e
}

// end ends the request: its timeout and faults.
func (c *call) end() {
	if c.cancel != nil {
		c.cancel()
	}
	for _, r := range c.releases {
		r()
	}
}

// routeTimeout is the limit of a request of rt: the route's timeout (15 s
// when unset, none when 0), capped by its max_stream_duration.
func routeTimeout(cfg *dataplane.Config, rt *Route) time.Duration {
	d := defaultRouteTimeout
	if rt.Res.Action.Timeout != nil {
		d = *rt.Res.Action.Timeout
	}
	if m := cfg.MaxStreamDuration(rt); m > 0 && (d == 0 || m < d) {
		d = m
	}
	return d
}

// Route is dataplane's, named here for brevity.
type Route = dataplane.Route

// attempt sends one attempt to an endpoint of c's cluster: the pick,
// drops, circuit breaking, load report and the endpoint's transport. On
// success the response's body ends the attempt, then the call, when it is
// read to its end or closed; on failure the attempt is over.
func (c *call) attempt() (*http.Response, error) {
	t := c.h.t
	pick, ok := c.sessionPick()
	if !ok {
		var err error
		if pick, err = c.cs.bal.Pick(balance.Request{}); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoHealthyEndpoint, err)
		}
	}
	if c.session != nil {
		c.session.Picked(pick.Endpoint.Key(), c.cs.c.Name)
	}
	p := pick.Priority
	var load *lrs.ClusterLoad
	if p.LoadReported {
		load = t.load.Store().Cluster(p.Leaf, p.LRSService)
	}
	if i, drop := p.PickDrop(); drop {
		if load != nil {
			load.DropCounter(p.Drops[i].Category).Add(1)
		}
		return nil, fmt.Errorf("%w: category %q", ErrDropped, p.Drops[i].Category)
	}
	n := t.breakers.Counter(p.BreakerKey())
	if !dataplane.Acquire(n, p.MaxRequests) {
		if load != nil {
			load.DropCounter("").Add(1)
		}
		return nil, fmt.Errorf("%w (%d)", ErrCircuitBreakerOpen, p.MaxRequests)
	}
	var loc *lrs.LocalityLoad
	if load != nil {
		loc = load.Locality(pick.Locality.ID)
		loc.Start()
	}
	hs := c.st.security[p.Security]
	addr := pick.Endpoint.Addresses[0]
	key := upstreamKey{addr: addr, hs: hs}
	if p.Res != nil {
		key.proto = p.Res.UpstreamProtocol
	}
	switch {
	case hs != nil:
		key.hostname = pick.Endpoint.Hostname
	case c.req.URL.Scheme == "https":
		key.https, key.hostname = true, c.req.URL.Hostname()
	}
	up, err := t.ups.get(key)
	if err != nil {
		n.Add(-1)
		if loc != nil {
			loc.Finish(err)
		}
		return nil, err
	}
	pick.Host.Begin()
	c.pick, c.n, c.loc, c.up = pick, n, loc, up

	out := c.req.WithContext(c.ctx) // a shallow copy; req is not modified
	c.url = *c.req.URL
	c.url.Scheme, c.url.Host = up.scheme, addr
	out.URL = &c.url
	out.Host = c.authority
	resp, err := up.rt.RoundTrip(out)
	if err != nil {
		c.finishAttempt(err)
		return nil, fmt.Errorf("endpoint %s: %w", addr, err)
	}
	c.result = nil
	if resp.StatusCode >= 500 {
		c.result = errServerError
	}
	resp.Request = c.req
	if c.session != nil {
		if v, ok := c.session.SetCookie(); ok {
			resp.Header.Add("Set-Cookie", v)
		}
	}
	c.body.rc, c.body.c = resp.Body, c
	resp.Body = &c.body
	return resp, nil
}

// sessionPick returns the endpoint the request's session cookie pins it
// to, when one of the addresses it names may take it (an allowed session
// host, not ejected by outlier detection).
func (c *call) sessionPick() (balance.Pick, bool) {
	if c.session == nil || c.cs.sessions == nil {
		return balance.Pick{}, false
	}
	for _, a := range c.session.Override {
		if p, ok := c.cs.sessions[a]; ok && !p.Host.Ejected() {
			return p, true
		}
	}
	return balance.Pick{}, false
}

// finishAttempt ends the attempt in flight with its result.
func (c *call) finishAttempt(result error) {
	if oe := c.st.outlier[c.pick.Endpoint]; oe != nil && c.req.Context().Err() == nil {
		oe.Record(result) // a 5xx or no response is a failure (docs/http.md); the application's cancel is not
	}
	c.pick.Host.End()
	c.n.Add(-1)
	if c.loc != nil {
		c.loc.Finish(result)
	}
	c.up.done()
}

// responseBody is the body of a response handed to the application: its
// request is over when it is read to its end or closed.
type responseBody struct {
	rc   io.ReadCloser
	c    *call
	once sync.Once
}

func (b *responseBody) done() {
	b.c.finishAttempt(b.c.result)
	b.c.end()
}

func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *responseBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.done)
	return err
}
