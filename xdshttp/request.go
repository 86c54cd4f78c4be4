// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
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

// roundTrip sends req with st, the host's configuration: route, faults,
// timeout, then the attempt (docs/http.md, "What a request gets").
func (h *host) roundTrip(req *http.Request, st *hostState) (*http.Response, error) {
	e := &Error{Host: req.URL.Host}
	fail := func(err error) (*http.Response, error) {
		closeBody(req)
		e.Err = err
		return nil, e
	}
	authority := req.Host
	if authority == "" {
		authority = req.URL.Host
	}
	hh := routing.HTTPHeaders{Authority: authority, Method: req.Method, Path: req.URL.RequestURI(), Scheme: req.URL.Scheme, Fields: req.Header}
	headers := routing.Headers{Source: &hh, RawQuery: req.URL.RawQuery}
	rt := st.cfg.Route(req.URL.EscapedPath(), &headers)
	if rt == nil {
		return fail(fmt.Errorf("%w (virtual host %q)", ErrNoRoute, st.cfg.VirtualHost.Name))
	}
	e.Route = rt.Desc
	if !rt.Forwards() {
		return fail(fmt.Errorf("%w: action %v", ErrRouteAction, rt.Action))
	}
	target := rt.PickTarget()
	e.Cluster = target.Cluster
	cs := st.cluster(target.Cluster)
	if cs == nil || cs.err != nil {
		var err error = errors.New("not in the configuration")
		if cs != nil {
			err = cs.err
		}
		return fail(fmt.Errorf("%w: %w", ErrClusterUnavailable, err))
	}

	ctx := req.Context()
	// The route's timeout bounds the whole request, until its response
	// body is read to the end (docs/http.md, "Timeouts").
	cancel := context.CancelFunc(func() {})
	if d := routeTimeout(st.cfg, rt); d > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("%w (%v)", ErrTimeout, d))
	}
	var releases []func()
	end := func() {
		cancel()
		for _, r := range releases {
			r()
		}
	}
	faults, err := target.FaultsFor(rt)
	if err != nil {
		end()
		return fail(err)
	}
	for _, f := range faults {
		abort, release, err := dataplane.InjectFault(ctx, f, &headers)
		releases = append(releases, release)
		if err != nil {
			end()
			return fail(err)
		}
		if abort != nil {
			end()
			status := int(abort.Code)
			if abort.GRPC {
				status = http.StatusServiceUnavailable // a gRPC status aborts an HTTP request as 503
			}
			return fail(&FaultAbortError{Status: status})
		}
	}

	resp, err := h.attempt(ctx, req, authority, st, rt, cs, end)
	if err != nil {
		if c := context.Cause(ctx); errors.Is(c, ErrTimeout) && req.Context().Err() == nil {
			err = c // the route's timeout, not what it made the attempt fail with
		}
		return fail(err)
	}
	return resp, nil
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

// attempt sends one attempt of req to an endpoint of cs: the pick, drops,
// circuit breaking, load report and the endpoint's transport. end is
// called once the request is over: at once when the attempt fails, else
// when the response body is read to its end or closed.
func (h *host) attempt(ctx context.Context, req *http.Request, authority string, st *hostState, rt *Route, cs *clusterState, end func()) (*http.Response, error) {
	t := h.t
	pick, err := cs.bal.Pick(balance.Request{})
	if err != nil {
		end()
		return nil, fmt.Errorf("%w: %w", ErrNoHealthyEndpoint, err)
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
		end()
		return nil, fmt.Errorf("%w: category %q", ErrDropped, p.Drops[i].Category)
	}
	n := t.breakers.Counter(p.BreakerKey())
	if !dataplane.Acquire(n, p.MaxRequests) {
		if load != nil {
			load.DropCounter("").Add(1)
		}
		end()
		return nil, fmt.Errorf("%w (%d)", ErrCircuitBreakerOpen, p.MaxRequests)
	}
	var loc *lrs.LocalityLoad
	if load != nil {
		loc = load.Locality(pick.Locality.ID)
		loc.Start()
	}
	hs := st.security[p.Security]
	addr := pick.Endpoint.Addresses[0]
	key := upstreamKey{addr: addr, hs: hs}
	if p.Res != nil {
		key.proto = p.Res.UpstreamProtocol
	}
	switch {
	case hs != nil:
		key.hostname = pick.Endpoint.Hostname
	case req.URL.Scheme == "https":
		key.https, key.hostname = true, req.URL.Hostname()
	}
	up, err := t.ups.get(key)
	if err != nil {
		n.Add(-1)
		if loc != nil {
			loc.Finish(err)
		}
		end()
		return nil, err
	}
	pick.Host.Begin()
	finish := func(err error) {
		pick.Host.End()
		n.Add(-1)
		if loc != nil {
			loc.Finish(err)
		}
		up.done()
		end()
	}

	out := req.WithContext(ctx) // a shallow copy; req is not modified
	u := *req.URL
	u.Scheme, u.Host = up.scheme, addr
	out.URL = &u
	out.Host = authority
	resp, err := up.rt.RoundTrip(out)
	if err != nil {
		finish(err)
		return nil, fmt.Errorf("endpoint %s: %w", addr, err)
	}
	var result error
	if resp.StatusCode >= 500 {
		result = errServerError
	}
	resp.Request = req
	resp.Body = &responseBody{rc: resp.Body, end: func() { finish(result) }}
	return resp, nil
}

// responseBody is the body of a response handed to the application: its
// request is over when it is read to its end or closed.
type responseBody struct {
	rc   io.ReadCloser
	end  func()
	once sync.Once
}

func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.once.Do(b.end)
	}
	return n, err
}

func (b *responseBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.end)
	return err
}
