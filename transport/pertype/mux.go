// SPDX-License-Identifier: Apache-2.0

package pertype

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/internal/backoff"
	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// muxStream is the transport.Stream the engine sees: one per-type stream
// (subStream) per type URL behind it.
//
// Lock order: subStream.sendMu, then mu. Neither is held while blocking on
// the network, except sendMu around a per-type stream's Send.
type muxStream struct {
	// Initialized at creation time and read-only afterwards.
	ctx      context.Context    // ends every per-type stream
	cancel   context.CancelFunc // cancels ctx
	tr       transport.Transport
	delta    bool               // DeltaDiscoveryRequest/Response rather than SotW
	services map[string]Service // by type URL
	recvCh   chan []byte        // unbuffered: per-type readers hand responses to Recv
	failed   chan struct{}      // closed by fail, after err is set
	failOnce sync.Once
	err      error // why the mux failed; written once, before failed is closed

	mu sync.Mutex
	// Guarded by mu.
	subs     map[string]*subStream // by type URL; created on the first request of a type
	node     *v3corepb.Node        // the node of the engine's first request; copied into every per-type stream's first request
	received bool                  // a response arrived on any per-type stream
}

// subStream is the per-type stream of one type URL, across reopenings.
type subStream struct {
	typeURL string // read-only

	// sendMu serialises Sends on st, and makes the replay the first
	// message of a reopened stream.
	sendMu sync.Mutex

	// Guarded by muxStream.mu.
	st      transport.Stream // current stream; nil before the first open and while reopening
	started bool             // the first open was attempted; serve owns (re)opening since
	nonces  []string         // nonces received on st not yet superseded by a request's nonce, in order

	// Replay state, guarded by muxStream.mu.
	last       *v3discoverypb.DiscoveryRequest // SotW: the last request of the type
	subscribed map[string]bool                 // delta: names subscribed and not unsubscribed since
	versions   map[string]string               // delta: name → version last received
}

// errMuxFailed ends a per-type reader after the mux failed.
var errMuxFailed = errors.New("pertype: mux stream failed")

// Send routes one serialized request to the stream of its type_url,
// opening that stream on the type's first request. A request that arrives
// while the type's stream is being reopened is not sent: the replay that
// opens the new stream carries its subscription. Send fails only for a
// message that is not a request of the mux's variant, or once the mux
// stream has ended; a failed per-type Send shows up in Recv, as for gRPC.
func (m *muxStream) Send(b []byte) error {
	select {
	case <-m.failed:
		return m.err
	default:
	}
	if err := m.ctx.Err(); err != nil {
		return err
	}
	req, err := m.decodeRequest(b)
	if err != nil {
		return err
	}
	sub := m.subFor(req.typeURL)
	sub.sendMu.Lock()
	defer sub.sendMu.Unlock()

	m.mu.Lock()
	if m.node == nil && req.node != nil {
		m.node = req.node
	}
	m.trackRequestLocked(sub, req)
	rewrite := false
	if req.nonce != "" && !sub.keepNonceLocked(req.nonce) {
		// Received on a stream of this type that has ended.
		req.setNonce("")
		rewrite = true
	}
	st, first := sub.st, !sub.started
	sub.started = true
	if first && req.node == nil && m.node != nil {
		req.setNode(m.node)
		rewrite = true
	}
	m.mu.Unlock()

	if st == nil && !first {
		return nil // being reopened: the replay carries the subscription
	}
	if first {
		method, err := m.methodFor(sub.typeURL)
		if err == nil {
			st, err = m.tr.NewStream(m.ctx, method)
		}
		if err != nil {
			go m.serve(sub, nil, err)
			return nil
		}
		m.mu.Lock()
		sub.st = st
		m.mu.Unlock()
		defer func() { go m.serve(sub, st, nil) }()
	}
	if rewrite {
		if b, err = proto.Marshal(req.msg); err != nil {
			return fmt.Errorf("pertype: re-marshalling request: %w", err)
		}
	}
	_ = st.Send(b) // a failed stream reports its error through Recv
	return nil
}

// Recv returns the next response of any type, or the error that ended the
// mux stream: the context's error, or the failure of a type's stream
// before the mux received anything.
func (m *muxStream) Recv() ([]byte, error) {
	select {
	case b := <-m.recvCh:
		return b, nil
	case <-m.failed:
		return nil, m.err
	case <-m.ctx.Done():
		select {
		case <-m.failed: // fail cancels ctx too: its error wins
			return nil, m.err
		default:
			return nil, m.ctx.Err()
		}
	}
}

// fail ends the mux stream with err; the first call wins.
func (m *muxStream) fail(err error) {
	m.failOnce.Do(func() {
		m.err = err
		close(m.failed)
		m.cancel()
	})
}

// subFor returns the per-type stream state of typeURL, creating it.
func (m *muxStream) subFor(typeURL string) *subStream {
	m.mu.Lock()
	defer m.mu.Unlock()
	sub := m.subs[typeURL]
	if sub == nil {
		sub = &subStream{typeURL: typeURL, subscribed: make(map[string]bool), versions: make(map[string]string)}
		m.subs[typeURL] = sub
	}
	return sub
}

// serve runs the per-type stream of sub: it reads st until it fails, then
// fails the mux (nothing received on the mux yet) or reopens the type's
// stream with its own backoff and replays its subscription, until the mux
// ends. openErr is the error of an open that failed before serve started.
func (m *muxStream) serve(sub *subStream, st transport.Stream, openErr error) {
	bo := backoff.NewStreamBackoff()
	for {
		got, err, opened := false, openErr, time.Now()
		if st != nil {
			got, err = m.readLoop(sub, st)
		}
		m.mu.Lock()
		if sub.st == st {
			sub.st = nil
		}
		sub.nonces = nil
		// A size limit is reported whenever it is hit, as the engine does
		// for its own stream: retrying would hit it again.
		fatal := !m.received || errors.Is(err, transport.ErrMessageTooLarge)
		m.mu.Unlock()
		if m.ctx.Err() != nil {
			return
		}
		if fatal {
			m.fail(fmt.Errorf("pertype: stream of %s: %w", sub.typeURL, err))
			return
		}
		var delay time.Duration
		if got && time.Since(opened) >= healthyStreamDuration {
			bo.Reset() // a healthy stream is replaced at once
		} else {
			delay = bo.NextBackOff()
		}
		if !sleep(m.ctx, delay) {
			return
		}
		st, openErr = m.reopen(sub)
	}
}

// healthyStreamDuration is how long a type's stream that received a
// response must have lived for its end to be followed by a new stream at
// once, with a fresh backoff; otherwise the type's backoff applies, so that
// a server that answers and then fails at once is not reconnected to in a
// tight loop. The client's engine uses the same rule for its own stream.
const healthyStreamDuration = 10 * time.Second

// sleep waits for d or until ctx ends, and reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// reopen opens a new stream for sub and sends the replay of its
// subscription as its first message.
func (m *muxStream) reopen(sub *subStream) (transport.Stream, error) {
	method, err := m.methodFor(sub.typeURL)
	if err != nil {
		return nil, err
	}
	st, err := m.tr.NewStream(m.ctx, method)
	if err != nil {
		return nil, err
	}
	sub.sendMu.Lock()
	defer sub.sendMu.Unlock()
	m.mu.Lock()
	msg := m.replayLocked(sub)
	sub.st = st
	m.mu.Unlock()
	if msg != nil {
		b, err := proto.Marshal(msg)
		if err != nil {
			return st, fmt.Errorf("pertype: marshalling the replay: %w", err)
		}
		_ = st.Send(b) // a failed stream reports its error through Recv
	}
	return st, nil
}

// readLoop hands the responses of st to Recv until st fails, and reports
// whether st received anything.
func (m *muxStream) readLoop(sub *subStream, st transport.Stream) (got bool, err error) {
	for {
		b, err := st.Recv()
		if err != nil {
			return got, err
		}
		got = true
		m.mu.Lock()
		m.received = true
		m.trackResponseLocked(sub, b)
		m.mu.Unlock()
		select {
		case m.recvCh <- b:
		case <-m.failed:
			return got, errMuxFailed
		case <-m.ctx.Done():
			return got, m.ctx.Err()
		}
	}
}

// keepNonceLocked reports whether nonce was received on the current
// stream of sub, and forgets the nonces received before it: the engine
// answers responses in order, so they cannot be named again.
func (sub *subStream) keepNonceLocked(nonce string) bool {
	i := slices.Index(sub.nonces, nonce)
	if i < 0 {
		return false
	}
	sub.nonces = sub.nonces[i:]
	return true
}

// request is a decoded request of either variant.
type request struct {
	msg     proto.Message // *v3discoverypb.DiscoveryRequest or *v3discoverypb.DeltaDiscoveryRequest
	typeURL string
	nonce   string
	node    *v3corepb.Node
}

func (r *request) setNonce(n string) {
	switch msg := r.msg.(type) {
	case *v3discoverypb.DiscoveryRequest:
		msg.ResponseNonce = n
	case *v3discoverypb.DeltaDiscoveryRequest:
		msg.ResponseNonce = n
	}
	r.nonce = n
}

func (r *request) setNode(n *v3corepb.Node) {
	switch msg := r.msg.(type) {
	case *v3discoverypb.DiscoveryRequest:
		msg.Node = n
	case *v3discoverypb.DeltaDiscoveryRequest:
		msg.Node = n
	}
	r.node = n
}

// decodeRequest parses a serialized request of the mux's variant.
func (m *muxStream) decodeRequest(b []byte) (*request, error) {
	if m.delta {
		msg := &v3discoverypb.DeltaDiscoveryRequest{}
		if err := proto.Unmarshal(b, msg); err != nil {
			return nil, fmt.Errorf("pertype: decoding DeltaDiscoveryRequest: %w", err)
		}
		return &request{msg: msg, typeURL: msg.GetTypeUrl(), nonce: msg.GetResponseNonce(), node: msg.GetNode()}, nil
	}
	msg := &v3discoverypb.DiscoveryRequest{}
	if err := proto.Unmarshal(b, msg); err != nil {
		return nil, fmt.Errorf("pertype: decoding DiscoveryRequest: %w", err)
	}
	return &request{msg: msg, typeURL: msg.GetTypeUrl(), nonce: msg.GetResponseNonce(), node: msg.GetNode()}, nil
}

// trackRequestLocked records what a replay of sub needs from req.
func (m *muxStream) trackRequestLocked(sub *subStream, req *request) {
	switch msg := req.msg.(type) {
	case *v3discoverypb.DiscoveryRequest:
		sub.last = msg
	case *v3discoverypb.DeltaDiscoveryRequest:
		for _, n := range msg.GetResourceNamesSubscribe() {
			sub.subscribed[n] = true
		}
		for _, n := range msg.GetResourceNamesUnsubscribe() {
			delete(sub.subscribed, n)
			if !sub.subscribed[wildcard] {
				delete(sub.versions, n)
			}
		}
		maps.Copy(sub.versions, msg.GetInitialResourceVersions())
	}
}

// wildcard is the wildcard subscription's resource name.
const wildcard = "*"

// trackResponseLocked records the nonce of a response received on sub's
// current stream and, for delta, the versions it carries. A response that
// cannot be scanned is passed on untracked: the engine rejects it.
func (m *muxStream) trackResponseLocked(sub *subStream, b []byte) {
	if !m.delta {
		if nonce, err := scanNonce(b); err == nil {
			sub.nonces = append(sub.nonces, nonce)
		}
		return
	}
	d, err := scanDelta(b)
	if err != nil {
		return
	}
	sub.nonces = append(sub.nonces, d.nonce)
	for _, r := range d.resources {
		sub.versions[r.name] = r.version
	}
	for _, n := range d.removed {
		delete(sub.versions, n)
	}
}

// replayLocked returns the first request of a reopened stream of sub, or
// nil when the type's subscription is empty.
func (m *muxStream) replayLocked(sub *subStream) proto.Message {
	if !m.delta {
		if sub.last == nil || len(sub.last.GetResourceNames()) == 0 {
			return nil
		}
		return &v3discoverypb.DiscoveryRequest{
			Node:          m.node,
			TypeUrl:       sub.typeURL,
			VersionInfo:   sub.last.GetVersionInfo(),
			ResourceNames: sub.last.GetResourceNames(),
		}
	}
	if len(sub.subscribed) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(sub.subscribed))
	versions := make(map[string]string)
	for n, v := range sub.versions {
		if sub.subscribed[wildcard] || sub.subscribed[n] {
			versions[n] = v
		}
	}
	return &v3discoverypb.DeltaDiscoveryRequest{
		Node:                    m.node,
		TypeUrl:                 sub.typeURL,
		ResourceNamesSubscribe:  names,
		InitialResourceVersions: versions,
	}
}
