// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"
)

// withRetry returns r with the retry policy p on its route.
func withRetry(r testutil.Resources, p *v3routepb.RetryPolicy) testutil.Resources {
	r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().RetryPolicy = p
	return r
}

// failing returns a handler that answers status to the first n requests,
// then 200 with the request's body, counting every request in calls.
func failing(n int64, status int, calls *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) <= n {
			w.WriteHeader(status)
			return
		}
		w.Write(body)
	}
}

// TestTransport_Retry5xx: retry_on 5xx retries a 503 up to num_retries
// times, the body sent again each time (GetBody); with fewer retries than
// failures, the last 503 is returned as it came.
func TestTransport_Retry5xx(t *testing.T) {
	e := newCliEnv(t)
	var calls atomic.Int64
	b := startBackend(t, "b", failing(2, http.StatusServiceUnavailable, &calls))
	e.update(t, withRetry(clientResources("svc", b), &v3routepb.RetryPolicy{RetryOn: "5xx", NumRetries: wrapperspb.UInt32(2)}))
	resp, err := e.hc.Post("http://svc/", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "payload" || calls.Load() != 3 {
		t.Errorf("POST with 2 failures and 2 retries: %d %q after %d attempts, want 200 \"payload\" after 3", resp.StatusCode, body, calls.Load())
	}

	calls.Store(-10) // ten more failures
	resp, err = e.hc.Post("http://svc/", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || calls.Load() != -7 {
		t.Errorf("retries used up: status %d after %d attempts, want the last 503 after 3", resp.StatusCode, calls.Load()+10)
	}
}

// TestTransport_RetryNeedsReplayableBody: a request whose body cannot be
// sent again (no GetBody) is not retried.
func TestTransport_RetryNeedsReplayableBody(t *testing.T) {
	e := newCliEnv(t)
	var calls atomic.Int64
	b := startBackend(t, "b", failing(1, http.StatusServiceUnavailable, &calls))
	e.update(t, withRetry(clientResources("svc", b), &v3routepb.RetryPolicy{RetryOn: "5xx", NumRetries: wrapperspb.UInt32(2)}))
	req, _ := http.NewRequest("POST", "http://svc/", io.NopCloser(strings.NewReader("once"))) // no GetBody
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || calls.Load() != 1 {
		t.Errorf("a body without GetBody: status %d after %d attempts, want 503 after 1", resp.StatusCode, calls.Load())
	}
}

// TestTransport_RetryConditions: each retry_on condition retries what it
// names and nothing else.
func TestTransport_RetryConditions(t *testing.T) {
	for _, tc := range []struct {
		retryOn string
		status  int
		retried bool
	}{
		{"5xx", 500, true},
		{"5xx", 409, false},
		{"gateway-error", 502, true},
		{"gateway-error", 500, false},
		{"retriable-4xx", 409, true},
		{"retriable-4xx", 404, false},
		{"reset", 503, false},
		{"connect-failure", 503, false},
	} {
		t.Run(tc.retryOn+"/"+http.StatusText(tc.status), func(t *testing.T) {
			e := newCliEnv(t)
			var calls atomic.Int64
			b := startBackend(t, "b", failing(1, tc.status, &calls))
			e.update(t, withRetry(clientResources("svc", b), &v3routepb.RetryPolicy{RetryOn: tc.retryOn, NumRetries: wrapperspb.UInt32(1)}))
			if _, _, err := e.get(t, "http://svc/"); err != nil {
				t.Fatal(err)
			}
			if got := calls.Load() == 2; got != tc.retried {
				t.Errorf("retry_on %s, status %d: %d attempts, want retried = %v", tc.retryOn, tc.status, calls.Load(), tc.retried)
			}
		})
	}
}

// TestTransport_RetryConnectFailure: with retry_on connect-failure, an
// endpoint that refuses connections is retried on another.
func TestTransport_RetryConnectFailure(t *testing.T) {
	e := newCliEnv(t)
	good := startBackend(t, "good", nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := &backend{name: "dead", port: portOf(t, l.Addr().String())}
	l.Close() // connections to it are refused
	e.update(t, withRetry(clientResources("svc", dead, good), &v3routepb.RetryPolicy{RetryOn: "connect-failure", NumRetries: wrapperspb.UInt32(3)}))
	for range 6 {
		if _, body, err := e.get(t, "http://svc/"); err != nil || body != "good" {
			t.Fatalf("GET: %q, %v; want every request answered by good", body, err)
		}
	}
}

// TestTransport_PerTryTimeout: an attempt whose response headers do not
// come within per_try_timeout is retried; without retries left, the
// request fails with ErrPerTryTimeout.
func TestTransport_PerTryTimeout(t *testing.T) {
	e := newCliEnv(t)
	var calls atomic.Int64
	var stuck atomic.Bool
	release := make(chan struct{})
	defer close(release)
	b := startBackend(t, "b", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 || stuck.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		io.WriteString(w, "second")
	})
	e.update(t, withRetry(clientResources("svc", b), &v3routepb.RetryPolicy{RetryOn: "reset", NumRetries: wrapperspb.UInt32(1), PerTryTimeout: durationpb.New(100 * time.Millisecond)}))
	if _, body, err := e.get(t, "http://svc/"); err != nil || body != "second" {
		t.Errorf("GET with a stuck first attempt: %q, %v; want the second attempt's answer", body, err)
	}
	stuck.Store(true) // every attempt stuck
	_, _, err := e.get(t, "http://svc/")
	if !errors.Is(err, xdshttp.ErrPerTryTimeout) {
		t.Errorf("GET with every attempt stuck: %v, want ErrPerTryTimeout", err)
	}
}
