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
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdshttp/internal/balance"
	"github.com/proxyless/xds/xdshttp/internal/policy"
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
	rt        *dataplane.Route
	cs        *clusterState
	authority string
	hh        routing.HTTPHeaders
	headers   routing.Headers
	// ctx is req's, cancelled by the route's timeout (cause ErrTimeout),
	// an attempt's per-try timeout (cause ErrPerTryTimeout: renew makes
	// another for the next attempt) and the request's end; cancel is nil
	// when no timer can cancel it (ctx is then req's own).
	ctx      context.Context
	cancel   context.CancelCauseFunc
	deadline time.Time   // of the route's timeout; zero for none
	timer    *time.Timer // of the route's timeout
	releases []func()    // of the fault filters
	url      url.URL     // of the attempt
	session  *dataplane.Session
	// sendHost is the Host the attempts send (host_rewrite_literal, else
	// the request's); rewritten says that path and rawPath replace the
	// URL's (prefix_rewrite, regex_rewrite).
	sendHost      string
	rewritten     bool
	path, rawPath string
	// The header mutations of the request and of its response (Envoy's
	// custom headers); nil for none.
	reqMut, respMut []*resources.HeaderMutations

	// The attempt in flight.
	pick   balance.Pick
	n      *atomic.Int64 // the circuit breaker's count
	loc    *lrs.LocalityLoad
	up     *upstream
	result error // the attempt's result for load reports
	status int   // the attempt's response status; 0 for none
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
	c.reqMut, c.respMut = target.MutationsFor(rt)
	c.sendHost = c.authority
	if a := &rt.Res.Action; policy.Rewrites(a) {
		c.sendHost = policy.RewriteHost(a, c.authority)
		escaped := req.URL.EscapedPath()
		if np := policy.RewritePath(&rt.Res.Match, a, escaped); np != escaped {
			p, err := url.PathUnescape(np)
			if err != nil {
				return c.fail(fmt.Errorf("rewritten path %q: %w", np, err))
			}
			c.rewritten, c.path, c.rawPath = true, p, np
		}
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
		c.deadline = time.Now().Add(d)
		c.renew()
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
	resp, err := c.send(st.retryOf(rt))
	if err != nil {
		return c.fail(err)
	}
	return c.handOver(resp), nil
}

// ErrPerTryTimeout is wrapped by the error of an attempt whose response
// headers did not come within the retry policy's per_try_timeout.
var ErrPerTryTimeout = policy.ErrPerTryTimeout

// retrier is a route's retry policy (docs/http.md, "Retries"; package
// policy implements it).
type retrier interface {
	// MaxRetries is num_retries.
	MaxRetries() int
	// RequestRetriable: the request's headers match
	// retriable_request_headers.
	RequestRetriable(h routing.HeaderSource) bool
	// ShouldRetry: an attempt with this outcome (resp nil when there was
	// no response) is retried.
	ShouldRetry(resp *http.Response, err error) bool
	// Backoff is the wait before retry k (1 for the first).
	Backoff(k int) time.Duration
	// PerTryTimeout bounds each attempt until its response headers; 0
	// for none.
	PerTryTimeout() time.Duration
}

// send makes the attempts of c, retried as r says (nil: no retries):
// only while the request's body can be sent again, never after a
// response was handed over, within the cluster's max_retries retries in
// progress (Envoy's retry circuit breaker). It returns the response or
// error of the last attempt.
func (c *call) send(r retrier) (*http.Response, error) {
	replayable := c.req.Body == nil || c.req.Body == http.NoBody || c.req.GetBody != nil
	if r == nil || r.MaxRetries() == 0 || !replayable || !r.RequestRetriable(&c.hh) {
		return c.attempt(nil, 0)
	}
	var retries *atomic.Int64 // the retry circuit breaker's count, while a retry is in progress
	defer func() {
		if retries != nil {
			retries.Add(-1)
		}
	}()
	for k := 0; ; k++ {
		var body io.ReadCloser
		if k > 0 && c.req.GetBody != nil {
			b, err := c.req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("retry %d: the request body cannot be sent again: %w", k, err)
			}
			body = b
		}
		resp, err := c.attempt(body, r.PerTryTimeout())
		if k == r.MaxRetries() || !r.ShouldRetry(resp, err) {
			return resp, err
		}
		if c.ctx.Err() != nil {
			if !errors.Is(context.Cause(c.ctx), ErrPerTryTimeout) || c.req.Context().Err() != nil {
				return resp, err // the route's timeout or the request's end
			}
			c.renew() // only the attempt timed out
		}
		if retries == nil {
			p := c.pick.Priority
			limit := uint32(3)
			if p.Res != nil {
				limit = uint32(p.Res.MaxRetries)
			}
			n := c.h.t.breakers.Counter(p.BreakerKey() + "\x00retries")
			if !dataplane.Acquire(n, limit) {
				return resp, err // the retry budget of the cluster is in use: this attempt's outcome stands
			}
			retries = n
		}
		if resp != nil {
			c.discard(resp)
		}
		wait := time.NewTimer(r.Backoff(k + 1))
		select {
		case <-wait.C:
		case <-c.ctx.Done():
			wait.Stop()
			return nil, context.Cause(c.ctx)
		}
	}
}

// discard ends an attempt whose response is not handed over: its body is
// drained a little, so that its connection may be reused, and closed.
func (c *call) discard(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
	c.finishAttempt(c.result)
}

// fail ends c, which failed with err, and returns err in an *Error.
func (c *call) fail(err error) (*http.Response, error) {
	closeBody(c.req)
	if cause := context.Cause(c.ctx); errors.Is(cause, ErrTimeout) && c.req.Context().Err() == nil {
		err = fmt.Errorf("%w (%s)", cause, routeTimeout(c.st.cfg, c.rt)) // not what the timeout made the attempt fail with
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

// renew makes c.ctx: the request's context with a cancel, and the
// route's timer, at the deadline set once for the whole request.
func (c *call) renew() {
	if c.cancel != nil {
		c.cancel(nil)
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.ctx, c.cancel = context.WithCancelCause(c.req.Context())
	if !c.deadline.IsZero() {
		cancel := c.cancel
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { cancel(ErrTimeout) })
	}
}

// end ends the request: its timers and faults.
func (c *call) end() {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.cancel != nil {
		c.cancel(nil)
	}
	for _, r := range c.releases {
		r()
	}
}

// routeTimeout is the limit of a request of rt: the route's timeout (15 s
// when unset, none when 0), capped by its max_stream_duration.
func routeTimeout(cfg *dataplane.Config, rt *dataplane.Route) time.Duration {
	d := defaultRouteTimeout
	if rt.Res.Action.Timeout != nil {
		d = *rt.Res.Action.Timeout
	}
	if m := cfg.MaxStreamDuration(rt); m > 0 && (d == 0 || m < d) {
		d = m
	}
	return d
}

// attempt sends one attempt to an endpoint of c's cluster: the pick,
// drops, circuit breaking, load report and the endpoint's transport, with
// body as the request's body (nil: the request's own), and perTry, when
// not 0, as the limit of the wait for the response headers. On failure
// the attempt is over; on success it lasts until the response is
// discarded or its handed-over body is read to its end or closed.
func (c *call) attempt(body io.ReadCloser, perTry time.Duration) (*http.Response, error) {
	t := c.h.t
	pick, ok := c.sessionPick()
	if !ok {
		var err error
		var r balance.Request
		if hp := c.rt.Res.Action.HTTPHashPolicies; len(hp) > 0 {
			r.Hash, r.HasHash = policy.RequestHash(hp, &c.headers, c.req, c.h.t.nodeID)
		}
		if pick, err = c.cs.bal.Pick(r); err != nil {
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

	var perTryTimer *time.Timer
	if perTry > 0 && (c.deadline.IsZero() || time.Until(c.deadline) > perTry) {
		if c.cancel == nil {
			c.renew()
		}
		cancel := c.cancel
		perTryTimer = time.AfterFunc(perTry, func() { cancel(ErrPerTryTimeout) })
	}
	ctx := c.ctx
	out := c.req.WithContext(ctx) // a shallow copy; req is not modified
	if body != nil {
		out.Body = body
	}
	if len(c.reqMut) > 0 {
		out.Header = c.req.Header.Clone()
		if out.Header == nil {
			out.Header = http.Header{}
		}
		dataplane.ApplyRequestMutations(c.reqMut, out.Header)
	}
	c.url = *c.req.URL
	c.url.Scheme, c.url.Host = up.scheme, addr
	if c.rewritten {
		c.url.Path, c.url.RawPath = c.path, c.rawPath
	}
	out.URL = &c.url
	out.Host = c.sendHost
	c.status = 0
	resp, err := up.rt.RoundTrip(out)
	if perTryTimer != nil {
		perTryTimer.Stop() // Envoy's per-try timer ends with the response headers
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrPerTryTimeout) {
			err = fmt.Errorf("%w (%s): %w", cause, perTry, err)
		}
		c.finishAttempt(err)
		return nil, fmt.Errorf("endpoint %s: %w", addr, err)
	}
	c.result, c.status = nil, resp.StatusCode
	if resp.StatusCode >= 500 {
		c.result = errServerError
	}
	return resp, nil
}

// handOver returns resp, the last attempt's response, as the
// application gets it: its Request is the application's, its session
// cookie set, and its body ends the attempt and the call.
func (c *call) handOver(resp *http.Response) *http.Response {
	resp.Request = c.req
	if len(c.respMut) > 0 {
		dataplane.ApplyResponseMutations(c.respMut, resp.Header)
	}
	if c.session != nil {
		if v, ok := c.session.SetCookie(); ok {
			resp.Header.Add("Set-Cookie", v)
		}
	}
	c.body.rc, c.body.c = resp.Body, c
	resp.Body = &c.body
	return resp
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
	if ref, ok := c.st.outlier[c.pick.Endpoint]; ok && c.req.Context().Err() == nil {
		// A 5xx or no response is a failure (docs/http.md); the
		// application's cancel is not.
		c.h.t.od.record(ref, result, c.status)
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
