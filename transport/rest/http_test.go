// SPDX-License-Identifier: Apache-2.0

package rest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/transport/rest"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// redirectServer answers every request with a redirect (307: the POST and
// its body follow) to target plus the request's path.
func redirectServer(t *testing.T, target string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(s.Close)
	return s
}

// checkCrossOriginRefused watches svc through a client polling from, which
// redirects to other: the watcher gets a connection error saying the
// redirect was refused, and other gets no request (the node is never sent
// there).
func checkCrossOriginRefused(t *testing.T, from *httptest.Server, other *restServer, opts ...rest.Option) {
	t.Helper()
	ctx := testContext(t)
	cfg, b, err := rest.Bootstrap(from.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Node.ID = "rest-node"
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.Next(ctx, t)
	if e.Kind != clienttest.ResourceError || !errors.Is(e.Err, client.ErrConnection) || !errors.Is(e.Err, rest.ErrCrossOriginRedirect) {
		t.Errorf("watcher event %v, want a ResourceError wrapping client.ErrConnection and rest.ErrCrossOriginRedirect", e)
	} else {
		for _, want := range []string{from.URL, other.URL} {
			if !strings.Contains(e.Err.Error(), want) {
				t.Errorf("error %q does not name %s", e.Err, want)
			}
		}
	}
	select {
	case r := <-other.requests:
		t.Errorf("the other origin got a request (node %v)", r.GetNode())
	default:
	}
}

// TestRedirect_OtherOrigin checks that a redirect to another origin (here
// another port) is refused: the old code followed it, sent the node there
// and accepted that server's resources.
func TestRedirect_OtherOrigin(t *testing.T) {
	other := newRESTServer(t)
	other.set("evil", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "evil-route")}})
	checkCrossOriginRefused(t, redirectServer(t, other.URL), other, rest.WithInterval(time.Hour))
}

// TestRedirect_OtherOrigin_UserClient checks the same with an HTTP client
// given with WithHTTPClient, whose own redirect policy is kept for
// redirects within the origin, and which is not modified.
func TestRedirect_OtherOrigin_UserClient(t *testing.T) {
	other := newRESTServer(t)
	other.set("evil", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "evil-route")}})
	var userPolicyCalls atomic.Int32
	userPolicy := func(*http.Request, []*http.Request) error {
		userPolicyCalls.Add(1)
		return nil
	}
	hc := &http.Client{CheckRedirect: userPolicy}
	checkCrossOriginRefused(t, redirectServer(t, other.URL), other, rest.WithHTTPClient(hc))
	if n := userPolicyCalls.Load(); n != 0 {
		t.Errorf("the client's own CheckRedirect was called %d times for a cross-origin redirect, want 0", n)
	}

	plain := &http.Client{}
	checkCrossOriginRefused(t, redirectServer(t, other.URL), other, rest.WithHTTPClient(plain))
	if plain.CheckRedirect != nil {
		t.Error("WithHTTPClient modified the client given: CheckRedirect set")
	}
}

// TestRedirect_SameOrigin checks that a redirect within the server's
// origin (another path) is followed, through the user's redirect policy
// when there is one.
func TestRedirect_SameOrigin(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")}})
	mux := http.NewServeMux()
	mux.HandleFunc("/old/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/old"), http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/", s.serve)
	s.Config.Handler = mux
	var policyCalls atomic.Int32
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		policyCalls.Add(1)
		return nil
	}}
	cfg, b, err := rest.Bootstrap(s.URL+"/old", rest.WithHTTPClient(hc), rest.WithInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.Want(ctx, t, clienttest.Changed, nil)
	if policyCalls.Load() == 0 {
		t.Error("the client's own CheckRedirect was not called for a same-origin redirect")
	}
}

// stallTransport is an http.RoundTripper, in process (fake time works),
// whose first stalls answers send the headers of a 200 and then a body that
// never ends (until the request's context does); later requests go to h.
type stallTransport struct {
	h      http.Handler
	stalls atomic.Int32 // how many requests still stall

	mu    sync.Mutex
	times []time.Time // of every request
}

func (t *stallTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.times = append(t.times, time.Now())
	t.mu.Unlock()
	if t.stalls.Add(-1) >= 0 {
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{}, Body: &stallBody{ctx: r.Context()}, Request: r}, nil
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func (t *stallTransport) requestTimes() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Time(nil), t.times...)
}

// stallBody gives `{"version_info":` and then nothing until ctx ends, as
// net/http's transport does when a request's context ends.
type stallBody struct {
	ctx  context.Context
	sent bool // the start was read
}

func (b *stallBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"version_info":`), nil
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (*stallBody) Close() error { return nil }

// TestPollTimeout_Default checks, in fake time, that a poll whose body
// stalls fails after the default deadline, DefaultPollTimeout (60 s): the
// stream fails, the watcher gets a connection error naming the deadline,
// and the next poll comes after the client's backoff (1 s ± 20 %) and
// succeeds. The old code waited for the body forever, and no watcher heard.
func TestPollTimeout_Default(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		s := &restServer{byType: make(map[string][]proto.Message), requests: make(chan *v3discoverypb.DiscoveryRequest, 1000)}
		s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")}})
		tr := &stallTransport{h: http.HandlerFunc(s.serve)}
		tr.stalls.Store(1)
		cfg, b, err := rest.Bootstrap("http://xds.invalid", rest.WithHTTPClient(&http.Client{Transport: tr}))
		if err != nil {
			t.Fatal(err)
		}
		// No does-not-exist timer before the deadline.
		c, err := client.New(cfg, client.WithTransportBuilder(b), client.WithWatchExpiryTimeout(2*rest.DefaultPollTimeout))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w := clienttest.NewRecorder[*resources.Listener]()
		defer client.Watch(c, resources.ListenerType, "svc", w)()
		start := time.Now()
		e := w.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
		if d := time.Since(start); d != rest.DefaultPollTimeout {
			t.Errorf("the stalled poll failed after %v, want %v", d, rest.DefaultPollTimeout)
		}
		if !errors.Is(e.Err, context.DeadlineExceeded) || !strings.Contains(e.Err.Error(), "rest.WithPollTimeout") {
			t.Errorf("error %q, want one wrapping context.DeadlineExceeded that names rest.WithPollTimeout", e.Err)
		}
		w.Want(ctx, t, clienttest.Changed, nil)
		times := tr.requestTimes()
		if len(times) != 2 {
			t.Fatalf("%d polls, want 2", len(times))
		}
		if gap := times[1].Sub(times[0]) - rest.DefaultPollTimeout; gap < 800*time.Millisecond || gap > 1200*time.Millisecond {
			t.Errorf("the poll after the failure came %v after it, want the backoff (1 s ± 20 %%)", gap)
		}
	})
}

// TestPollTimeout_Option checks WithPollTimeout over real HTTP: a server
// that sends the headers and part of the body, then stalls, fails the poll
// after the deadline set; the watcher of a cached value gets an ambient
// error. Each poll holds a context whose cancellation the handler sees.
func TestPollTimeout_Option(t *testing.T) {
	ctx := testContext(t)
	s := newRESTServer(t)
	s.set("v1", testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route")}})
	var stall atomic.Bool
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !stall.Load() {
			s.serve(w, r)
			return
		}
		io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"version_info":`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	const timeout = 300 * time.Millisecond
	c := newClient(t, s, rest.WithInterval(20*time.Millisecond), rest.WithPollTimeout(timeout))
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.Want(ctx, t, clienttest.Changed, nil)

	stall.Store(true)
	start := time.Now()
	e := w.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
	if d := time.Since(start); d < timeout {
		t.Errorf("error after %v, want at least the deadline %v", d, timeout)
	}
	if !errors.Is(e.Err, context.DeadlineExceeded) || !strings.Contains(e.Err.Error(), timeout.String()) {
		t.Errorf("error %q, want one wrapping context.DeadlineExceeded that names %v", e.Err, timeout)
	}
	stall.Store(false)
}
