// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// sotwProtocol is the state-of-the-world variant of ADS
// (StreamAggregatedResources): every request carries the full subscription
// of its type, and LDS and CDS responses the full set of resources.
type sotwProtocol struct {
	ch *channel // read-only
}

// sotwTypeState is the SotW part of a typeState. Guarded by c.mu.
type sotwTypeState struct {
	version string // version_info last ACKed; kept across streams
}

func (p *sotwProtocol) method() string { return transport.ADSMethod }

// subscriptionChangedLocked has nothing to record: every SotW request
// carries the whole subscription, which ts.dirty says to send.
func (p *sotwProtocol) subscriptionChangedLocked(*typeState, string, bool) {}

func (p *sotwProtocol) streamStartedLocked(*typeState) {}

// nextRequestLocked returns the next request to send on ss, or nil. ACKs
// and NACKs go first, in response order; then each type whose subscription
// changed, in registry order. Every request carries the type's full
// current name list, sorted, with "*" first when the wildcard is subscribed
// so one request settles any number of subscription changes
// (coalescing); an empty list while the wildcard is subscribed in its legacy
// form (typeState.legacyWildcard). The entries it unsubscribes from go with
// it, to be dropped once it is written. The node goes in the first request of the stream only
//
func (p *sotwProtocol) nextRequestLocked(ss *streamState) *outgoing {
	ch := p.ch
	var (
		ts             *typeState
		version, nonce string
		detail         *statuspb.Status
		// changed: the request changes what the stream asks for (a
		// subscription change, or the type's first request on the
		// stream). Only such a request can start does-not-exist timers:
		// an ACK without a change names what the previous request of the
		// stream named, whose timers run already. Not walking the
		// names keeps the ACKs of a large subscription cheap.
		changed bool
	)
	if len(ss.acks) > 0 {
		a := ss.acks[0]
		ss.acks = ss.acks[1:]
		ts, version, nonce, detail = ch.types[a.typeURL], a.version, a.nonce, a.detail
		changed = ts.dirty || !ts.sentOnStream
	} else {
		for _, t := range ch.c.registry.Types() {
			cand := ch.types[t.TypeURL()]
			if cand == nil || !cand.dirty {
				continue
			}
			cand.dirty = false
			if !cand.hasSubscriptionLocked() && !cand.sentOnStream {
				// an empty list as the first request of a type
				// would be a (legacy) wildcard subscription. What was
				// unsubscribed was never asked for on this stream.
				ch.dropUnsubscribedLocked(cand, cand.takeUnsubscribedLocked())
				continue
			}
			ts, version, nonce, changed = cand, cand.sotw.version, cand.nonce, true
			break
		}
	}
	if ts == nil {
		return nil
	}
	if !ts.sentOnStream && len(ts.wildcard) > 0 {
		// The wildcard in its legacy form: see typeState.legacyWildcard.
		ts.legacyWildcard = true
	}
	names := ts.subscribedNamesLocked()
	var requested []string
	if changed {
		requested = names
	}
	if ts.legacyWildcard {
		// The empty list keeps the legacy wildcard, which covers every
		// name: the names are requested all the same (their timers run).
		names = []string{}
	}
	ts.dirty = false
	ts.sentOnStream = true
	req := &v3discoverypb.DiscoveryRequest{
		Node:          ch.nodeLocked(ss),
		TypeUrl:       ts.typ.TypeURL(),
		VersionInfo:   version,
		ResponseNonce: nonce,
		ResourceNames: names,
		ErrorDetail:   detail,
	}
	return &outgoing{
		msg:       req,
		typeURL:   req.GetTypeUrl(),
		requested: requested,
		drop:      ts.takeUnsubscribedLocked(),
		attrs: []any{xdslog.KeyVersionInfo, version, xdslog.KeyNonce, nonce,
			"names", len(names), "nack", detail != nil},
	}
}

// handleResponse processes one serialized DiscoveryResponse received on ss:
// it decodes and validates the resources, updates the cache, queues the ACK
// or NACK and schedules the watcher calls. It returns the response's flow
// control, or nil when the response was ignored.
//
// Decoding runs without c.mu, so that a large response does not hold up
// Watch, Dump or the streams of other management servers, and so that
// decoders (which may be user code, R-23) never run under the client's
// lock. It has three phases: look up the cached bytes of the named
// resources (locked), decode what changed (unlocked), apply (locked). Only
// this goroutine applies responses of this channel's resources, so the
// cache cannot change under it in between except by watches being added or
// cancelled, which applyLocked looks up afresh.
func (p *sotwProtocol) handleResponse(ss *streamState, b []byte) *flowControl {
	ch, c := p.ch, p.ch.c
	resp := &v3discoverypb.DiscoveryResponse{}
	err := proto.Unmarshal(b, resp)
	var typ resources.ResourceType
	if err == nil {
		typ = ch.lookupType(resp.GetTypeUrl())
	}
	if !ch.acceptResponse(ss, err, typ, resp.GetTypeUrl(), resp.GetNonce()) {
		return nil
	}
	ch.logger.Log(c.ctx, xdslog.LevelTrace, "received DiscoveryResponse", "response", resp)
	arrived := time.Now() // TTLs are timed from here
	items, beats, topErrs := unwrapAll(typ, resp)
	reps, repErrs := parseResourceErrors(resp.GetResourceErrors())
	topErrs = append(topErrs, repErrs...)

	c.mu.Lock()
	ch.lookupCachedLocked(ch.types[typ.TypeURL()], items)
	c.mu.Unlock()

	results, decodeErrs := decodeAll(typ, items)
	topErrs = append(topErrs, decodeErrs...)

	c.mu.Lock()
	defer c.mu.Unlock()
	ts := ch.types[typ.TypeURL()]
	if ch.stream != ss || c.closed || ts == nil {
		return nil
	}
	ts.nonce = resp.GetNonce()
	fc := newFlowControl()
	defer fc.seal()
	resErrs := p.applyLocked(ts, resp.GetVersionInfo(), results, beats, reps, len(topErrs) > 0, arrived, fc)
	for _, name := range unrequestedDuplicates(items) {
		// NACKed whether or not the client subscribed to it.
		if _, ok := resErrs[name]; !ok {
			resErrs[name] = fmt.Errorf("duplicate resource name %q", name)
		}
	}
	ch.recordUpdatesLocked(ts, ch.sotwValidLocked(ts, results, resErrs), len(topErrs)+len(resErrs))

	a := ackIntent{typeURL: typ.TypeURL(), nonce: resp.GetNonce()}
	if len(topErrs) == 0 && len(resErrs) == 0 {
		ts.sotw.version = resp.GetVersionInfo()
		a.version = ts.sotw.version
	} else {
		// a NACK carries the last ACKed version.
		a.version = ts.sotw.version
		a.detail = &statuspb.Status{
			Code:    int32(codes.InvalidArgument),
			Message: nackMessage(typ, topErrs, resErrs),
		}
		ch.logger.Warn("NACKing response", xdslog.KeyTypeURL, typ.TypeURL(), xdslog.KeyVersionInfo, resp.GetVersionInfo(),
			xdslog.KeyNonce, resp.GetNonce(), xdslog.KeyError, a.detail.GetMessage())
	}
	ss.acks = append(ss.acks, a)
	ch.kick()
	return fc
}

// unrequestedDuplicates returns the names that appear more than once among
// the items the client does not decode (not subscribed), in response
// order: decoded ones are counted by applyLocked. Names are compared by
// hash first, so that the common case (no duplicate) allocates one map, and
// a response with only subscribed resources none.
func unrequestedDuplicates(items []pending) []string {
	var (
		seed  maphash.Seed
		first map[uint64]int // allocated at the first unrequested item
		dups  []string
	)
	for i := range items {
		it := &items[i]
		if !it.unrequested {
			continue
		}
		if first == nil {
			seed, first = maphash.MakeSeed(), make(map[uint64]int, len(items)-i)
		}
		var h uint64
		if it.nameBytes != nil {
			h = maphash.Bytes(seed, it.nameBytes)
		} else {
			h = maphash.String(seed, it.name)
		}
		j, seen := first[h]
		if !seen {
			first[h] = i
			continue
		}
		if name := itemName(it); name == itemName(&items[j]) && !slices.Contains(dups, name) {
			dups = append(dups, name)
		}
	}
	return dups
}

func itemName(it *pending) string {
	if it.nameBytes != nil {
		return string(it.nameBytes)
	}
	return it.name
}

// unwrapAll removes the Resource wrappers of resp's resources,
// keeping their ttl, and names those whose type can tell without decoding.
// Heartbeats (wrappers with a name and no resource, R-18) are returned
// apart. Unusable wrappers are top-level errors.
func unwrapAll(typ resources.ResourceType, resp *v3discoverypb.DiscoveryResponse) (items []pending, beats []heartbeat, topErrs []error) {
	items = make([]pending, 0, len(resp.GetResources()))
	for i, r := range resp.GetResources() {
		inner, ttl, hb, err := unwrapSotW(r)
		switch {
		case err != nil:
			topErrs = append(topErrs, fmt.Errorf("resource %d: %w", i, err))
			continue
		case hb != nil:
			beats = append(beats, *hb)
			continue
		}
		p := pending{index: i, inner: inner, ttl: ttl}
		if nb, ok := typ.(nameByteser); ok {
			p.nameBytes, ok = nb.NameBytes(inner)
			if !ok {
				p.nameBytes = nil
			}
		}
		if p.nameBytes == nil {
			p.name, _ = typ.Name(inner)
		}
		items = append(items, p)
	}
	return items, beats, topErrs
}

// applyLocked updates the cache from the decoded results of one response
// of version, schedules the watcher calls (in response order, deletions
// last) and returns the per-resource errors by name, for the NACK.
//
// A name that appears more than once is invalid wherever it
// appears; every other valid resource is applied even if the response is
// NACKed.
//
// Resources that are not subscribed are ignored: neither applied nor
// validated nor NACKed (except a duplicated name, which handleResponse
// NACKs per R-8.3 whether or not it is subscribed), since "the client will
// silently ignore any supplied resources that were not explicitly
// requested" (xDS protocol, "How the client specifies what resources to
// return"). Deviation from grpc-go, which validates them and NACKs the
// response when one is invalid: a client would NACK resources meant for
// other clients, and a server that resends on NACK (go-control-plane
// v0.14) would loop. While the wildcard is subscribed (WatchAll), every
// resource is wanted and gets a cache entry.
//
// For types whose SotW responses carry every resource, a cached
// resource the response leaves out is deleted, unless the server has
// ignore_resource_deletion, or its name was watched again after its
// unsubscription was built and the response may answer a request that did
// not name it (resourceState.notRequested, skipDeletion); an entry
// received through the wildcard only is then forgotten. Deviation from grpc-go: when a resource of the
// response could not be attributed to a name (topLevelErrs), nothing is
// deleted, since the unnamed resource may be the one that looks omitted.
//
// The errors the server reported in resource_errors (reps) are applied
// after the resources, before deletions; a name they list is not
// left out.
//
// Heartbeats (beats) re-arm TTLs and count as their resource being
// present. now is when the response arrived.
func (p *sotwProtocol) applyLocked(ts *typeState, version string, results []decoded, beats []heartbeat, reps []reportedError, topLevelErrs bool, now time.Time, fc *flowControl) map[string]error {
	ch, c := p.ch, p.ch.c
	count := make(map[string]int, len(results))
	for _, d := range results {
		count[d.name]++
	}
	resErrs := make(map[string]error)
	for _, d := range results {
		if _, seen := resErrs[d.name]; seen {
			continue // a duplicate, handled at its first position
		}
		rs := c.entryForLocked(ts, d.name)
		if rs == nil {
			continue // not subscribed: ignored
		}
		err := d.err
		if count[d.name] > 1 {
			err = fmt.Errorf("duplicate resource name %q", d.name)
		}
		if err != nil {
			resErrs[d.name] = err
			c.resourceInvalidLocked(rs, err, version, now, fc)
			continue
		}
		c.resourceValidLocked(rs, d, version, now, fc)
	}
	c.applyHeartbeatsLocked(ts, beats, now)
	ch.applyReportedLocked(ts, reps, resErrs, now, fc)

	if !ts.typ.AllResourcesRequiredInSotW() || topLevelErrs {
		return resErrs
	}
	for _, r := range reps {
		count[r.name]++
	}
	for _, hb := range beats {
		count[hb.name]++
	}
	var missing []string
	for name := range ts.entries {
		if count[name] == 0 {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing) // deletions in name order
	for _, name := range missing {
		rs := ts.entries[name]
		if rs.notRequested || rs.skipDeletion {
			// Watched again after the request this response may answer:
			// the server did not know it was wanted again.
			rs.skipDeletion = false
			continue
		}
		if rs.value == nil {
			// Never received (R-9.7: the timer decides) or already
			// deleted; an invalid wildcard-only entry is forgotten.
			if len(rs.watchers) == 0 {
				c.dropEntryLocked(rs)
			}
			continue
		}
		ch.deleteLocked(rs, fc)
	}
	return resErrs
}
