// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// TestBackoff: retry k waits a uniform time in [0, min(base × (2^k − 1),
// max)) (Envoy's fully jittered back-off): never beyond the bound, and
// reaching its upper half sometimes.
func TestBackoff(t *testing.T) {
	r := NewRetry(&resources.RetryPolicy{HTTPRetryOn: resources.RetryOn5xx, NumRetries: 5, BaseInterval: 25 * time.Millisecond, MaxInterval: 250 * time.Millisecond})
	for k, bound := range map[int]time.Duration{1: 25 * time.Millisecond, 2: 75 * time.Millisecond, 3: 175 * time.Millisecond, 4: 250 * time.Millisecond, 60: 250 * time.Millisecond, 70: 250 * time.Millisecond} {
		var high bool
		for range 500 {
			d := r.Backoff(k)
			if d < 0 || d >= bound {
				t.Fatalf("Backoff(%d) = %v, want in [0, %v)", k, d, bound)
			}
			high = high || d >= bound/2
		}
		if !high {
			t.Errorf("Backoff(%d): 500 draws all below %v, want uniform up to %v", k, bound/2, bound)
		}
	}
	if d := (*Retry)(nil).Backoff(1); d != 0 {
		t.Errorf("nil Retry's Backoff = %v, want 0", d)
	}
}

// TestShouldRetry_Errors: an attempt without a response is retried by the
// conditions Envoy's reset reasons name; the request's own end never.
func TestShouldRetry_Errors(t *testing.T) {
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	refused := errors.New("http2: stream error: stream ID 3; REFUSED_STREAM")
	reset := errors.New("read: connection reset by peer")
	for _, tc := range []struct {
		on   resources.HTTPRetryOn
		err  error
		want bool
	}{
		{resources.RetryOnConnectFailure, dial, true},
		{resources.RetryOnConnectFailure, fmt.Errorf("x: %w", ErrConnectFailure), true},
		{resources.RetryOnConnectFailure, reset, false},
		{resources.RetryOnReset, reset, true},
		{resources.RetryOnReset, dial, true},
		{resources.RetryOn5xx, fmt.Errorf("%w", ErrPerTryTimeout), true},
		{resources.RetryOnGatewayError, reset, true},
		{resources.RetryOnRefusedStream, refused, true},
		{resources.RetryOnRefusedStream, reset, false},
		{resources.RetryOnRetriable4xx, reset, false},
		{resources.RetryOn5xx | resources.RetryOnReset, fmt.Errorf("x: %w", context.Canceled), false},
	} {
		r := NewRetry(&resources.RetryPolicy{HTTPRetryOn: tc.on, NumRetries: 1})
		if got := r.ShouldRetry(nil, tc.err); got != tc.want {
			t.Errorf("retry_on %v, error %v: ShouldRetry = %v, want %v", tc.on, tc.err, got, tc.want)
		}
	}
}

// TestShouldRetry_Responses: retriable status codes and headers, and
// x-envoy-ratelimited, as Envoy's router reads them.
func TestShouldRetry_Responses(t *testing.T) {
	resp := func(status int, h ...string) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}}
		for i := 0; i+1 < len(h); i += 2 {
			r.Header.Set(h[i], h[i+1])
		}
		return r
	}
	codes := NewRetry(&resources.RetryPolicy{HTTPRetryOn: resources.RetryOnRetriableStatusCodes, NumRetries: 1, RetriableStatusCodes: []uint32{418}})
	if !codes.ShouldRetry(resp(418), nil) || codes.ShouldRetry(resp(500), nil) {
		t.Error("retriable-status-codes [418]: want 418 retried and 500 not")
	}
	hdrs := NewRetry(&resources.RetryPolicy{HTTPRetryOn: resources.RetryOnRetriableHeaders, NumRetries: 1, RetriableHeaders: []resources.HeaderMatcher{{Name: "x-retry", Kind: resources.HeaderMatchExact, Value: "yes"}}})
	if !hdrs.ShouldRetry(resp(200, "X-Retry", "yes"), nil) || hdrs.ShouldRetry(resp(200), nil) {
		t.Error("retriable-headers x-retry: yes: want a response with it retried, one without not")
	}
	five := NewRetry(&resources.RetryPolicy{HTTPRetryOn: resources.RetryOn5xx, NumRetries: 1})
	if five.ShouldRetry(resp(503, "X-Envoy-Ratelimited", "true"), nil) {
		t.Error("5xx: a 503 with x-envoy-ratelimited is retried, want it not (only envoy-ratelimited retries it)")
	}
	if NewRetry(&resources.RetryPolicy{NumRetries: 1}) != nil {
		t.Error("a policy without HTTP conditions or per_try_timeout: NewRetry != nil")
	}
}

// TestRequestRetriable: retriable_request_headers must all match.
func TestRequestRetriable(t *testing.T) {
	r := NewRetry(&resources.RetryPolicy{HTTPRetryOn: resources.RetryOn5xx, NumRetries: 1, RetriableRequestHeaders: []resources.HeaderMatcher{{Name: ":method", Kind: resources.HeaderMatchExact, Value: "GET"}}})
	get := &routing.HTTPHeaders{Method: "GET", Fields: http.Header{}}
	post := &routing.HTTPHeaders{Method: "POST", Fields: http.Header{}}
	if !r.RequestRetriable(get) || r.RequestRetriable(post) {
		t.Error("retriable_request_headers :method GET: want GET retriable and POST not")
	}
}

// TestRewritePath: Envoy's RouteAction examples.
func TestRewritePath(t *testing.T) {
	re := func(p, sub string) *resources.RegexRewrite {
		rr, err := resources.NewRegexRewrite(&v3matcherpb.RegexMatchAndSubstitute{Pattern: &v3matcherpb.RegexMatcher{Regex: p}, Substitution: sub})
		if err != nil {
			t.Fatal(err)
		}
		return rr
	}
	for _, tc := range []struct {
		m    resources.RouteMatch
		a    resources.RouteAction
		in   string
		want string
	}{
		{resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/prefix"}, resources.RouteAction{PrefixRewrite: "/"}, "/prefix/etc", "//etc"},
		{resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/prefix/"}, resources.RouteAction{PrefixRewrite: "/"}, "/prefix/etc", "/etc"},
		{resources.RouteMatch{PathKind: resources.PathKindPath, Path: "/exact"}, resources.RouteAction{PrefixRewrite: "/other"}, "/exact", "/other"},
		{resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/"}, resources.RouteAction{RegexRewrite: re(`^/service/([^/]+)(/.*)$`, `\2/instance/\1`)}, "/service/foo/v1/api", "/v1/api/instance/foo"},
		{resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/"}, resources.RouteAction{RegexRewrite: re(`one`, `two`)}, "/xxx/one/yyy/one/zzz", "/xxx/two/yyy/two/zzz"},
		{resources.RouteMatch{PathKind: resources.PathKindPrefix, Prefix: "/"}, resources.RouteAction{}, "/same", "/same"},
	} {
		if got := RewritePath(&tc.m, &tc.a, tc.in); got != tc.want {
			t.Errorf("RewritePath(%q) with %+v = %q, want %q", tc.in, tc.a, got, tc.want)
		}
	}
}

// TestRequestHash: a header policy hashes as the gRPC path does (XXH64 of
// the value, combined by rotation); terminal stops; nothing yields no hash.
func TestRequestHash(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://svc/?q=7", nil)
	req.Header.Set("X-User", "alice")
	req.AddCookie(&http.Cookie{Name: "sid", Value: "s1"})
	h := &routing.Headers{Source: &routing.HTTPHeaders{Fields: req.Header}}
	hdr := resources.HashPolicy{Kind: resources.HashPolicyHeader, HeaderName: "x-user"}
	got, ok := RequestHash([]resources.HashPolicy{hdr}, h, req, "node")
	if !ok || got != xxhash.Sum64String("alice") {
		t.Errorf("header policy: %x, %v; want xxhash(alice)", got, ok)
	}
	cookie := resources.HashPolicy{Kind: resources.HashPolicyCookie, Name: "sid", Terminal: true}
	query := resources.HashPolicy{Kind: resources.HashPolicyQueryParameter, Name: "q"}
	got, _ = RequestHash([]resources.HashPolicy{cookie, query}, h, req, "node")
	if got != xxhash.Sum64String("s1") {
		t.Errorf("terminal cookie policy then query: %x, want the cookie's hash alone", got)
	}
	got, _ = RequestHash([]resources.HashPolicy{query, {Kind: resources.HashPolicySourceIP}}, h, req, "node")
	if want := (xxhash.Sum64String("7")<<1 | xxhash.Sum64String("7")>>63) ^ xxhash.Sum64String("node"); got != want {
		t.Errorf("query then source IP: %x, want %x", got, want)
	}
	if _, ok := RequestHash([]resources.HashPolicy{{Kind: resources.HashPolicyHeader, HeaderName: "x-absent"}}, h, req, "node"); ok {
		t.Error("a policy on an absent header yields a hash")
	}
}
