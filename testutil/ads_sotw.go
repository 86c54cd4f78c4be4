// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// adsStream is the server side of one SotW ADS stream, as the gRPC and the
// in-memory paths both provide it. Send and Recv may be called
// concurrently with each other, but not with themselves. Recv must return
// once Context is done.
type adsStream interface {
	Send(*v3discoverypb.DiscoveryResponse) error
	Recv() (*v3discoverypb.DiscoveryRequest, error)
	Context() context.Context
}

// sotwStream is the state of one accepted SotW stream.
type sotwStream struct {
	// Initialized at creation time and read-only afterwards.
	id              int64         // StreamID, server-wide
	broken          chan struct{} // closed by BreakStreams (under ms.mu, which then forgets the stream)
	snapshotChanged chan struct{} // cap 1; Update signals it without blocking
	sendReady       chan struct{} // cap 1; signalled when sendQueue grows
	sendQuit        chan struct{} // closed by the handler to stop the sender
	sendFailed      chan error    // cap 1; the sender's Send error

	// Guarded by sendMu. Responses go out in queue order.
	sendMu    sync.Mutex
	sendQueue []*v3discoverypb.DiscoveryResponse

	// Only accessed from the stream's handler goroutine (serveSotW).
	gotFirst bool                  // the first request was handled
	node     *v3corepb.Node        // node of the first request; may be nil
	nodeID   string                // node.GetId(): selects the snapshot
	types    map[string]*typeState // per type URL, once requested
	order    []string              // type URLs in order of their first request
}

// typeState is a stream's subscription to one type URL and what was last
// sent for it from snapshots.
type typeState struct {
	explicit    bool            // some request named resources (so [] is no longer the legacy wildcard)
	wildcard    bool            // subscribed to every resource of the type
	names       map[string]bool // explicitly subscribed names, "*" excluded
	sent        bool            // a snapshot response of this type was sent
	sentVersion string          // version_info of that response
}

// subscribed reports whether the stream wants any resource of the type.
// An empty, non-wildcard subscription gets no responses at all: the client
// unsubscribed from everything of the type.
func (ts *typeState) subscribed() bool { return ts.wildcard || len(ts.names) > 0 }

func newSotWStream(id int64) *sotwStream {
	return &sotwStream{
		id:              id,
		broken:          make(chan struct{}),
		snapshotChanged: make(chan struct{}, 1),
		sendReady:       make(chan struct{}, 1),
		sendQuit:        make(chan struct{}),
		sendFailed:      make(chan error, 1),
		types:           make(map[string]*typeState),
	}
}

// recvResult is one result of adsStream.Recv.
type recvResult struct {
	req *v3discoverypb.DiscoveryRequest
	err error
}

// serveSotW runs one SotW ADS stream until the client ends it, the
// stream's context is done, BreakStreams or Stop end it, or a Send fails.
// It runs on the stream's own goroutine (the gRPC handler, or the one
// in-memory NewStream starts), which must be counted in ms.wg. It returns
// the status the stream ends with.
//
// It starts two goroutines: a receiver, counted in ms.wg and not waited
// for here because a gRPC Recv returns only once the handler has returned,
// and a sender, waited for before returning so that Send is never called
// after the handler returned. The handler loop itself never blocks on
// Send, so a client that stops reading cannot stall Update or
// SendResponse; on exit the handler waits for a sender stuck in a gRPC
// Send, which Stop unblocks by closing the connections.
func (ms *ManagementServer) serveSotW(st adsStream) error {
	s, err := ms.openStream()
	if err != nil {
		return err
	}
	ctx := st.Context()

	received := make(chan recvResult)
	recvQuit := make(chan struct{})
	defer close(recvQuit)
	ms.wg.Add(1) // legal: this handler is counted, so the counter is not zero
	go func() {
		defer ms.wg.Done()
		for {
			req, err := st.Recv()
			select {
			case received <- recvResult{req, err}:
			case <-recvQuit:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		s.sendLoop(st)
	}()
	defer func() {
		close(s.sendQuit)
		<-senderDone
	}()
	// Runs first: SendResponse and Update stop choosing this stream.
	defer ms.closeStream(s)

	for {
		select {
		case r := <-received:
			if r.err != nil {
				if errors.Is(r.err, io.EOF) {
					return nil // the client half-closed: end the stream with OK
				}
				return r.err
			}
			ms.handleRequest(s, r.req)
		case <-s.snapshotChanged:
			ms.pushSnapshot(s)
		case err := <-s.sendFailed:
			return err
		case <-s.broken:
			return status.Error(codes.Unavailable, "testutil: stream broken by BreakStreams")
		case <-ms.stopped:
			return errStopped
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// sendLoop sends the queued responses in order until sendQuit is closed or
// a Send fails.
func (s *sotwStream) sendLoop(st adsStream) {
	for {
		select {
		case <-s.sendReady:
		case <-s.sendQuit:
			return
		}
		for {
			select {
			case <-s.sendQuit:
				return
			default:
			}
			s.sendMu.Lock()
			if len(s.sendQueue) == 0 {
				s.sendMu.Unlock()
				break
			}
			resp := s.sendQueue[0]
			s.sendQueue[0] = nil
			s.sendQueue = s.sendQueue[1:]
			s.sendMu.Unlock()
			if err := st.Send(resp); err != nil {
				s.sendFailed <- err // cap 1, and the only send
				return
			}
		}
	}
}

// enqueue queues resp for sending; it never blocks. The caller must not
// modify resp afterwards.
func (s *sotwStream) enqueue(resp *v3discoverypb.DiscoveryResponse) {
	s.sendMu.Lock()
	s.sendQueue = append(s.sendQueue, resp)
	s.sendMu.Unlock()
	select {
	case s.sendReady <- struct{}{}:
	default:
	}
}

// handleRequest records req, updates the subscription it carries and
// answers it from the node's snapshot when the xDS protocol calls for a
// response. It runs on the stream's handler goroutine.
func (ms *ManagementServer) handleRequest(s *sotwStream, req *v3discoverypb.DiscoveryRequest) {
	if !s.gotFirst {
		s.gotFirst = true
		s.node = req.GetNode()
		s.nodeID = s.node.GetId()
	}
	ms.recordRequest(&Request{StreamID: s.id, Node: s.node, Req: req})
	if ms.opts.Manual {
		return
	}
	typeURL := req.GetTypeUrl()
	ts, changed := s.updateSubscription(typeURL, req.GetResourceNames())
	snap := ms.snapshotFor(s.nodeID)
	switch {
	case snap == nil || !ts.subscribed():
	case changed:
		ms.respond(s, snap, typeURL, ts)
	case req.GetErrorDetail() != nil:
		// A NACK with an unchanged subscription: resending the rejected
		// version would only be rejected again.
	case !ts.sent || ts.sentVersion != snap.version:
		ms.respond(s, snap, typeURL, ts)
	}
}

// updateSubscription applies the resource_names of a request for typeURL
// and reports whether the subscription changed. Wildcard rules (xDS
// protocol, "How the client specifies what resources to return"): "*"
// subscribes to everything; an empty list is the legacy wildcard as long
// as every request of the type on the stream had an empty list (a client
// that subscribed to the wildcard that way ACKs with empty lists too), and
// once a request named something (even "*"), an empty list means no names
// at all.
func (s *sotwStream) updateSubscription(typeURL string, resourceNames []string) (*typeState, bool) {
	ts, seen := s.types[typeURL]
	if !seen {
		ts = &typeState{}
		s.types[typeURL] = ts
		s.order = append(s.order, typeURL)
	}
	if len(resourceNames) > 0 {
		ts.explicit = true
	}
	wildcard := !ts.explicit
	names := make(map[string]bool, len(resourceNames))
	for _, n := range resourceNames {
		if n == "*" {
			wildcard = true
			continue
		}
		names[n] = true
	}
	changed := !seen || wildcard != ts.wildcard || !sameSet(names, ts.names)
	ts.wildcard, ts.names = wildcard, names
	return ts, changed
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// pushSnapshot sends, for every type the stream subscribes to, in the
// order LDS, RDS, CDS, EDS, then other types by first appearance in the
// snapshot, then any remaining ones by first request, the node's snapshot
// if its version differs from the last one sent for that type.
func (ms *ManagementServer) pushSnapshot(s *sotwStream) {
	snap := ms.snapshotFor(s.nodeID)
	if snap == nil || !s.gotFirst {
		return
	}
	order := slices.Concat(builtinTypeURLs, snap.otherTypes, s.order)
	done := make(map[string]bool, len(order))
	for _, typeURL := range order {
		if done[typeURL] {
			continue
		}
		done[typeURL] = true
		ts := s.types[typeURL]
		if ts == nil || !ts.subscribed() || (ts.sent && ts.sentVersion == snap.version) {
			continue
		}
		ms.respond(s, snap, typeURL, ts)
	}
}

// respond queues the snapshot's response for typeURL: every resource of
// the type for a wildcard subscription, otherwise the subscribed names the
// snapshot has, in snapshot order either way.
func (ms *ManagementServer) respond(s *sotwStream, snap *snapshot, typeURL string, ts *typeState) {
	resp := &v3discoverypb.DiscoveryResponse{
		VersionInfo: snap.version,
		TypeUrl:     typeURL,
		Nonce:       ms.nextNonce(),
		Resources:   []*anypb.Any{},
	}
	for _, r := range snap.resources[typeURL] {
		if ts.wildcard || ts.names[r.name] {
			resp.Resources = append(resp.Resources, r.any)
		}
	}
	ts.sent, ts.sentVersion = true, snap.version
	s.enqueue(resp)
}
