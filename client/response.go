// SPDX-License-Identifier: Apache-2.0

package client

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// decoded is one resource of a response after decoding. For a resource
// that is not subscribed, only name is set: it is not decoded (see
// applyLocked).
type decoded struct {
	name  string
	value any
	raw   *anypb.Any // unwrapped
	err   error      // per-resource validation error
}

// pending is one resource of a response between the phases of
// handleResponse: unwrapped and, when the type can tell cheaply, named.
type pending struct {
	index       int
	inner       *anypb.Any // unwrapped
	name        string     // from ResourceType.Name; "" when unknown before decoding
	unrequested bool       // name is known and not subscribed: not decoded
	cachedRaw   *anypb.Any // the cached resource of that name, if any
	cachedValue any        // its decoded value
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
func (ch *channel) handleResponse(ss *streamState, b []byte) *flowControl {
	c := ch.c
	resp := &v3discoverypb.DiscoveryResponse{}
	err := proto.Unmarshal(b, resp)
	var (
		typ resources.ResourceType
		ok  bool
	)
	if err == nil {
		typ, ok = c.registry.Lookup(resp.GetTypeUrl()) // the registry is immutable
	}

	c.mu.Lock()
	ss.gotResponse = true
	if ch.stream != ss || c.closed {
		c.mu.Unlock()
		return nil
	}
	switch {
	case err != nil:
		// a message that is not a DiscoveryResponse is ignored:
		// no ACK, no NACK, the stream keeps reading.
		c.mu.Unlock()
		ch.logger.Warn("ignoring undecodable DiscoveryResponse", xdslog.KeyStreamID, ss.id, xdslog.KeyError, err)
		return nil
	case !ok:
		// unknown type URL: neither ACK nor NACK, nonce untouched.
		c.mu.Unlock()
		ch.logger.Warn("ignoring response of unknown type URL", xdslog.KeyTypeURL, resp.GetTypeUrl(), xdslog.KeyNonce, resp.GetNonce())
		return nil
	}
	if ts := ch.types[typ.TypeURL()]; ts == nil || !ts.sentOnStream {
		// never requested on this stream; answering would be a
		// subscription (an empty list would even mean wildcard).
		c.mu.Unlock()
		ch.logger.Warn("ignoring response of a type not requested on this stream", xdslog.KeyTypeURL, resp.GetTypeUrl())
		return nil
	}
	c.mu.Unlock()

	ch.logger.Log(c.ctx, xdslog.LevelTrace, "received DiscoveryResponse", "response", resp)
	items, topErrs := unwrapAll(typ, resp)

	c.mu.Lock()
	ch.lookupCachedLocked(typ, items)
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
	resErrs := ch.applyLocked(ts, resp.GetVersionInfo(), results, len(topErrs) > 0, fc)

	a := ackIntent{typeURL: typ.TypeURL(), nonce: resp.GetNonce()}
	if len(topErrs) == 0 && len(resErrs) == 0 {
		ts.version = resp.GetVersionInfo()
		a.version = ts.version
	} else {
		// a NACK carries the last ACKed version.
		a.version = ts.version
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

// unwrapAll removes the Resource wrappers of resp's resources and
// names those whose type can tell without decoding. Unusable wrappers are
// top-level errors.
func unwrapAll(typ resources.ResourceType, resp *v3discoverypb.DiscoveryResponse) (items []pending, topErrs []error) {
	items = make([]pending, 0, len(resp.GetResources()))
	for i, r := range resp.GetResources() {
		inner, err := resources.Unwrap(r)
		if err != nil {
			topErrs = append(topErrs, fmt.Errorf("resource %d: %w", i, err))
			continue
		}
		p := pending{index: i, inner: inner}
		p.name, _ = typ.Name(inner)
		items = append(items, p)
	}
	return items, topErrs
}

// lookupCachedLocked marks the named items that are not subscribed, which
// decodeAll skips, and records for the others the cached resource of that
// name, so that decodeAll can skip unchanged bytes.
func (ch *channel) lookupCachedLocked(typ resources.ResourceType, items []pending) {
	names := ch.types[typ.TypeURL()].names
	for i := range items {
		if items[i].name == "" {
			continue
		}
		rs := names[items[i].name]
		switch {
		case rs == nil:
			items[i].unrequested = true
		case rs.raw != nil:
			items[i].cachedRaw, items[i].cachedValue = rs.raw, rs.value
		}
	}
}

// decodeAll decodes every item whose bytes differ from its cached value.
// Failures without a resource name are top-level errors; the others are in
// the results, in response order.
func decodeAll(typ resources.ResourceType, items []pending) (results []decoded, topErrs []error) {
	results = make([]decoded, 0, len(items))
	for _, p := range items {
		if p.unrequested {
			// Not decoded, validated or NACKed (see applyLocked); its name
			// still counts as present for the deletion rule.
			results = append(results, decoded{name: p.name})
			continue
		}
		if p.cachedRaw != nil && bytes.Equal(p.cachedRaw.GetValue(), p.inner.GetValue()) {
			// Same bytes as cached: not decoded again.
			results = append(results, decoded{name: p.name, value: p.cachedValue, raw: p.inner})
			continue
		}
		name, v, err := typ.Decode(p.inner)
		if name == "" {
			if err == nil {
				err = errors.New("resource has no name")
			}
			topErrs = append(topErrs, fmt.Errorf("resource %d: %w", p.index, err))
			continue
		}
		results = append(results, decoded{name: name, value: v, raw: p.inner, err: err})
	}
	return results, topErrs
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
// validated nor NACKed, even when duplicated, since "the client will
// silently ignore any supplied resources that were not explicitly
// requested" (xDS protocol, "How the client specifies what resources to
// return"). Deviation from grpc-go, which validates them and NACKs the
// response when one is invalid: a client would NACK resources meant for
// other clients, and a server that resends on NACK (go-control-plane
// v0.14) would loop.
//
// For types whose SotW responses carry every resource, a cached
// resource the response leaves out is deleted, unless the server has
// ignore_resource_deletion. Deviation from grpc-go:
// when a resource of the response could not be attributed to a name
// (topLevelErrs), nothing is deleted, since the unnamed resource may be the
// one that looks omitted.
func (ch *channel) applyLocked(ts *typeState, version string, results []decoded, topLevelErrs bool, fc *flowControl) map[string]error {
	c := ch.c
	count := make(map[string]int, len(results))
	for _, d := range results {
		count[d.name]++
	}
	now := time.Now()
	resErrs := make(map[string]error)
	for _, d := range results {
		rs := ts.names[d.name]
		if rs == nil {
			continue // not subscribed: ignored
		}
		if _, seen := resErrs[d.name]; seen {
			continue // a duplicate, handled at its first position
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

	if !ts.typ.AllResourcesRequiredInSotW() || topLevelErrs {
		return resErrs
	}
	for _, name := range sortedKeys(ts.names) {
		if count[name] > 0 {
			continue
		}
		rs := ts.names[name]
		if rs.value == nil {
			// Never received (R-9.7: the timer decides) or already deleted.
			continue
		}
		if ch.sc.IgnoreResourceDeletion() {
			if !rs.deletionIgnored {
				rs.deletionIgnored = true
				ch.logger.Warn("ignoring deletion (ignore_resource_deletion)", xdslog.KeyTypeURL, ts.typ.TypeURL(), xdslog.KeyResource, name)
			}
			continue
		}
		c.resourceDeletedLocked(rs, fc)
	}
	return resErrs
}

// resourceValidLocked applies a valid resource. Watchers are told when it
// is the first value, a different value, or the same value after a NACK or
// deletion.
func (c *Client) resourceValidLocked(rs *resourceState, d decoded, version string, now time.Time, fc *flowControl) {
	rs.stopTimerLocked()
	rs.timerState = timerReceived
	if rs.deletionIgnored {
		rs.deletionIgnored = false
		c.logger.Info("resource present again after an ignored deletion", xdslog.KeyResource, rs.name)
	}
	// decodeAll compared against the cache as it was before decoding;
	// compare again, as the entry may have been replaced since (a watch
	// cancelled and started anew). The bytes are already hot.
	changed := rs.value == nil || rs.nackErr != nil ||
		rs.raw == nil || !bytes.Equal(rs.raw.GetValue(), d.raw.GetValue())
	rs.version = version
	rs.lastUpdated = now
	rs.status = v3adminpb.ClientResourceStatus_ACKED
	rs.dneReason = ""
	rs.nackErr, rs.nackVersion, rs.nackTime = nil, "", time.Time{}
	if !changed {
		return
	}
	rs.value, rs.raw = d.value, d.raw
	v := rs.value
	for _, we := range rs.watchers {
		c.scheduleLocked(we, fc, func(done func()) { we.changed(v, done) })
	}
}

// resourceInvalidLocked records a NACKed resource. The cached value, if
// any, is kept and its watchers get AmbientError; otherwise ResourceError
// . Watchers are not told the same error twice in a row.
func (c *Client) resourceInvalidLocked(rs *resourceState, err error, version string, now time.Time, fc *flowControl) {
	rs.stopTimerLocked()
	rs.timerState = timerReceived // seen, even if invalid
	repeat := rs.nackErr != nil && rs.nackErr.Error() == err.Error()
	rs.nackErr, rs.nackVersion, rs.nackTime = err, version, now
	rs.status = v3adminpb.ClientResourceStatus_NACKED
	if repeat {
		return
	}
	werr := c.invalidError(rs)
	for _, we := range rs.watchers {
		if rs.value != nil {
			c.scheduleLocked(we, fc, func(done func()) { we.ambErr(werr, done) })
		} else {
			c.scheduleLocked(we, fc, func(done func()) { we.resErr(werr, done) })
		}
	}
}

// resourceDeletedLocked deletes a cached resource that a SotW response left
// out: the cache entry keeps its watchers, loses its value, and
// shows DOES_NOT_EXIST.
func (c *Client) resourceDeletedLocked(rs *resourceState, fc *flowControl) {
	rs.value, rs.raw, rs.version = nil, nil, ""
	rs.nackErr, rs.nackVersion, rs.nackTime = nil, "", time.Time{}
	rs.status = v3adminpb.ClientResourceStatus_DOES_NOT_EXIST
	rs.dneReason = "removed by the management server"
	err := c.notFoundError(rs)
	for _, we := range rs.watchers {
		c.scheduleLocked(we, fc, func(done func()) { we.resErr(err, done) })
	}
}

// nackMessage is the error_detail message of a NACK: top-level errors in
// response order, then per-resource errors sorted by resource name, so the
// text is deterministic.
func nackMessage(typ resources.ResourceType, topErrs []error, resErrs map[string]error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error parsing %q response:", typ.TypeName())
	sep := " "
	if len(topErrs) > 0 {
		b.WriteString(" top level errors: ")
		for i, err := range topErrs {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(err.Error())
		}
		sep = "; "
	}
	for _, name := range sortedKeys(resErrs) {
		fmt.Fprintf(&b, "%sresource %q: %v", sep, name, resErrs[name])
		sep = "; "
	}
	return b.String()
}
