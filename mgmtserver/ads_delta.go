// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"context"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// deltaADSStream is the server side of one delta ADS stream.
type deltaADSStream = streamConn[*v3discoverypb.DeltaDiscoveryRequest, *v3discoverypb.DeltaDiscoveryResponse]

// deltaStream is the state of one accepted delta stream.
type deltaStream struct {
	streamCore[*v3discoverypb.DeltaDiscoveryResponse]

	// Only accessed from the stream's handler goroutine (serveDelta).
	types map[string]*deltaTypeState // per type URL, once requested
}

// deltaTypeState is a delta stream's subscription to one type URL and what
// the client has of it.
type deltaTypeState struct {
	wildcard bool              // subscribed to every resource of the type ("*", or the legacy wildcard)
	names    map[string]bool   // explicitly subscribed names, "*" excluded
	versions map[string]string // resource name → the version the client has (initial_resource_versions, then what was sent)
	absent   map[string]bool   // subscribed names the client was told, in removed_resources, do not exist

	// synced is the snapshot that versions, absent and names were last
	// brought in line with by a full walk (deltaResponse): since then,
	// only the names of later requests changed, so a request that keeps
	// the wildcard needs only those names looked at (deltaChange).
	synced *snapshot
}

func (ts *deltaTypeState) wants(name string) bool { return ts.wildcard || ts.names[name] }

func newDeltaStream(id int64) *deltaStream {
	return &deltaStream{streamCore: newStreamCore[*v3discoverypb.DeltaDiscoveryResponse](id), types: make(map[string]*deltaTypeState)}
}

// serveDelta runs one delta ADS stream (see serveStream).
func (ms *Server) serveDelta(st deltaADSStream) error {
	return serveIn(ms, st, ms.deltaStreams, newDeltaStream, ms.handleDeltaRequest, ms.pushDeltaSnapshot)
}

// handleDeltaRequest records req, applies the subscription change it
// carries and answers from the node's snapshot when something is owed.
// It runs on the stream's handler goroutine.
func (ms *Server) handleDeltaRequest(s *deltaStream, req *v3discoverypb.DeltaDiscoveryRequest) {
	s.noteNode(req.GetNode())
	ms.recordRequest(&Request{StreamID: s.id, Node: s.node, Delta: req})
	if ms.opts.Manual {
		return
	}
	typeURL := req.GetTypeUrl()
	ts, first := s.types[typeURL], false
	if ts == nil {
		first = true
		ts = &deltaTypeState{names: make(map[string]bool, len(req.GetResourceNamesSubscribe())), versions: map[string]string{}, absent: map[string]bool{}}
		s.types[typeURL] = ts
		s.order = append(s.order, typeURL)
		for n, v := range req.GetInitialResourceVersions() {
			ts.versions[n] = v
		}
		// "How the client specifies what resources to return": a first
		// request that names nothing is the legacy wildcard, for the
		// types that have wildcards (Listener and Cluster).
		if len(req.GetResourceNamesSubscribe()) == 0 && len(req.GetResourceNamesUnsubscribe()) == 0 &&
			(typeURL == listenerTypeURL || typeURL == clusterTypeURL) {
			ts.wildcard = true
		}
	}
	force := make(map[string]bool)
	var absentNow []string
	wasWildcard := ts.wildcard
	for _, n := range req.GetResourceNamesSubscribe() {
		if n == "*" {
			ts.wildcard = true
			continue
		}
		ts.names[n] = true
		delete(ts.absent, n)
		if !first {
			// "Subscribing to Resources": resent even if the server
			// believes the client has it.
			force[n] = true
		}
	}
	snap := ms.snapshotFor(s.nodeID)
	for _, n := range req.GetResourceNamesUnsubscribe() {
		if n == "*" {
			ts.wildcard = false
			continue
		}
		delete(ts.names, n)
		delete(ts.absent, n)
		if !ts.wildcard {
			delete(ts.versions, n) // the client forgets it
			continue
		}
		// "Unsubscribing from Resources", the exception: with the
		// wildcard, the client must learn whether the wildcard covers the
		// name; here it covers every resource of the snapshot.
		if snap != nil && ms.snapshotHas(snap, typeURL, n) {
			force[n] = true
		} else {
			absentNow = append(absentNow, n)
		}
	}
	if !ts.wildcard && (first || wasWildcard) {
		// Otherwise versions holds subscribed names only already.
		for n := range ts.versions {
			if !ts.names[n] {
				delete(ts.versions, n) // received through a wildcard since unsubscribed
			}
		}
	}
	if snap == nil {
		return
	}
	if !first && len(req.GetResourceNamesSubscribe()) == 0 && len(req.GetResourceNamesUnsubscribe()) == 0 {
		// An ACK or NACK: nothing changed that Update has not pushed.
		return
	}
	var resp *v3discoverypb.DeltaDiscoveryResponse
	if !first && ts.wildcard == wasWildcard && ts.synced == snap && ms.deltaViewOf(snap).unique[typeURL] {
		resp = ms.deltaChange(snap, typeURL, ts, force, absentNow)
	} else {
		resp = ms.deltaResponse(snap, typeURL, ts, force, absentNow)
	}
	if resp != nil {
		s.enqueue(resp)
	}
}

// pushDeltaSnapshot sends, for every type the stream subscribes to, in the
// order of pushSnapshot, what changed in the node's snapshot.
func (ms *Server) pushDeltaSnapshot(s *deltaStream) {
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
		if ts == nil {
			continue
		}
		if resp := ms.deltaResponse(snap, typeURL, ts, nil, nil); resp != nil {
			s.enqueue(resp)
		}
	}
}

// deltaResponse returns the response that brings the client's copy of
// typeURL up to date with snap, or nil when it is up to date: every wanted
// resource whose version the client does not have (and those in force), in
// snapshot order, and in removed_resources every name the client has or
// subscribed to that snap does not have (each absent subscribed name once),
// sorted, plus absentNow. It records what it sends as what the client has.
func (ms *Server) deltaResponse(snap *snapshot, typeURL string, ts *deltaTypeState, force map[string]bool, absentNow []string) *v3discoverypb.DeltaDiscoveryResponse {
	resp := &v3discoverypb.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: snap.version}
	view := ms.deltaViewOf(snap)
	inSnap := view.index[typeURL]
	var send []int // indices into the snapshot, in snapshot order
	for i, r := range snap.resources[typeURL] {
		if !ts.wants(r.name) {
			continue
		}
		if have, ok := ts.versions[r.name]; ok && have == view.versions[typeURL][i] && !force[r.name] {
			continue
		}
		send = append(send, i)
	}
	ms.addDeltaResources(resp, snap, view, ts, send)
	removed := slices.Clone(absentNow)
	for n := range ts.versions {
		if _, ok := inSnap[n]; !ok {
			removed = append(removed, n)
			delete(ts.versions, n)
			if ts.names[n] {
				ts.absent[n] = true
			}
		}
	}
	for n := range ts.names {
		if _, ok := inSnap[n]; !ok && !ts.absent[n] {
			removed = append(removed, n)
			ts.absent[n] = true
		}
	}
	ts.synced = snap
	return ms.finishDelta(resp, removed)
}

// deltaChange returns what deltaResponse would, for a request that
// changed only the names in force and absentNow of a type whose state
// was synced to snap (so everything else the client has is current) and
// whose snapshot names each resource once: the work is proportional to
// the request, not to the snapshot, so that a client subscribing in many
// small requests does not cost the server a walk of every resource each.
func (ms *Server) deltaChange(snap *snapshot, typeURL string, ts *deltaTypeState, force map[string]bool, absentNow []string) *v3discoverypb.DeltaDiscoveryResponse {
	resp := &v3discoverypb.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: snap.version}
	view := ms.deltaViewOf(snap)
	index := view.index[typeURL]
	removed := slices.Clone(absentNow)
	var send []int // indices into the snapshot, sent in snapshot order
	for n := range force {
		if i, ok := index[n]; ok {
			if ts.wants(n) {
				send = append(send, i)
			}
		} else if ts.names[n] && !ts.absent[n] {
			removed = append(removed, n)
			ts.absent[n] = true
		}
	}
	slices.Sort(send)
	ms.addDeltaResources(resp, snap, view, ts, send)
	return ms.finishDelta(resp, removed)
}

// addDeltaResources puts the resources of resp.TypeUrl at the snapshot
// indices send in resp, in that order, and records their versions as
// what the client has. The Resource wrappers are allocated as one array.
func (ms *Server) addDeltaResources(resp *v3discoverypb.DeltaDiscoveryResponse, snap *snapshot, view *deltaView, ts *deltaTypeState, send []int) {
	if len(send) == 0 {
		return
	}
	typeURL := resp.GetTypeUrl()
	if len(ts.versions) == 0 {
		ts.versions = make(map[string]string, len(send)) // not grown step by step for a first response
	}
	wrappers := make([]v3discoverypb.Resource, len(send))
	resp.Resources = make([]*v3discoverypb.Resource, len(send))
	for k, i := range send {
		w := &wrappers[k]
		w.Name, w.Version, w.Resource = snap.resources[typeURL][i].name, view.versions[typeURL][i], view.inner[typeURL][i]
		resp.Resources[k] = w
		ts.versions[w.Name] = w.Version
	}
}

// finishDelta sets the sorted removed names and a nonce on resp, or
// returns nil when resp would carry nothing.
func (ms *Server) finishDelta(resp *v3discoverypb.DeltaDiscoveryResponse, removed []string) *v3discoverypb.DeltaDiscoveryResponse {
	slices.Sort(removed)
	resp.RemovedResources = slices.Compact(removed)
	if len(resp.Resources) == 0 && len(resp.RemovedResources) == 0 {
		return nil
	}
	resp.Nonce = ms.nextNonce()
	return resp
}

// deltaView is what delta streams send of a snapshot: per type URL, in
// snapshot order, each resource without the SotW Resource wrapper and its
// per-resource version; each name's position (its first, if repeated),
// and whether every name is there once. It is built once per
// snapshot, by the first delta stream that needs it, so that a push costs
// each stream map lookups, not hashing.
type deltaView struct {
	once     sync.Once
	inner    map[string][]*anypb.Any
	versions map[string][]string
	index    map[string]map[string]int
	unique   map[string]bool
}

func (ms *Server) deltaViewOf(snap *snapshot) *deltaView {
	v := &snap.delta
	v.once.Do(func() {
		v.inner = make(map[string][]*anypb.Any, len(snap.resources))
		v.versions = make(map[string][]string, len(snap.resources))
		v.index = make(map[string]map[string]int, len(snap.resources))
		v.unique = make(map[string]bool, len(snap.resources))
		for typeURL, rs := range snap.resources {
			index := make(map[string]int, len(rs))
			for i, r := range rs {
				inner := r.inner
				v.inner[typeURL] = append(v.inner[typeURL], inner)
				v.versions[typeURL] = append(v.versions[typeURL], deltaVersion(inner))
				if _, ok := index[r.name]; !ok {
					index[r.name] = i
				}
			}
			v.index[typeURL] = index
			v.unique[typeURL] = len(index) == len(rs)
		}
	})
	return v
}

// deltaVersion is the per-resource version of a delta response: a hash of
// the resource's type URL and bytes, so that a resource that did not
// change between snapshots keeps its version and is not sent again.
func deltaVersion(a *anypb.Any) string {
	h := fnv.New64a()
	h.Write([]byte(a.GetTypeUrl()))
	h.Write([]byte{0})
	h.Write(a.GetValue())
	return hex.EncodeToString(h.Sum(nil))
}

func (ms *Server) snapshotHas(snap *snapshot, typeURL, name string) bool {
	_, ok := ms.deltaViewOf(snap).index[typeURL][name]
	return ok
}

// SendDeltaResponse queues a copy of resp on the newest open delta stream
// (the one with the highest StreamID among delta streams), waiting until
// one is open or ctx ends. If resp.Nonce is "", the copy gets a fresh
// nonce, unique on this server; SendDeltaResponse returns the nonce of the
// copy. It works as SendResponse does for SotW: scripted and snapshot
// responses share the stream's queue, a scripted response does not change
// what the server considers the client has, and it works whether or not
// the server is Manual. It returns an error wrapping ctx.Err() if ctx ends
// first, or an error if the server was stopped.
func (ms *Server) SendDeltaResponse(ctx context.Context, resp *v3discoverypb.DeltaDiscoveryResponse) (nonce string, err error) {
	return sendScriptedTo(ctx, ms, "delta stream", ms.deltaStreams, resp,
		func(r *v3discoverypb.DeltaDiscoveryResponse, nonce string) { r.Nonce = nonce })
}
