// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// stream turns the client's DiscoveryRequests into polls, one goroutine
// (poller) per type.
type stream struct {
	// Initialized at creation time and read-only afterwards.
	t        *Transport
	ctx      context.Context    // ends with the client's stream or Transport.Close
	cancel   context.CancelFunc // cancels ctx
	out      chan []byte        // unbuffered: pollers hand responses to Recv
	failed   chan struct{}      // closed by fail, after err is set
	failOnce sync.Once
	err      error

	mu sync.Mutex
	// Guarded by mu.
	node    *v3corepb.Node // from the client's first request; sent in every poll
	pollers map[string]*poller
	nonce   int // last nonce given to a response
}

// poller is the polling state of one type. Guarded by stream.mu except
// where noted.
type poller struct {
	typeURL string        // read-only
	path    string        // read-only: the URL path suffix
	wake    chan struct{} // read-only; cap 1

	req        *v3discoverypb.DiscoveryRequest // the client's last request of the type
	posted     []string                        // resource_names of the last poll
	answered   []string                        // resource_names of the last poll the server answered (200 or 304)
	postedAt   time.Time                       // when the outstanding poll was posted
	changed    bool                            // the names changed since the last poll: poll at once
	awaitNonce string                          // nonce of the response the client has not answered yet
	cancelPoll context.CancelFunc              // cancels the outstanding poll; nil when none
}

func newStream(ctx context.Context, t *Transport) *stream {
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel)
	context.AfterFunc(sctx, func() { stop() })
	return &stream{
		t:       t,
		ctx:     sctx,
		cancel:  cancel,
		out:     make(chan []byte),
		failed:  make(chan struct{}),
		pollers: make(map[string]*poller),
	}
}

// Send records one DiscoveryRequest of the client: the type's names,
// version_info and error_detail for its next poll. The first request of a
// type starts polling it; a change of names polls at once.
func (s *stream) Send(b []byte) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	req := &v3discoverypb.DiscoveryRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return fmt.Errorf("rest: decoding DiscoveryRequest: %w", err)
	}
	path, ok := s.t.opts.paths[req.GetTypeUrl()]
	if !ok {
		return fmt.Errorf("rest: no endpoint for type %q (set one with rest.WithPath)", req.GetTypeUrl())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node == nil && req.GetNode() != nil {
		s.node = req.GetNode()
	}
	p := s.pollers[req.GetTypeUrl()]
	if p == nil {
		p = &poller{typeURL: req.GetTypeUrl(), path: path, wake: make(chan struct{}, 1)}
		s.pollers[p.typeURL] = p
		go s.poll(p)
	}
	p.req = req
	if p.awaitNonce != "" && req.GetResponseNonce() == p.awaitNonce {
		p.awaitNonce = "" // answered
	}
	if !slices.Equal(p.posted, req.GetResourceNames()) {
		p.changed = true
		if p.cancelPoll != nil && time.Since(p.postedAt) >= heldPoll {
			// Held by the server (long polling): post again with the new
			// names. A poll answered sooner is let finish, which keeps its
			// connection; the new names go at once after it.
			p.cancelPoll()
		}
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Recv returns the next response of any type, or the error that ended the
// stream.
func (s *stream) Recv() ([]byte, error) {
	select {
	case b := <-s.out:
		return b, nil
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

// poll runs the polls of p until the stream ends.
func (s *stream) poll(p *poller) {
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
		ready := p.req != nil && len(p.req.GetResourceNames()) > 0 && p.awaitNonce == "" && (due || p.changed)
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
			continue // 304 Not Modified
		}
		s.mu.Lock()
		s.nonce++
		resp.Nonce = strconv.Itoa(s.nonce)
		p.awaitNonce = resp.Nonce
		s.mu.Unlock()
		b, err := proto.Marshal(resp)
		if err != nil {
			s.fail(fmt.Errorf("rest: re-marshalling the %s response: %w", p.typeURL, err))
			return
		}
		select {
		case s.out <- b:
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
