// SPDX-License-Identifier: Apache-2.0

package client

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// This file is the one response pipeline of the engine. A response of
// either variant goes through the same five steps:
//
//  1. translate (no lock): the wire protocol (sotw.go, delta.go) turns
//     it into an update: its resources unwrapped and, where the type can
//     tell without decoding, named; names repeated among resources (and
//     removed_resources) found; heartbeats set apart.
//  2. look up (locked): each resource nobody wants is marked, so it is not
//     decoded; for the others the cached bytes are noted, so unchanged
//     bytes are not decoded again.
//  3. decode (no lock): the rest is decoded and validated, outside the
//     client's lock, so that a large response does not hold up Watch,
//     Dump or the streams of other servers, and decoders (which may be
//     user code, R-23) never run under it.
//  4. apply (locked): each resource's step (entry.go), in
//     response order; then the errors the server reported; then
//     the deletions (delta removed_resources, or SotW omissions, R-14.1),
//     so watchers hear of deletions after updates.
//  5. answer (locked): the ACK or NACK is queued and the
//     stream woken to send it.
//
// Only the stream's receive goroutine applies responses of the resources
// its server serves, so the cache cannot change between the steps except
// by watches being added or cancelled, which apply looks up afresh.

// update is one response, translated by the wire protocol.
type update struct {
	delta   bool // from a delta response
	typ     resources.ResourceType
	nonce   string
	version string // SotW: version_info, the version of every resource; delta: unused
	items   []item
	removed []removal // delta: removed_resources, each name once, in response order
	reps    []reportedError
	topErrs []error // errors not attributable to a resource name: they make the response a NACK
	// omissionDeletes: a SotW response of a type whose responses carry
	// every resource: cached resources it leaves out are deleted.
	omissionDeletes bool
	arrived         time.Time // TTLs are timed from here
}

// item is one resource of an update between the steps of the pipeline.
type item struct {
	index     int
	inner     *anypb.Any // unwrapped; nil when the resource has no body
	name      string     // canonical; "" when unknown before decoding
	nameBytes []byte     // the canonical name inside inner.Value, when the type can find it without copying (SotW); aliases inner
	version   string     // the resource's version: delta's own, SotW's response version
	aliases   []string   // delta: canonical
	ttl       time.Duration
	heartbeat bool  // no body: re-arms the TTL of the cached resource; SotW from translate, delta from look up
	err       error // set before decoding: a name repeated, both added and removed, no body

	// Set by look up.
	unwanted    bool   // name known and not wanted: not decoded
	ignored     bool   // delta: an unresolved alias (no body, aliases set): nothing to do
	cachedRaw   string // the cached resource of that name (its bytes), if any
	cachedValue any    // its decoded value

	// Set by decode.
	value any
}

// removal is one name of removed_resources; err is set when the name is
// invalid (repeated), which makes the response a NACK.
type removal struct {
	name string
	err  error
}

// nameByteser is implemented by resource types that can find a resource's
// canonical name without copying it (resources.Type.NameBytes), which lets
// the client recognise an unchanged or unrequested resource without
// allocating.
type nameByteser interface {
	NameBytes(inner *anypb.Any) ([]byte, bool)
}

// handleResponse runs one response received on ss through the pipeline
// and returns its flow control, or nil when it was ignored.
func (ch *channel) handleResponse(ss *stream, resp *transport.Response) *flowControl {
	c := ch.c
	u, typeURL := ch.proto.translate(resp)
	if !ch.accept(ss, resp.Err, u, typeURL) {
		return nil
	}
	if ch.logger.Enabled(c.ctx, xdslog.LevelTrace) {
		m := responseMessage(resp)
		ch.logger.Log(c.ctx, xdslog.LevelTrace, "received "+string(m.ProtoReflect().Descriptor().Name()), xdslog.KeyResponse, m)
	}
	c.mu.Lock()
	ch.lookupLocked(u)
	c.mu.Unlock()

	u.topErrs = append(u.topErrs, decodeAll(u)...)

	c.mu.Lock()
	ct := ch.types[u.typ.TypeURL()]
	if ss.s.stream != ss || c.closed || ct == nil {
		c.mu.Unlock()
		return nil
	}
	ct.nonce = u.nonce
	fc := newFlowControl()
	defer fc.seal()
	resErrs, valid := ch.applyLocked(u, fc)
	ch.recordUpdatesLocked(u.typ, valid, len(u.topErrs)+len(resErrs))
	a := ch.proto.answerLocked(ct, u, resErrs)
	if a.detail != nil {
		ch.logger.Warn("NACKing response", xdslog.KeyTypeURL, u.typ.TypeURL(), xdslog.KeyVersionInfo, u.version,
			xdslog.KeyNonce, u.nonce, xdslog.KeyError, a.detail.GetMessage())
	}
	ss.acks = append(ss.acks, a)
	// The response's metrics are reported outside the lock, and before
	// the stream is woken to send its answer.
	c.unlockAndRecord()
	ss.s.kick()
	return fc
}

// accept records that ss received a message and reports whether the
// response (translated into u, nil when it could not be, of typeURL) is
// to be processed. Messages that do not decode and responses of unknown
// type URLs are ignored: no ACK, no NACK, the stream keeps reading
// . So are responses of types never requested on this stream
// answering would be a subscription (an empty one even a
// wildcard). The first response a higher-priority server's stream
// accepts reverts to it.
func (ch *channel) accept(ss *stream, decodeErr error, u *update, typeURL string) (ok bool) {
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ss.gotResponse = true
	if ss.s.stream != ss || c.closed {
		return false
	}
	ch.messageReceivedLocked()
	defer func() {
		if ok {
			ss.accepted = true // healthy
			ch.types[u.typ.TypeURL()].answered = true
		}
	}()
	switch {
	case decodeErr != nil:
		ch.logger.Warn("ignoring undecodable response", xdslog.KeyStreamID, ss.id, xdslog.KeyError, decodeErr)
		return false
	case u == nil:
		ch.logger.Warn("ignoring response of unknown type URL", xdslog.KeyTypeURL, typeURL)
		return false
	}
	if ct := ch.types[u.typ.TypeURL()]; ct == nil || !ct.sent || !ss.s.carries(u.typ.TypeURL()) {
		ch.logger.Warn("ignoring response of a type not requested on this stream", xdslog.KeyTypeURL, typeURL)
		return false
	}
	ch.revertLocked()
	return true
}

// lookupType returns the registered type of typeURL, or nil. The registry
// is immutable, so no lock is needed.
func (ch *channel) lookupType(typeURL string) resources.ResourceType {
	typ, ok := ch.c.registry.Lookup(typeURL)
	if !ok {
		return nil
	}
	return typ
}

// responseMessage returns the message of resp, for logging.
func responseMessage(resp *transport.Response) proto.Message {
	if resp.Delta != nil {
		return resp.Delta
	}
	return resp.SotW
}

// view returns b as a string sharing its memory, for map lookups only: the
// bytes of a response are never modified, and the string is not kept.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// served finds, by name, the caches of one type that a channel serves,
// during one locked section: the cache of the top-level servers'
// authority, which every old-style name maps to, is found once; xdstp
// names go through their authority. A name whose authority is not served
// by the channel (another server's, or none in use) finds nothing.
type served struct {
	ch      *channel
	url     string
	topDone bool
	top     *authority
	topTC   *typeCache
}

// served returns a served of ch for typeURL.
func (ch *channel) served(typeURL string) *served { return &served{ch: ch, url: typeURL} }

// lookup returns the authority of name, if ch serves it, and its cache of
// the type, nil when it has none.
func (v *served) lookup(name string) (*authority, *typeCache) {
	if !strings.HasPrefix(name, "xdstp:") {
		if !v.topDone {
			v.topDone = true
			if a := v.ch.c.top; a != nil && a.servesLocked(v.ch) {
				v.top, v.topTC = a, a.cacheLocked(v.url)
			}
		}
		return v.top, v.topTC
	}
	a := v.ch.c.knownAuthorityLocked(name)
	if a == nil || !a.servesLocked(v.ch) {
		return nil, nil
	}
	return a, a.cacheLocked(v.url)
}

// entry returns the entry of name, if ch serves it, or nil.
func (v *served) entry(name string) *entry {
	_, tc := v.lookup(name)
	return tc.entryLocked(name)
}

// watchedEntry returns the entry of name if ch serves it and it is
// watched by name, or nil.
func (v *served) watchedEntry(name string) *entry {
	if e := v.entry(name); e != nil && len(e.watchers) > 0 {
		return e
	}
	return nil
}

// lookupLocked marks the items nobody wants, which decode skips, and
// records for the others the cached resource of that name (or, in delta,
// of the first watched alias), so that unchanged bytes are not decoded
// again and delta heartbeats are recognised. While the wildcard or a glob
// collection that holds the name is subscribed, the resource is wanted.
func (ch *channel) lookupLocked(u *update) {
	v := ch.served(u.typ.TypeURL())
	for i := range u.items {
		it := &u.items[i]
		if it.heartbeat {
			continue
		}
		var e *entry
		var tc *typeCache
		switch {
		case it.nameBytes != nil:
			name := view(it.nameBytes)
			_, tc = v.lookup(name)
			if tc == nil {
				it.unwanted = true
				continue
			}
			if e = tc.entryLocked(name); e != nil {
				it.name = e.name // an entry's name is reused: no allocation
			} else if tc.wantsLocked(name) {
				it.name = strings.Clone(name)
			}
		case it.name != "":
			_, tc = v.lookup(it.name)
			e = tc.entryLocked(it.name)
		default:
			continue // named by decoding
		}
		for _, alias := range it.aliases {
			if e != nil {
				break
			}
			e = v.watchedEntry(alias)
		}
		switch {
		case e == nil:
			it.unwanted = tc == nil || !tc.wantsLocked(it.name)
		case e.value != nil:
			it.cachedRaw, it.cachedValue = e.raw, e.value
		}
		if u.delta && it.inner == nil && it.err == nil && !it.unwanted {
			// A delta resource without a body: a heartbeat at the cached
			// version, an alias the server could not resolve, or
			// an error.
			switch {
			case e != nil && e.value != nil && it.version == e.version:
				it.heartbeat = true
			case len(it.aliases) > 0:
				it.ignored = true
			default:
				it.err = fmt.Errorf("resource %q has no body", it.name)
			}
		}
	}
}

// decodeAll decodes every wanted item whose bytes differ from its cached
// value, without the client's lock. Failures that cannot be attributed to
// a resource name are returned, to become top-level errors; the others
// are in the items.
func decodeAll(u *update) (topErrs []error) {
	for i := range u.items {
		it := &u.items[i]
		if it.unwanted || it.heartbeat || it.ignored || it.err != nil {
			continue
		}
		if it.cachedValue != nil && it.inner.GetTypeUrl() == u.typ.TypeURL() && it.cachedRaw == string(it.inner.GetValue()) {
			it.value = it.cachedValue // same bytes as cached: not decoded again
			continue
		}
		name, v, err := u.typ.Decode(it.inner)
		if !u.delta {
			// SotW: the decoded resource names itself.
			if name == "" {
				if err == nil {
					err = errors.New("resource has no name")
				}
				topErrs = append(topErrs, fmt.Errorf("resource %d: %w", it.index, err))
				it.unwanted = true
				continue
			}
			if it.name == "" {
				it.name = name
			}
		} else {
			// Delta: Resource.name names it; the body must agree.
			switch {
			case name == "" && err == nil:
				err = fmt.Errorf("resource %q: resource has no name", it.name)
			case name != "" && name != it.name:
				err = fmt.Errorf("resource body is named %q, not %q", name, it.name)
			}
		}
		if err != nil {
			it.err = err
			continue
		}
		it.value = v
	}
	return topErrs
}

// entryFor returns the cache entry a received resource named name
// goes to: its entry if it has one, else, while a collection of its
// authority (the wildcard, or a glob that holds the name) is subscribed,
// a new entry for it; nil when the resource is not wanted or ch does not
// serve it.
func (v *served) entryFor(name string) *entry {
	a, tc := v.lookup(name)
	if tc == nil {
		return nil
	}
	if e := tc.entryLocked(name); e != nil {
		return e
	}
	if !tc.wantsLocked(name) {
		return nil
	}
	return a.newEntryLocked(tc, name)
}

// targets appends to out the entries a resource goes to: its own
// (created for a collection when subscribed) and, in delta, those of its
// watched aliases (xDS protocol, "Resource names": it is then delivered to
// the watchers of that alias, and cached under the alias). Callers pass a
// small array's slice, which one entry, the common case, fits without
// allocating. Without create, no entry is made for a collection.
func (v *served) targets(out []*entry, it *item, create bool) []*entry {
	if create {
		if e := v.entryFor(it.name); e != nil {
			out = append(out, e)
		}
	} else if e := v.entry(it.name); e != nil {
		out = append(out, e)
	}
	for _, alias := range it.aliases {
		if e := v.watchedEntry(alias); e != nil && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// applyLocked applies u: each resource's transition in response order,
// then the server-reported errors, then the deletions. It returns
// the per-resource errors by name, for the NACK, and how many wanted
// resources were valid, for the metrics.
//
// A name that appears more than once is invalid wherever it appears
// whether or not the client wants it; every other valid
// resource is applied even if the response is NACKed.
//
// Resources nobody wants are ignored: neither applied nor validated nor
// NACKed (except a repeated name), since "the client will silently
// ignore any supplied resources that were not explicitly requested" (xDS
// protocol, "How the client specifies what resources to return").
// Deviation from grpc-go, which validates them and NACKs the response
// when one is invalid: a client would NACK resources meant for other
// clients, and a server that resends on NACK (go-control-plane v0.14)
// would loop.
//
// Deletions: every name of delta's removed_resources that the client
// knows is deleted, the entries of its aliases too; a SotW
// response of a type whose responses carry every resource deletes the
// cached resources it leaves out, in name order, unless a
// resource of it could not be named (a top-level error: the unnamed one
// may be the one that looks left out; deviation from grpc-go, which
// deletes). A name the server reported an error for, or sent a heartbeat
// for, is not left out.
func (ch *channel) applyLocked(u *update, fc *flowControl) (resErrs map[string]error, valid int) {
	c := ch.c
	v := ch.served(u.typ.TypeURL())
	in := input{sc: ch.sc, logger: ch.logger, now: u.arrived, origin: &ch.sc.ServerURI}
	resErrs = make(map[string]error)
	var count map[string]int
	if !u.delta {
		count = make(map[string]int, len(u.items))
		for i := range u.items {
			if it := &u.items[i]; !it.unwanted && !it.heartbeat && it.name != "" {
				count[it.name]++
			}
		}
		for _, name := range unwantedDuplicates(u.items) {
			if _, ok := resErrs[name]; !ok {
				resErrs[name] = fmt.Errorf("duplicate resource name %q", name)
			}
		}
	}
	var buf [2]*entry
	for i := range u.items {
		it := &u.items[i]
		switch {
		case it.heartbeat:
			if it.err == nil {
				for _, e := range v.targets(buf[:0], it, false) {
					if e.value != nil {
						c.heartbeatLocked(e, it.ttl, u.arrived)
					}
				}
			}
			continue
		case it.unwanted && it.err != nil:
			// a name repeated among resources, or also in
			// removed_resources, makes the response a NACK whether or not
			// the client wants it (before decoding, it.err is set only
			// for those).
			if _, seen := resErrs[it.name]; !seen {
				resErrs[it.name] = it.err
			}
			continue
		case it.unwanted || it.ignored || it.name == "":
			continue
		}
		if _, seen := resErrs[it.name]; seen {
			continue // a repeated name, handled at its first position
		}
		err := it.err
		if count[it.name] > 1 {
			err = fmt.Errorf("duplicate resource name %q", it.name)
		}
		targets := v.targets(buf[:0], it, true)
		if len(targets) == 0 {
			continue // no longer wanted
		}
		in.version = it.version
		if err != nil {
			resErrs[it.name] = err
			in.err = err
			for _, e := range targets {
				c.stepLocked(e, evInvalid, &in, fc)
			}
			continue
		}
		in.value, in.raw, in.ttl = it.value, it.inner.GetValue(), it.ttl
		for _, e := range targets {
			c.stepLocked(e, evValid, &in, fc)
			if u.delta {
				ch.recordDeltaNamesLocked(e, it)
			}
		}
		valid++
	}
	ch.applyReportedLocked(v, u, resErrs, &in, fc)
	switch {
	case u.delta:
		ch.applyRemovalsLocked(v, u, resErrs, &in, fc)
	case u.omissionDeletes && len(u.topErrs) == 0:
		ch.applyOmissionsLocked(u, count, &in, fc)
	}
	return resErrs, valid
}

// recordDeltaNamesLocked records under e, in delta, the Resource.name and
// aliases of its value when they are not just e's name, for
// removals by another name.
func (ch *channel) recordDeltaNamesLocked(e *entry, it *item) {
	if it.name != e.name || len(it.aliases) > 0 {
		e.extLocked().delta = &deltaNames{name: it.name, aliases: it.aliases}
		if ct := ch.types[e.typ.TypeURL()]; ct != nil {
			ct.delta.sawAliases = true
		}
	} else if e.extra != nil && e.extra.delta != nil {
		e.extra.delta = nil
		e.tidyExtLocked()
	}
}

// applyReportedLocked applies the errors the server reported in
// resource_errors, after the resources: a name that already got a
// per-resource error in the response (resErrs) is skipped, and so is a
// name the client has no entry for: the server's errors create no
// entries.
func (ch *channel) applyReportedLocked(v *served, u *update, resErrs map[string]error, in *input, fc *flowControl) {
	for _, r := range u.reps {
		if _, bad := resErrs[r.name]; bad {
			continue
		}
		if e := v.entry(r.name); e != nil {
			in.status = r.status
			ch.c.stepLocked(e, serverErrorEvent(r.status), in, fc)
		}
	}
}

// applyRemovalsLocked applies delta's removed_resources: each
// entry a removed name targets is deleted, or made invalid when the name
// is repeated. Names the client has no entry for are ignored.
func (ch *channel) applyRemovalsLocked(v *served, u *update, resErrs map[string]error, in *input, fc *flowControl) {
	c := ch.c
	in.reason = "removed by the management server"
	for _, r := range u.removed {
		targets := ch.removalTargetsLocked(v, u.typ, r.name)
		if len(targets) == 0 {
			continue
		}
		if r.err != nil {
			if _, seen := resErrs[r.name]; !seen {
				resErrs[r.name] = r.err
				in.err, in.version = r.err, ""
				for _, e := range targets {
					c.stepLocked(e, evInvalid, in, fc)
				}
			}
			continue
		}
		for _, e := range targets {
			c.stepLocked(e, evRemoved, in, fc)
		}
	}
}

// removalTargetsLocked returns the entries a name of removed_resources
// deletes, in name order: the entry of that name, and the entries whose
// cached resource came under that name or lists it among its aliases (a
// resource delivered to the watchers of an alias is cached under the
// alias, and the server may remove it by either name: xDS protocol,
// "Resource names").
func (ch *channel) removalTargetsLocked(v *served, typ resources.ResourceType, name string) []*entry {
	var out []*entry
	if e := v.entry(name); e != nil {
		out = append(out, e)
	}
	if ct := ch.types[typ.TypeURL()]; ct == nil || !ct.delta.sawAliases {
		return out
	}
	var more []*entry
	for e := range ch.servedLocked(typ.TypeURL()) {
		if dn := e.ext().delta; e.name != name && e.value != nil && dn != nil && (dn.name == name || slices.Contains(dn.aliases, name)) {
			more = append(more, e)
		}
	}
	slices.SortFunc(more, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
	return append(out, more...)
}

// applyOmissionsLocked deletes the cached resources ch serves that a SotW
// response of a type whose responses carry every resource leaves out
// in name order; count has the names the response
// carries. An entry without a value and without watchers that nothing
// keeps (received invalid through a collection) is forgotten.
func (ch *channel) applyOmissionsLocked(u *update, count map[string]int, in *input, fc *flowControl) {
	c := ch.c
	for _, r := range u.reps {
		count[r.name]++
	}
	for i := range u.items {
		if it := &u.items[i]; it.heartbeat {
			count[it.name]++
		}
	}
	var missing []*entry
	for e := range ch.servedLocked(u.typ.TypeURL()) {
		if count[e.name] == 0 {
			missing = append(missing, e)
		}
	}
	slices.SortFunc(missing, func(x, y *entry) int { return strings.Compare(x.name, y.name) })
	in.reason = "removed by the management server"
	for _, e := range missing {
		c.stepLocked(e, evOmitted, in, fc)
	}
}

// unwantedDuplicates returns the names that appear more than once among
// the SotW items the client does not decode (nobody wants them), in
// response order: the others are counted by applyLocked. Names are
// compared by hash first, so that the common case (no duplicate)
// allocates one map, and a response with only wanted resources none.
func unwantedDuplicates(items []item) []string {
	var (
		seed  maphash.Seed
		first map[uint64]int // allocated at the first unwanted item
		dups  []string
	)
	for i := range items {
		it := &items[i]
		if !it.unwanted || it.heartbeat || (it.nameBytes == nil && it.name == "") {
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

func itemName(it *item) string {
	if it.nameBytes != nil {
		return string(it.nameBytes)
	}
	return it.name
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
