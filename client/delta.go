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

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// deltaProtocol is the incremental variant (DeltaAggregatedResources, or a
// per-type Delta* method; xDS protocol, "Incremental xDS"; ): the
// client sends changes to its subscription, the server sends the resources
// that changed, each with its own version, and names the deleted ones in
// removed_resources.
//
// Requests. The first request of a type on a stream subscribes to every
// name the client wants (and "*" when the wildcard is subscribed; the
// wildcard alone goes in its legacy form, no name, for Listener and
// Cluster, see chanType.legacy) and carries, in initial_resource_versions,
// the version of every resource of the type it has cached from that server
// (not from another server of the list, nor persisted), so that the server
// need not resend them. Later requests carry the difference between what
// the server was last told and what the client now wants:
// resource_names_subscribe and resource_names_unsubscribe, each sorted;
// they cost in proportion to that difference, not to the subscription
// (see changedLocked). ACKs and NACKs carry the response's nonce (NACKs an
// error_detail as in SotW, R-7.3, R-7.5) and any subscription change of
// their type still to send; requests that only change the subscription
// carry no nonce.
//
// Responses are translated for the pipeline (pipeline.go): each resource
// is identified by its Resource.name (its aliases also count) and carries
// its own version, which goes into the cache entry and Dump's
// version_info; system_version_info is only logged. A resource whose name
// is not watched but one of whose aliases is goes to the watchers of that
// alias, cached under the alias; the server may remove it by its name or
// by any of its aliases. A name that appears more than once among
// resources, or among resources and removed_resources together, makes the
// response a NACK (R-6.2; Envoy rejects the whole response); as in SotW
// that name is treated as invalid and the rest applied.
type deltaProtocol struct {
	ch *channel // read-only
}

// deltaWire is the delta part of a chanType.
//
// Changes are tracked as they happen, so that a request (an ACK most of
// all) costs in proportion to the change, not to the subscription: only the
// first request of a type on a stream walks every name.
//
// What the server was told is not kept name by name (at tens of thousands
// of names, a set of its own is a megabyte): once the type's first request
// on the stream is sent, the names subscribed on the wire are those of the
// subscription (channel.subscribedNamesLocked) that are not in added, and
// those in removed. Before it, none are.
type deltaWire struct {
	added   map[string]bool // to subscribe in the next request: subscribed, not on the wire
	removed map[string]bool // to unsubscribe in the next request: on the wire, not subscribed

	// sawAliases: a resource with aliases, or delivered to an alias's
	// entry, was applied on this channel; removals then also look for
	// the entries it went to (removalTargetsLocked). Never reset.
	sawAliases bool
}

func (p *deltaProtocol) delta() bool { return true }

// changedLocked records the change for the next request. A name
// subscribed and unsubscribed before a request went out is never sent. A
// name unsubscribed and subscribed again before a request went out was
// never unsubscribed as far as the server knows (R-6.2: "remove-then-add
// before a send is treated as add"): nothing is sent, and its cache entry
// is still there, so nothing is lost.
func (p *deltaProtocol) changedLocked(ct *chanType, name string, subscribed bool) {
	d := &ct.delta
	if d.added == nil {
		d.added, d.removed = make(map[string]bool), make(map[string]bool)
	}
	if !subscribed {
		// name was subscribed: it is on the wire unless its subscription
		// is still to send (see deltaWire).
		if ct.sent && !d.added[name] {
			d.removed[name] = true
		}
		delete(d.added, name)
		return
	}
	// name was not subscribed: it is on the wire only while its
	// unsubscription is still to send.
	switch {
	case !ct.sent:
		// The stream's first request names every subscription.
	case d.removed[name]:
		delete(d.removed, name)
	default:
		d.added[name] = true
	}
}

// streamStartedLocked forgets what the previous stream's server was told.
func (p *deltaProtocol) streamStartedLocked(ct *chanType) {
	ct.delta = deltaWire{sawAliases: ct.delta.sawAliases}
}

// requestLocked returns the request of ct's type: the ACK or NACK a, if
// not nil, with the subscription change of the type; else the
// subscription change, or nil when it changed back and forth since the
// last request.
func (p *deltaProtocol) requestLocked(ss *stream, ct *chanType, a *ackIntent) *outgoing {
	first := !ct.sent
	req, requested := p.buildLocked(ct)
	drop := p.ch.takePendingLocked(ct)
	if a != nil {
		req.ResponseNonce = a.nonce
		req.ErrorDetail = a.detail
	} else if !first && len(req.GetResourceNamesSubscribe()) == 0 && len(req.GetResourceNamesUnsubscribe()) == 0 {
		// Changed back and forth: nothing to tell. What is unsubscribed
		// now was never on the wire.
		p.ch.dropPendingLocked(drop)
		return nil
	}
	return &outgoing{
		req:       transport.Request{Delta: req, Answer: a != nil},
		typeURL:   req.GetTypeUrl(),
		requested: requested,
		drop:      drop,
		attrs: []any{xdslog.KeyNonce, req.GetResponseNonce(), "subscribe", len(req.GetResourceNamesSubscribe()),
			"unsubscribe", len(req.GetResourceNamesUnsubscribe()), "initial_versions", len(req.GetInitialResourceVersions()),
			"nack", req.GetErrorDetail() != nil},
	}
}

// buildLocked returns a request of ct's type carrying the subscription
// change not sent yet (everything, on the first request of the stream),
// and the names whose does-not-exist timers it may start. It records the
// change as sent.
func (p *deltaProtocol) buildLocked(ct *chanType) (*v3discoverypb.DeltaDiscoveryRequest, []string) {
	ch := p.ch
	url := ct.typ.TypeURL()
	req := &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: url}
	d := &ct.delta
	if !ct.sent {
		// The first request of the type on this stream: every name, and
		// (the reconnect case of "Incremental xDS") the versions of what
		// is cached from this server, received by name or through a
		// collection. The wildcard alone goes in its legacy form, no name
		// at all, where the protocol defines it (chanType.legacy).
		req.ResourceNamesSubscribe = ch.subscribedNamesLocked(ct)
		ct.names = nil // delta needs it no more on this stream: not kept
		if legacyWildcard(url) && slices.Equal(req.ResourceNamesSubscribe, []string{wildcardName}) {
			ct.legacy = true
			req.ResourceNamesSubscribe = nil
		}
		for _, a := range ch.auths {
			for e := range a.entriesLocked(url) {
				// Versions are the server's own: a value persisted (stale)
				// or sent by another server of the list must come
				// again.
				if e.value != nil && !e.stale() && e.fromURI() == ch.sc.ServerURI {
					if req.InitialResourceVersions == nil {
						req.InitialResourceVersions = make(map[string]string)
					}
					req.InitialResourceVersions[e.name] = e.version
				}
			}
		}
	} else {
		if ct.legacy && len(d.added) > 0 {
			// The first name subscribed ends the legacy form: the wildcard
			// goes on explicitly (xDS protocol, "How the client specifies
			// what resources to return").
			d.added[wildcardName] = true
			ct.legacy = false
		}
		req.ResourceNamesSubscribe = slices.Sorted(maps.Keys(d.added))
		req.ResourceNamesUnsubscribe = slices.Sorted(maps.Keys(d.removed))
	}
	clear(d.added)
	clear(d.removed)
	ct.dirty = false
	ct.sent = true
	var requested []string
	for _, n := range req.GetResourceNamesSubscribe() {
		if n != wildcardName && !isGlob(n) {
			requested = append(requested, n)
		}
	}
	return req, requested
}

// translate turns a DeltaDiscoveryResponse into an update: its resources
// named (those without a Resource.name are top-level errors), the names
// that appear more than once among resources and removed_resources found,
// removed_resources each once, in response order, canonical. It returns
// nil for a response of an unknown type URL, or that could not be decoded.
func (p *deltaProtocol) translate(resp *transport.Response) (*update, string) {
	r := resp.Delta
	if r == nil {
		return nil, ""
	}
	typ := p.ch.lookupType(r.GetTypeUrl())
	if typ == nil {
		return nil, r.GetTypeUrl()
	}
	ch := p.ch
	if ch.logger.Enabled(ch.c.ctx, slog.LevelDebug) { // the arguments allocate: many small responses are common in delta
		ch.logger.Debug("received DeltaDiscoveryResponse", xdslog.KeyTypeURL, typ.TypeURL(), xdslog.KeyNonce, r.GetNonce(),
			xdslog.KeySystemVersionInfo, r.GetSystemVersionInfo(), xdslog.KeyResources, len(r.GetResources()), xdslog.KeyRemoved, len(r.GetRemovedResources()))
	}
	u := &update{
		delta:   true,
		typ:     typ,
		nonce:   r.GetNonce(),
		version: r.GetSystemVersionInfo(),
		arrived: time.Now(),
		items:   make([]item, 0, len(r.GetResources())),
	}
	added := make(map[string]int, len(r.GetResources()))
	gone := make(map[string]int, len(r.GetRemovedResources()))
	for i, res := range r.GetResources() {
		if res.GetName() == "" {
			u.topErrs = append(u.topErrs, fmt.Errorf("resource %d: Resource.name is empty", i))
			continue
		}
		it := item{index: i, inner: res.GetResource(), name: resources.CanonicalName(res.GetName()), ttl: res.GetTtl().AsDuration(),
			version: res.GetVersion()}
		for _, a := range res.GetAliases() {
			it.aliases = append(it.aliases, resources.CanonicalName(a))
		}
		added[it.name]++
		u.items = append(u.items, it)
	}
	for _, n := range r.GetRemovedResources() {
		n = resources.CanonicalName(n)
		gone[n]++
		if gone[n] == 1 {
			u.removed = append(u.removed, removal{name: n})
		}
	}
	for i := range u.items {
		n := u.items[i].name
		switch {
		case added[n] > 1:
			u.items[i].err = fmt.Errorf("duplicate resource name %q", n)
		case gone[n] > 0:
			u.items[i].err = fmt.Errorf("resource %q is both in resources and in removed_resources", n)
		}
	}
	for i := range u.removed {
		n := u.removed[i].name
		switch {
		case added[n] > 0:
			u.removed[i].err = fmt.Errorf("resource %q is both in resources and in removed_resources", n)
		case gone[n] > 1:
			u.removed[i].err = fmt.Errorf("duplicate resource name %q in removed_resources", n)
		}
	}
	var repErrs []error
	u.reps, repErrs = parseResourceErrors(r.GetResourceErrors())
	u.topErrs = append(u.topErrs, repErrs...)
	return u, r.GetTypeUrl()
}

// answerLocked returns the ACK of u (its nonce), or, when u had errors,
// the NACK, with an error_detail naming them.
func (p *deltaProtocol) answerLocked(ct *chanType, u *update, resErrs map[string]error) ackIntent {
	a := ackIntent{typeURL: u.typ.TypeURL(), nonce: u.nonce}
	if len(u.topErrs) > 0 || len(resErrs) > 0 {
		a.detail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: nackMessage(u.typ, u.topErrs, resErrs)}
	}
	return a
}
