// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"slices"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// adsStream is the server side of one SotW ADS stream.
type adsStream = streamConn[*v3discoverypb.DiscoveryRequest, *v3discoverypb.DiscoveryResponse]

// sotwStream is the state of one accepted SotW stream.
type sotwStream struct {
	streamCore[*v3discoverypb.DiscoveryResponse]

	// Only accessed from the stream's handler goroutine (serveSotW).
	types map[string]*typeState // per type URL, once requested

	// Guarded by nonceMu: responses are queued by the handler goroutine
	// and by SendResponse.
	nonceMu   sync.Mutex
	lastNonce map[string]string // type URL → nonce of the latest response of the type queued on the stream
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
		streamCore: newStreamCore[*v3discoverypb.DiscoveryResponse](id),
		types:      make(map[string]*typeState),
		lastNonce:  make(map[string]string),
	}
}

// enqueue queues resp, a snapshot or scripted response, and records its
// nonce as the latest of its type on the stream.
func (s *sotwStream) enqueue(resp *v3discoverypb.DiscoveryResponse) {
	s.nonceMu.Lock()
	s.lastNonce[resp.GetTypeUrl()] = resp.GetNonce()
	s.nonceMu.Unlock()
	s.streamCore.enqueue(resp)
}

// staleNonce reports whether a request of typeURL carrying nonce is stale:
// a response of the type was queued on the stream since the one whose
// nonce it carries (xDS protocol, "Resource updates": "A nonce becomes
// stale following a newer nonce being presented to Envoy in a
// DiscoveryResponse"). Before the first response of a type, no nonce is
// stale.
func (s *sotwStream) staleNonce(typeURL, nonce string) bool {
	s.nonceMu.Lock()
	defer s.nonceMu.Unlock()
	last, sent := s.lastNonce[typeURL]
	return sent && nonce != last
}

// serveSotW runs one SotW ADS stream (see serveStream).
func (ms *Server) serveSotW(st adsStream) error {
	return serveIn(ms, st, ms.streams, newSotWStream, ms.handleRequest, ms.pushSnapshot)
}

// handleRequest records req, updates the subscription it carries and
// answers it from the node's snapshot when the xDS protocol calls for a
// response. It runs on the stream's handler goroutine.
func (ms *Server) handleRequest(s *sotwStream, req *v3discoverypb.DiscoveryRequest) {
	s.noteNode(req.GetNode())
	ms.recordRequest(&Request{StreamID: s.id, Node: s.node, Req: req})
	if ms.opts.Manual {
		return
	}
	typeURL := req.GetTypeUrl()
	if s.staleNonce(typeURL, req.GetResponseNonce()) {
		// "The management server should not send a DiscoveryResponse for
		// any DiscoveryRequest that has a stale nonce" (xDS protocol,
		// "Resource updates"). Its subscription is ignored too: the
		// client's answer to the newer response carries the whole
		// subscription again.
		return
	}
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
func (ms *Server) pushSnapshot(s *sotwStream) {
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
func (ms *Server) respond(s *sotwStream, snap *snapshot, typeURL string, ts *typeState) {
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
