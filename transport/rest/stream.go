// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// stream polls one resource type: the engine opens one per type
// (transport.XDS.PerType), and each stream has one goroutine (poll).
type stream struct {
	// Initialized at creation time and read-only afterwards.
	t        *Transport
	p        *poller
	node     *v3corepb.Node                        // sent in every poll
	ctx      context.Context                       // ends with the client's stream or Transport.Close
	cancel   context.CancelFunc                    // cancels ctx
	out      chan *v3discoverypb.DiscoveryResponse // unbuffered: the poller hands responses to Recv
	failed   chan struct{}                         // closed by fail, after err is set
	failOnce sync.Once
	err      error

	mu sync.Mutex
	// Guarded by mu.
	started bool // the poll goroutine was started
}

// poller is the polling state of the stream's type. Guarded by stream.mu
// except where noted.
type poller struct {
	typeURL string        // read-only
	path    string        // read-only: the URL path suffix
	wake    chan struct{} // read-only; cap 1

	req        *v3discoverypb.DiscoveryRequest // the client's last request
	posted     []string                        // resource_names of the last poll
	answered   []string                        // resource_names of the last poll the server answered (200 or 304)
	postedAt   time.Time                       // when the outstanding poll was posted
	changed    bool                            // the names changed since the last poll: poll at once
	awaiting   bool                            // a response went to the client, which has not answered it yet
	cancelPoll context.CancelFunc              // cancels the outstanding poll; nil when none
}

func newStream(ctx context.Context, t *Transport, path string, spec transport.StreamSpec) *stream {
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel)
	context.AfterFunc(sctx, func() { stop() })
	return &stream{
		t:      t,
		p:      &poller{typeURL: spec.TypeURL, path: path, wake: make(chan struct{}, 1)},
		node:   spec.Node,
		ctx:    sctx,
		cancel: cancel,
		out:    make(chan *v3discoverypb.DiscoveryResponse),
		failed: make(chan struct{}),
	}
}

// Send records a request of the client: the names, version_info and
// error_detail of the next poll. The first request starts polling; a
// change of names polls at once; an answer (ACK or NACK) lets the next
// poll go after the interval.
func (s *stream) Send(r *transport.Request) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	req := r.SotW
	if req == nil || req.GetTypeUrl() != s.p.typeURL {
		return fmt.Errorf("rest: a %s stream got a request of another kind", s.p.typeURL)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.p
	p.req = req
	if r.Answer {
		p.awaiting = false
	}
	if !s.started || !slices.Equal(p.posted, req.GetResourceNames()) {
		p.changed = true
		if p.cancelPoll != nil && time.Since(p.postedAt) >= heldPoll {
			// Held by the server (long polling): post again with the new
			// names. A poll answered sooner is let finish, which keeps its
			// connection; the new names go at once after it.
			p.cancelPoll()
		}
	}
	if !s.started {
		if !s.t.goPoll(s.poll) {
			return transport.ErrClosed
		}
		s.started = true
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Recv returns the next response, or the error that ended the stream.
func (s *stream) Recv() (*transport.Response, error) {
	select {
	case resp := <-s.out:
		return &transport.Response{SotW: resp}, nil
	case <-s.failed:
		return nil, s.err
	case <-s.ctx.Done():
		select {
		case <-s.failed:
			return nil, s.err
		default:
			return nil, s.ctx.Err()
		}
	}
}

func (s *stream) fail(err error) {
	s.failOnce.Do(func() {
		s.err = err
		close(s.failed)
		s.cancel()
	})
}

// poll runs the polls of the stream's type until the stream ends. An
// empty resource_names is the wildcard (the client never sends it for
// anything else on a per-type stream), so it is polled like any other.
func (s *stream) poll() {
	p := s.p
	var (
		timer *time.Timer
		due   = true // the first poll goes at once
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		var body []byte
		var pctx context.Context
		ready := p.req != nil && !p.awaiting && (due || p.changed)
		if ready {
			var err error
			version := p.req.GetVersionInfo()
			if !subset(p.req.GetResourceNames(), p.answered) {
				// New names: a stateless server cannot tell that the
				// client lacks them, and one that answers 304 to a current
				// version whatever the names (go-control-plane v0.14's
				// HTTP gateway) would never send them. Ask without a
				// version, for everything.
				version = ""
			}
			body, err = protojson.Marshal(&v3discoverypb.DiscoveryRequest{
				VersionInfo:   version,
				Node:          s.node,
				ResourceNames: p.req.GetResourceNames(),
				TypeUrl:       p.typeURL,
				ErrorDetail:   p.req.GetErrorDetail(),
			})
			if err != nil {
				s.mu.Unlock()
				s.fail(fmt.Errorf("rest: marshalling the %s request: %w", p.typeURL, err))
				return
			}
			p.posted, p.changed, due = p.req.GetResourceNames(), false, false
			pctx, p.cancelPoll = context.WithCancel(s.ctx)
			p.postedAt = time.Now()
		}
		s.mu.Unlock()

		if !ready {
			var timerC <-chan time.Time
			if timer != nil {
				timerC = timer.C
			}
			select {
			case <-s.ctx.Done():
				return
			case <-p.wake:
			case <-timerC:
				timer, due = nil, true
			}
			continue
		}

		resp, err := s.fetch(pctx, p, body)
		cancelled := pctx.Err() != nil // by a change of names
		s.mu.Lock()
		p.cancelPoll()
		p.cancelPoll = nil
		if err == nil {
			p.answered = p.posted
		}
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return
		}
		if err != nil {
			if cancelled {
				continue // poll again with the new names
			}
			s.fail(err)
			return
		}
		if timer != nil {
			timer.Stop()
		}
		timer = time.NewTimer(jitter(s.t.opts.interval))
		if resp == nil {
			s.t.logger.Debug("rest: poll answered 304 Not Modified", xdslog.KeyTypeURL, p.typeURL)
			continue
		}
		s.mu.Lock()
		p.awaiting = true
		s.mu.Unlock()
		select {
		case s.out <- resp:
		case <-s.ctx.Done():
			return
		}
	}
}

// heldPoll is how long a poll must have been outstanding for a change of
// names to cancel it: a server that has not answered by then holds it.
const heldPoll = time.Second

// subset reports whether every name of a is in b.
func subset(a, b []string) bool {
	in := make(map[string]struct{}, len(b))
	for _, n := range b {
		in[n] = struct{}{}
	}
	for _, n := range a {
		if _, ok := in[n]; !ok {
			return false
		}
	}
	return true
}

// jitter returns d randomised by ±20 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
