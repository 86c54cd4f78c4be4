// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// The errors the Transport wraps around an attempt's error so that
// ShouldRetry can tell what happened (Envoy's reset reasons).
var (
	// ErrPerTryTimeout: the attempt's per_try_timeout expired before its
	// response headers.
	ErrPerTryTimeout = errors.New("per-try timeout")
	// ErrConnectFailure: no connection to the endpoint could be made
	// (dial, TLS handshake, proxy). A *net.OpError of Op "dial" is read
	// as one too.
	ErrConnectFailure = errors.New("connection failure")
	// ErrResetBeforeRequest: the attempt failed before its request
	// headers were written on a connection (httptrace's WroteHeaders had
	// not been called). A connection failure is one too.
	ErrResetBeforeRequest = errors.New("reset before the request was sent")
)

// Retry is a route's retry policy as an HTTP data path applies it:
// Envoy's router retry semantics for the attempts of one request
// ([x-envoy-retry-on], [retry semantics]). It is immutable, built once per
// configuration, and safe for concurrent use. A nil *Retry never retries
// and has no per-try timeout.
//
// [x-envoy-retry-on]: https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/router_filter#x-envoy-retry-on
// [retry semantics]: https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/http/http_routing#retry-semantics
type Retry struct {
	on             resources.HTTPRetryOn
	numRetries     int
	statusCodes    []uint32
	headers        []resources.HeaderMatcher // matched against the response
	requestHeaders []resources.HeaderMatcher // all must match the request
	perTry         time.Duration
	base, max      time.Duration // back-off
}

// NewRetry returns the retry policy of p, a route's (or, when the route
// has none, its virtual host's) RetryPolicy. It returns nil when p is nil,
// or when p neither retries HTTP requests (no HTTP retry_on condition) nor
// sets a per_try_timeout.
func NewRetry(p *resources.RetryPolicy) *Retry {
	if p == nil || (p.HTTPRetryOn == 0 && p.PerTryTimeout == 0) {
		return nil
	}
	return &Retry{
		on:             p.HTTPRetryOn,
		numRetries:     int(max(p.NumRetries, 1)),
		statusCodes:    p.RetriableStatusCodes,
		headers:        p.RetriableHeaders,
		requestHeaders: p.RetriableRequestHeaders,
		perTry:         p.PerTryTimeout,
		base:           p.BaseInterval,
		max:            p.MaxInterval,
	}
}

// MaxRetries returns num_retries: the most retries of a request (1 when
// the policy leaves it unset); 0 when r is nil or retries nothing.
func (r *Retry) MaxRetries() int {
	if r == nil || r.on == 0 {
		return 0
	}
	return r.numRetries
}

// PerTryTimeout returns per_try_timeout, the limit of each attempt until
// its response headers; 0 for none.
func (r *Retry) PerTryTimeout() time.Duration {
	if r == nil {
		return 0
	}
	return r.perTry
}

// RequestRetriable reports whether a request of headers h may be retried
// at all: every retriable_request_headers matcher matches it (Envoy's
// RetryPolicy.retriable_request_headers), true when there are none. h is
// the request's view for matchers (a *routing.HTTPHeaders: pseudo-headers
// such as ":method" included). False when r retries nothing.
func (r *Retry) RequestRetriable(h routing.HeaderSource) bool {
	if r.MaxRetries() == 0 {
		return false
	}
	for i := range r.requestHeaders {
		hm := &r.requestHeaders[i]
		v, ok := h.Header(hm.Name)
		if !routing.MatchHeaderValue(hm, v, ok) {
			return false
		}
	}
	return true
}

// ShouldRetry reports whether an attempt is retried by the conditions of
// the policy's retry_on, as Envoy's router decides it: resp is the
// attempt's response (nil when it got none) and err its error (nil when
// it got a response).
//
// With a response: a response carrying x-envoy-ratelimited is retried only
// under envoy-ratelimited; otherwise 5xx retries any 5xx status,
// gateway-error 502, 503 and 504, retriable-4xx 409,
// retriable-status-codes the listed statuses, retriable-headers a response
// whose headers (":status" included) match one of retriable_headers.
//
// Without a response, err says why (Envoy's reset reasons):
//   - a connection failure (errors.Is ErrConnectFailure, or a *net.OpError
//     of Op "dial") is retried under connect-failure, reset-before-request,
//     reset, gateway-error and 5xx;
//   - a failure before the request was sent (ErrResetBeforeRequest) under
//     reset-before-request, reset, gateway-error and 5xx;
//   - an HTTP/2 REFUSED_STREAM under refused-stream, reset, gateway-error
//     and 5xx;
//   - a per-try timeout (ErrPerTryTimeout) and any other reset under
//     reset, gateway-error and 5xx;
//   - the request's own end (context.Canceled, context.DeadlineExceeded
//     without ErrPerTryTimeout) never.
//
// ShouldRetry does not count attempts (MaxRetries) nor look at the
// request (RequestRetriable, a body that cannot be sent again).
func (r *Retry) ShouldRetry(resp *http.Response, err error) bool {
	if r == nil || r.on == 0 {
		return false
	}
	if err != nil {
		return r.retryReset(err)
	}
	if resp == nil {
		return false
	}
	return r.retryResponse(resp)
}

// resetRetriedOn are the conditions that retry an attempt without a
// response, whatever the reason.
const resetRetriedOn = resources.RetryOn5xx | resources.RetryOnGatewayError | resources.RetryOnReset

func (r *Retry) retryReset(err error) bool {
	switch {
	case errors.Is(err, ErrPerTryTimeout):
		return r.on&resetRetriedOn != 0
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case IsConnectFailure(err):
		return r.on&(resetRetriedOn|resources.RetryOnConnectFailure|resources.RetryOnResetBeforeRequest) != 0
	case errors.Is(err, ErrResetBeforeRequest):
		return r.on&(resetRetriedOn|resources.RetryOnResetBeforeRequest) != 0
	case IsRefusedStream(err):
		return r.on&(resetRetriedOn|resources.RetryOnRefusedStream) != 0
	}
	return r.on&resetRetriedOn != 0
}

func (r *Retry) retryResponse(resp *http.Response) bool {
	status := resp.StatusCode
	if _, limited := resp.Header[envoyRateLimited]; limited {
		return r.on&resources.RetryOnEnvoyRateLimited != 0
	}
	switch {
	case r.on&resources.RetryOn5xx != 0 && 500 <= status && status <= 599:
		return true
	case r.on&resources.RetryOnGatewayError != 0 && (status == 502 || status == 503 || status == 504):
		return true
	case r.on&resources.RetryOnRetriable4xx != 0 && status == http.StatusConflict:
		return true
	case r.on&resources.RetryOnRetriableStatusCodes != 0 && status >= 0 && slices.Contains(r.statusCodes, uint32(status)):
		return true
	case r.on&resources.RetryOnRetriableHeaders != 0:
		h := responseHeaders{resp}
		for i := range r.headers {
			hm := &r.headers[i]
			v, ok := h.Header(hm.Name)
			if routing.MatchHeaderValue(hm, v, ok) {
				return true
			}
		}
	}
	return false
}

// envoyRateLimited is x-envoy-ratelimited in net/http's canonical form.
var envoyRateLimited = http.CanonicalHeaderKey("x-envoy-ratelimited")

// responseHeaders is a response as header matchers see it, in Envoy's
// view: ":status", and the other headers by lowercase name, repeated
// values joined with ",".
type responseHeaders struct{ resp *http.Response }

func (h responseHeaders) Header(name string) (string, bool) {
	if name == ":status" {
		return strconv.Itoa(h.resp.StatusCode), true
	}
	vs := h.resp.Header.Values(name)
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// IsConnectFailure reports whether err is a failure to connect to an
// endpoint: it wraps ErrConnectFailure or a *net.OpError of Op "dial".
// The outlier detection of the HTTP path counts such failures as local
// origin errors.
func IsConnectFailure(err error) bool {
	if errors.Is(err, ErrConnectFailure) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// IsRefusedStream reports whether err is an HTTP/2 stream reset by the
// server with REFUSED_STREAM. net/http's HTTP/2 transport returns its
// StreamError as an unexported type (or, when it cannot replay the body,
// an error quoting it with %v), so it is recognised by its message, as
// that type formats it: "stream error: stream ID N; REFUSED_STREAM".
// net/http retries REFUSED_STREAM itself (at once, then with a back-off
// of 1 s, 2 s, …, up to 6 times) when the request has no body or
// GetBody, so the error reaches the data path only after those, or at
// once for a body it cannot replay.
func IsRefusedStream(err error) bool {
	msg := err.Error()
	i := strings.Index(msg, "stream error: ")
	return i >= 0 && strings.Contains(msg[i:], "; REFUSED_STREAM")
}
