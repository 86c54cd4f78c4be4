// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"log/slog"
	"maps"
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

// deltaProtocol is the incremental variant of ADS
// (DeltaAggregatedResources; xDS protocol, "Incremental xDS"; ): the
// client sends changes to its subscription, the server sends the resources
// that changed, each with its own version, and names the deleted ones in
// removed_resources.
//
// Requests. The first request of a type on a stream subscribes to every
// name the client wants (and "*" when the wildcard is subscribed; the
// wildcard alone goes in its legacy form, no name, see
// typeState.legacyWildcard) and carries, in
// initial_resource_versions, the version of every resource of the type it
// has cached from that server (not from another server of the list, nor
// persisted), so that the server need not resend them. Later requests carry
// the difference between what the server was last told and what the client
// now wants: resource_names_subscribe and resource_names_unsubscribe, each
// sorted; they cost in proportion to that difference, not to the
// subscription (see subscriptionChangedLocked). ACKs and NACKs carry the response's nonce
// (NACKs an error_detail as in SotW, R-7.3, R-7.5) and any subscription
// change of their type still to send; requests that only change the
// subscription carry no nonce. The node is in the first request of the
// stream only.
//
// Responses: see handleResponse.
type deltaProtocol struct {
	ch *channel // read-only
}

// deltaTypeState is the delta part of a typeState. Guarded by c.mu.
//
// Changes are tracked as they happen, so that a request (an ACK most of
// all) costs in proportion to the change, not to the subscription: only the
// first request of a type on a stream walks every name.
//
// What the server was told is not kept name by name (at tens of thousands
// of names, a set of its own is a megabyte): once the type's first request
// on the stream is sent, the names subscribed on the wire are those of the
// subscription (typeState.subscribedNamesLocked) that are not in added,
// and those in removed. Before it, none are.
type deltaTypeState struct {
	added   map[string]bool // to subscribe in the next request: subscribed, not on the wire
	removed map[string]bool // to unsubscribe in the next request: on the wire, not subscribed
	resub   map[string]bool // to subscribe in the request after the next, which unsubscribes them

	// sawAliases: a resource with aliases, or delivered to an alias's
	// entry, was applied on this channel; removals then also look for
	// the entries it went to (removalTargetsLocked). Never reset.
	sawAliases bool
}

func (p *deltaProtocol) method() string { return transport.DeltaADSMethod }

// subscriptionChangedLocked records the change for the next request. A
// name subscribed and unsubscribed before a request went out is never
// sent. A name unsubscribed and subscribed again before a request went
// out was never unsubscribed as far as the server knows, and its cache
// entry is still there (R-10.3; R-6.2 "remove-then-add before a send is
// treated as add"): nothing is sent. Should the entry be gone while the
// name is on the wire, the client unsubscribes from it in the next
// request and subscribes in the one after, which every server answers
// with the resource (go-control-plane v0.14 does not resend on a bare
// re-subscribe).
func (p *deltaProtocol) subscriptionChangedLocked(ts *typeState, name string, subscribed bool) {
	d := &ts.delta
	if d.added == nil {
		d.added, d.removed, d.resub = make(map[string]bool), make(map[string]bool), make(map[string]bool)
	}
	if !subscribed {
		// name was subscribed: it is on the wire unless its
		// subscription is still to send (see deltaTypeState).
		if ts.sentOnStream && !d.added[name] {
			d.removed[name] = true
		}
		delete(d.added, name)
		delete(d.resub, name)
		return
	}
	// name was not subscribed: it is on the wire only while its
	// unsubscription is still to send.
	if !ts.sentOnStream || !d.removed[name] {
		if ts.sentOnStream {
			d.added[name] = true
		} // else the stream's first request names every subscription
		return
	}
	if name != wildcardName && !isGlob(name) && ts.entries[name] == nil {
		// Cannot happen while entries stay until their unsubscription
		// is written; kept as the safe answer.
		d.removed[name] = true
		d.resub[name] = true
		return
	}
	delete(d.removed, name)
}

// streamStartedLocked forgets what the previous stream's server was told.
func (p *deltaProtocol) streamStartedLocked(ts *typeState) {
	ts.delta = deltaTypeState{sawAliases: ts.delta.sawAliases}
}

// nextRequestLocked returns the next request to send on ss, or nil: an ACK
// or NACK first, in response order, else the subscription change of the
// first type in registry order that has one.
func (p *deltaProtocol) nextRequestLocked(ss *streamState) *outgoing {
	ch := p.ch
	if len(ss.acks) > 0 {
		a := ss.acks[0]
		ss.acks = ss.acks[1:]
		ts := ch.types[a.typeURL]
		req, requested := p.buildLocked(ts)
		req.ResponseNonce = a.nonce
		req.ErrorDetail = a.detail
		out := p.outgoingLocked(ss, req, requested)
		out.drop = ts.takeUnsubscribedLocked()
		return out
	}
	for _, t := range ch.c.registry.Types() {
		ts := ch.types[t.TypeURL()]
		if ts == nil || !ts.dirty {
			continue
		}
		if !ts.sentOnStream && !ts.hasSubscriptionLocked() {
			// Nothing to ask for: an empty first request would be the
			// legacy wildcard.
			ts.dirty = false
			ch.dropUnsubscribedLocked(ts, ts.takeUnsubscribedLocked())
			continue
		}
		first := !ts.sentOnStream
		req, requested := p.buildLocked(ts)
		drop := ts.takeUnsubscribedLocked()
		if !first && len(req.GetResourceNamesSubscribe()) == 0 && len(req.GetResourceNamesUnsubscribe()) == 0 {
			// Changed back and forth: nothing to tell. What is
			// unsubscribed now was never on the wire.
			ch.dropUnsubscribedLocked(ts, drop)
			continue
		}
		out := p.outgoingLocked(ss, req, requested)
		out.drop = drop
		return out
	}
	return nil
}

// buildLocked returns a request of ts's type carrying the subscription
// change not sent yet (everything, on the first request of the stream),
// and the names whose does-not-exist timers it may start. It records the
// change as sent.
func (p *deltaProtocol) buildLocked(ts *typeState) (*v3discoverypb.DeltaDiscoveryRequest, []string) {
	req := &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: ts.typ.TypeURL()}
	d := &ts.delta
	if !ts.sentOnStream {
		// The first request of the type on this stream: every name, and
		// (the reconnect case of "Incremental xDS") the versions of what
		// is cached from this server, received by name or through the
		// wildcard. The
		// wildcard alone goes in its legacy form, no name at all (see
		// typeState.legacyWildcard).
		req.ResourceNamesSubscribe = ts.subscribedNamesLocked()
		ts.names = nil // delta needs it no more on this stream: not kept
		if ts.subs == 0 && len(ts.wildcard) > 0 {
			ts.legacyWildcard = true
			req.ResourceNamesSubscribe = nil
		}
		for n, rs := range ts.entries {
			// Versions are the server's own: a value persisted (stale) or
			// sent by another server of the list must come again.
			if rs.value != nil && !rs.stale && rs.fromURI() == ts.ch.sc.ServerURI {
				if req.InitialResourceVersions == nil {
					req.InitialResourceVersions = make(map[string]string)
				}
				req.InitialResourceVersions[n] = rs.version
			}
		}
	} else {
		if ts.legacyWildcard && len(d.added) > 0 {
			// The first name subscribed ends the legacy form: the
			// wildcard goes on explicitly (xDS protocol, "How the client
			// specifies what resources to return").
			d.added[wildcardName] = true
			ts.legacyWildcard = false
		}
		req.ResourceNamesSubscribe = slices.Sorted(maps.Keys(d.added))
		req.ResourceNamesUnsubscribe = slices.Sorted(maps.Keys(d.removed))
	}
	clear(d.added)
	clear(d.removed)
	ts.dirty = false
	if ts.sentOnStream && len(d.resub) > 0 {
		// Unsubscribed by this request: subscribe in the next.
		for n := range d.resub {
			d.added[n] = true
		}
		clear(d.resub)
		ts.dirty = true
	}
	clear(d.resub) // on a first request, the names are subscribed anyway
	ts.sentOnStream = true
	var requested []string
	for _, n := range req.GetResourceNamesSubscribe() {
		if n != wildcardName && !isGlob(n) {
			requested = append(requested, n)
		}
	}
	return req, requested
}

func (p *deltaProtocol) outgoingLocked(ss *streamState, req *v3discoverypb.DeltaDiscoveryRequest, requested []string) *outgoing {
	req.Node = p.ch.nodeLocked(ss)
	return &outgoing{
		msg:       req,
		typeURL:   req.GetTypeUrl(),
		requested: requested,
		attrs: []any{xdslog.KeyNonce, req.GetResponseNonce(), "subscribe", len(req.GetResourceNamesSubscribe()),
			"unsubscribe", len(req.GetResourceNamesUnsubscribe()), "initial_versions", len(req.GetInitialResourceVersions()),
			"nack", req.GetErrorDetail() != nil},
	}
}

// deltaItem is one entry of a DeltaDiscoveryResponse's resources between
// the phases of handleResponse.
type deltaItem struct {
	pending
	version   string
	aliases   []string // canonical
	err       error    // set before decoding: duplicate name, both added and removed, no body
	heartbeat bool     // no body, same version as cached: re-arms the TTL only
	ignored   bool     // an unresolved alias (no body): nothing to do
	d         decoded
}

// handleResponse processes one serialized DeltaDiscoveryResponse received
// on ss, in the same three phases as the SotW one (look up cached bytes
// locked, decode unlocked, apply locked), and returns its flow control, or
// nil when the response was ignored (R-7.7, R-7.8, as in SotW).
//
// Each resource is identified by its Resource.name (its aliases also count,
// see below) and carries its own version, which goes into the cache entry
// and Dump's version_info; system_version_info is only logged. Resources
// whose bytes equal the cached ones are not decoded again. A resource is
// wanted when its name is watched, when one of its aliases is watched
// (xDS protocol, "Resource names": it is then delivered to the watchers of
// that alias, and cached under the alias; its value still carries its own
// name), or when the wildcard is subscribed (WatchAll); other resources are
// ignored, undecoded and not NACKed, as in SotW.
//
// A name that appears more than once among resources, or among resources
// and removed_resources together, makes the response a NACK (R-6.2; Envoy
// rejects the whole response). As in SotW that name is
// treated as invalid, neither applied nor removed, and the rest of the
// response is applied. So is a resource without a body that is neither a
// heartbeat (same version as cached, R-18.2) nor an unresolved alias (no
// body, aliases set), both of which are skipped, and a resource whose body
// names another resource than Resource.name.
//
// Every name in removed_resources that the client has an entry for is
// deleted (ResourceError wrapping ErrResourceNotFound, status
// DOES_NOT_EXIST), whatever the type, unless the server has
// ignore_resource_deletion and the resource is cached. A removed
// name that was requested but never received does not exist: the server
// says so without waiting for the does-not-exist timer ("Knowing When a
// Requested Resource Does Not Exist"). Removed names the client has no
// entry for are ignored. Deletions are delivered after updates.
func (p *deltaProtocol) handleResponse(ss *streamState, b []byte) *flowControl {
	ch, c := p.ch, p.ch.c
	resp := &v3discoverypb.DeltaDiscoveryResponse{}
	err := proto.Unmarshal(b, resp)
	var typ resources.ResourceType
	if err == nil {
		typ = ch.lookupType(resp.GetTypeUrl())
	}
	if !ch.acceptResponse(ss, err, typ, resp.GetTypeUrl(), resp.GetNonce()) {
		return nil
	}
	ch.logger.Log(c.ctx, xdslog.LevelTrace, "received DeltaDiscoveryResponse", "response", resp)
	if ch.logger.Enabled(c.ctx, slog.LevelDebug) { // the arguments allocate: many small responses are common in delta
		ch.logger.Debug("received DeltaDiscoveryResponse", xdslog.KeyTypeURL, typ.TypeURL(), xdslog.KeyNonce, resp.GetNonce(),
			"system_version_info", resp.GetSystemVersionInfo(), "resources", len(resp.GetResources()), "removed", len(resp.GetRemovedResources()))
	}

	arrived := time.Now() // TTLs are timed from here
	items, removed, topErrs := deltaItems(resp)
	reps, repErrs := parseResourceErrors(resp.GetResourceErrors())
	topErrs = append(topErrs, repErrs...)

	c.mu.Lock()
	p.lookupCachedLocked(ch.types[typ.TypeURL()], items)
	c.mu.Unlock()

	for i := range items {
		decodeDeltaItem(typ, &items[i])
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	ts := ch.types[typ.TypeURL()]
	if ch.stream != ss || c.closed || ts == nil {
		return nil
	}
	ts.nonce = resp.GetNonce()
	fc := newFlowControl()
	defer fc.seal()
	resErrs := p.applyLocked(ts, items, reps, removed, arrived, fc)
	ch.recordUpdatesLocked(ts, ch.deltaValidLocked(ts, items, resErrs), len(topErrs)+len(resErrs))

	a := ackIntent{typeURL: typ.TypeURL(), nonce: resp.GetNonce()}
	if len(topErrs) > 0 || len(resErrs) > 0 {
		a.detail = &statuspb.Status{
			Code:    int32(codes.InvalidArgument),
			Message: nackMessage(typ, topErrs, resErrs),
		}
		ch.logger.Warn("NACKing response", xdslog.KeyTypeURL, typ.TypeURL(), xdslog.KeyNonce, resp.GetNonce(),
			xdslog.KeyError, a.detail.GetMessage())
	}
	ss.acks = append(ss.acks, a)
	ch.kick()
	return fc
}

// deltaItems names the resources of resp and finds the names that appear
// more than once among resources and removed_resources. Resources without a
// name are top-level errors. removed lists each removed name once, in
// response order, canonical.
func deltaItems(resp *v3discoverypb.DeltaDiscoveryResponse) (items []deltaItem, removed []removal, topErrs []error) {
	added := make(map[string]int, len(resp.GetResources()))
	gone := make(map[string]int, len(resp.GetRemovedResources()))
	items = make([]deltaItem, 0, len(resp.GetResources()))
	for i, r := range resp.GetResources() {
		if r.GetName() == "" {
			topErrs = append(topErrs, fmt.Errorf("resource %d: Resource.name is empty", i))
			continue
		}
		it := deltaItem{pending: pending{index: i, inner: r.GetResource(), name: resources.CanonicalName(r.GetName()), ttl: r.GetTtl().AsDuration()},
			version: r.GetVersion()}
		for _, a := range r.GetAliases() {
			it.aliases = append(it.aliases, resources.CanonicalName(a))
		}
		added[it.name]++
		items = append(items, it)
	}
	for _, n := range resp.GetRemovedResources() {
		n = resources.CanonicalName(n)
		gone[n]++
		if gone[n] == 1 {
			removed = append(removed, removal{name: n})
		}
	}
	for i := range items {
		n := items[i].name
		switch {
		case added[n] > 1:
			items[i].err = fmt.Errorf("duplicate resource name %q", n)
		case gone[n] > 0:
			items[i].err = fmt.Errorf("resource %q is both in resources and in removed_resources", n)
		}
	}
	for i := range removed {
		n := removed[i].name
		switch {
		case added[n] > 0:
			removed[i].err = fmt.Errorf("resource %q is both in resources and in removed_resources", n)
		case gone[n] > 1:
			removed[i].err = fmt.Errorf("duplicate resource name %q in removed_resources", n)
		}
	}
	return items, removed, topErrs
}

// removal is one name of removed_resources; err is set when the name is
// invalid (repeated), which makes the response a NACK.
type removal struct {
	name string
	err  error
}

// appendDeltaTargetsLocked appends to out the entries a resource goes to:
// its own (created for the wildcard when subscribed) and those of its
// watched aliases. Callers pass a small array's slice, which one entry,
// the common case, fits without allocating.
func (c *Client) appendDeltaTargetsLocked(out []*resourceState, ts *typeState, it *deltaItem) []*resourceState {
	if rs := c.entryForLocked(ts, it.name); rs != nil {
		out = append(out, rs)
	}
	for _, a := range it.aliases {
		if rs := ts.entries[a]; rs != nil && len(rs.watchers) > 0 && !slices.Contains(out, rs) {
			out = append(out, rs)
		}
	}
	return out
}

// lookupCachedLocked marks the items nobody wants, and records for the
// others the cached copy (of the name, else of the first watched alias) so
// that unchanged bytes are not decoded again and heartbeats are recognised.
func (p *deltaProtocol) lookupCachedLocked(ts *typeState, items []deltaItem) {
	for i := range items {
		it := &items[i]
		rs := ts.entries[it.name]
		for _, a := range it.aliases {
			if rs != nil {
				break
			}
			if e := ts.entries[a]; e != nil && len(e.watchers) > 0 {
				rs = e
			}
		}
		switch {
		case rs == nil:
			it.unrequested = !ts.wantsLocked(it.name)
		case rs.value != nil:
			it.cachedRaw, it.cachedValue = rs.raw, rs.value
			it.heartbeat = it.inner == nil && it.version == rs.version
		}
	}
}

// decodeDeltaItem decodes it, unless it is not wanted, a heartbeat, an
// unresolved alias, already invalid, or the same bytes as cached. It runs
// without c.mu.
func decodeDeltaItem(typ resources.ResourceType, it *deltaItem) {
	switch {
	case it.unrequested || it.heartbeat || it.err != nil:
		return
	case it.inner == nil && len(it.aliases) > 0:
		it.ignored = true
		return
	case it.inner == nil:
		it.err = fmt.Errorf("resource %q has no body", it.name)
		return
	case it.cachedValue != nil && it.inner.GetTypeUrl() == typ.TypeURL() && it.cachedRaw == string(it.inner.GetValue()):
		// Same bytes as cached: not decoded again.
		it.d = decoded{name: it.name, value: it.cachedValue, raw: it.inner.GetValue(), ttl: it.ttl}
		return
	}
	name, v, err := typ.Decode(it.inner)
	switch {
	case name == "" && err == nil:
		err = fmt.Errorf("resource %q: resource has no name", it.name)
	case name != "" && name != it.name:
		err = fmt.Errorf("resource body is named %q, not %q", name, it.name)
	}
	if err != nil {
		it.err = err
		return
	}
	it.d = decoded{name: it.name, value: v, raw: it.inner.GetValue(), ttl: it.ttl}
}

// applyLocked applies the decoded items in response order, then the errors
// the server reported in resource_errors, then the removals, and
// returns the per-resource errors by name, for the NACK. A heartbeat
// re-arms the TTL of its targets. now is when the response arrived.
func (p *deltaProtocol) applyLocked(ts *typeState, items []deltaItem, reps []reportedError, removed []removal, now time.Time, fc *flowControl) map[string]error {
	ch, c := p.ch, p.ch.c
	resErrs := make(map[string]error)
	var buf [2]*resourceState // for appendDeltaTargetsLocked
	for i := range items {
		it := &items[i]
		if it.heartbeat {
			if it.err == nil {
				for _, rs := range c.appendDeltaTargetsLocked(buf[:0], ts, it) {
					if rs.value != nil {
						c.heartbeatLocked(rs, it.ttl, now)
					}
				}
			}
			continue
		}
		if it.unrequested && it.err != nil {
			// a name repeated among resources, or also in
			// removed_resources, makes the response a NACK whether or
			// not the client subscribed to it (it.err is set before
			// decoding only for those, see deltaItems).
			if _, seen := resErrs[it.name]; !seen {
				resErrs[it.name] = it.err
			}
			continue
		}
		if it.unrequested || it.ignored {
			continue
		}
		if _, seen := resErrs[it.name]; seen {
			continue // a duplicate, handled at its first position
		}
		targets := c.appendDeltaTargetsLocked(buf[:0], ts, it)
		if len(targets) == 0 {
			continue // no longer wanted
		}
		if it.err != nil {
			resErrs[it.name] = it.err
		}
		for _, rs := range targets {
			if it.err != nil {
				c.resourceInvalidLocked(rs, it.err, it.version, now, fc)
				continue
			}
			c.resourceValidLocked(rs, it.d, it.version, now, fc)
			if it.name != rs.name || len(it.aliases) > 0 {
				rs.extLocked().delta = &deltaNames{name: it.name, aliases: it.aliases}
			} else if rs.extra != nil && rs.extra.delta != nil {
				rs.extra.delta = nil
				rs.tidyExtLocked()
			}
			ts.delta.sawAliases = ts.delta.sawAliases || len(it.aliases) > 0 || rs.name != it.name
		}
	}
	ch.applyReportedLocked(ts, reps, resErrs, now, fc)
	for _, r := range removed {
		targets := p.removalTargetsLocked(ts, r.name)
		if len(targets) == 0 {
			continue // not known: nothing to delete
		}
		if r.err != nil {
			if _, seen := resErrs[r.name]; !seen {
				resErrs[r.name] = r.err
				for _, rs := range targets {
					c.resourceInvalidLocked(rs, r.err, "", now, fc)
				}
			}
			continue
		}
		for _, rs := range targets {
			ch.deleteLocked(rs, fc)
		}
	}
	return resErrs
}

// removalTargetsLocked returns the entries a name of removed_resources
// deletes, in name order: the entry of that name, and the entries whose
// cached resource came under that name or lists it among its aliases (a
// resource delivered to the watchers of an alias is cached under the
// alias, and the server may remove it by either name: xDS protocol,
// "Resource names"). Names the client has no entry for are ignored.
func (p *deltaProtocol) removalTargetsLocked(ts *typeState, name string) []*resourceState {
	var out []*resourceState
	if rs := ts.entries[name]; rs != nil {
		out = append(out, rs)
	}
	if !ts.delta.sawAliases {
		return out
	}
	for _, n := range sortedKeys(ts.entries) {
		rs := ts.entries[n]
		if dn := rs.ext().delta; n != name && rs.value != nil && dn != nil && (dn.name == name || slices.Contains(dn.aliases, name)) {
			out = append(out, rs)
		}
	}
	return out
}
