// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// sotwProtocol is the state-of-the-world variant (StreamAggregatedResources,
// or a per-type Stream* method): every request carries the full
// subscription of its type, and Listener and Cluster responses the full
// set of resources. It translates the subscription into requests and
// responses into the pipeline's update (pipeline.go).
type sotwProtocol struct {
	ch *channel // read-only
}

func (p *sotwProtocol) delta() bool { return false }

// changedLocked has nothing to record: every SotW request carries the
// whole subscription, which chanType.dirty says to send.
func (p *sotwProtocol) changedLocked(*chanType, string, bool) {}

func (p *sotwProtocol) streamStartedLocked(*chanType) {}

// requestLocked returns the request of ct's type: the ACK or NACK a, if
// not nil, else the subscription change. Every request carries the type's
// full current name list, sorted, with "*" first when the wildcard is
// subscribed, so one request settles any number of subscription
// changes (coalescing); an empty list while the wildcard is subscribed in
// its legacy form (chanType.legacy). The entries it unsubscribes from go
// with it, to be dropped once it is written.
func (p *sotwProtocol) requestLocked(ss *stream, ct *chanType, a *ackIntent) *outgoing {
	ch := p.ch
	url := ct.typ.TypeURL()
	// changed: the request changes what the stream asks for (a
	// subscription change, or the type's first request on the stream).
	// Only such a request can start does-not-exist timers: an ACK without
	// a change names what the previous request of the stream named, whose
	// timers run already. Not walking the names keeps the ACKs of
	// a large subscription cheap.
	changed := a == nil || ct.dirty || !ct.sent
	version, nonce := ct.version, ct.nonce
	var detail *statuspb.Status
	if a != nil {
		version, nonce, detail = a.version, a.nonce, a.detail
	}
	if !ct.sent && legacyWildcard(url) && ch.wildcardLocked(url) {
		// The wildcard in its legacy form: see chanType.legacy.
		ct.legacy = true
	}
	names := ch.subscribedNamesLocked(ct)
	var requested []string
	if changed {
		requested = names
	}
	if ct.legacy {
		// The empty list keeps the legacy wildcard, which covers every
		// name: the names are requested all the same (their timers run).
		names = []string{}
	}
	ct.dirty = false
	ct.sent = true
	return &outgoing{
		req: transport.Request{SotW: &v3discoverypb.DiscoveryRequest{
			TypeUrl:       url,
			VersionInfo:   version,
			ResponseNonce: nonce,
			ResourceNames: names,
			ErrorDetail:   detail,
		}, Answer: a != nil},
		typeURL:   url,
		requested: requested,
		drop:      ch.takePendingLocked(ct),
		attrs: []any{xdslog.KeyVersionInfo, version, xdslog.KeyNonce, nonce,
			"names", len(names), "nack", detail != nil},
	}
}

// translate turns a DiscoveryResponse into an update: resources
// unwrapped from their Resource wrappers, keeping their ttl
// and named where the type can tell without decoding; heartbeats
// (wrappers with a name and no resource) kept as such; unusable wrappers
// and resource_errors entries as top-level errors. It returns nil for a
// response of an unknown type URL, or that could not be decoded.
func (p *sotwProtocol) translate(resp *transport.Response) (*update, string) {
	r := resp.SotW
	if r == nil {
		return nil, ""
	}
	typ := p.ch.lookupType(r.GetTypeUrl())
	if typ == nil {
		return nil, r.GetTypeUrl()
	}
	u := &update{
		typ:             typ,
		nonce:           r.GetNonce(),
		version:         r.GetVersionInfo(),
		omissionDeletes: typ.AllResourcesRequiredInSotW(),
		arrived:         time.Now(),
		items:           make([]item, 0, len(r.GetResources())),
	}
	nb, hasNameBytes := typ.(nameByteser)
	for i, res := range r.GetResources() {
		inner, name, ttl, err := resources.UnwrapResource(res)
		switch {
		case err != nil:
			u.topErrs = append(u.topErrs, fmt.Errorf("resource %d: %w", i, err))
			continue
		case inner == nil:
			u.items = append(u.items, item{index: i, name: name, ttl: ttl, heartbeat: true})
			continue
		}
		it := item{index: i, inner: inner, ttl: ttl, version: u.version}
		if hasNameBytes {
			if b, ok := nb.NameBytes(inner); ok {
				it.nameBytes = b
			}
		}
		if it.nameBytes == nil {
			it.name, _ = typ.Name(inner)
		}
		u.items = append(u.items, it)
	}
	var repErrs []error
	u.reps, repErrs = parseResourceErrors(r.GetResourceErrors())
	u.topErrs = append(u.topErrs, repErrs...)
	return u, r.GetTypeUrl()
}

// answerLocked returns the ACK of u, which makes its version_info the
// type's, or, when u had errors, the NACK, which carries the last
// ACKed version and an error_detail naming them.
func (p *sotwProtocol) answerLocked(ct *chanType, u *update, resErrs map[string]error) ackIntent {
	a := ackIntent{typeURL: u.typ.TypeURL(), nonce: u.nonce}
	if len(u.topErrs) == 0 && len(resErrs) == 0 {
		ct.version = u.version
		a.version = ct.version
		return a
	}
	a.version = ct.version
	a.detail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: nackMessage(u.typ, u.topErrs, resErrs)}
	return a
}
