// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// The fast path of the Listener decoder. proto.Unmarshal of a Listener
// decodes only the outer message: the HttpConnectionManager is an Any. A
// client must decode both, and protobuf-go allocates every message of the
// HttpConnectionManager, which makes the decoder cost several times the
// unmarshal of the outer bytes. The usual client Listener (a name and an
// api_listener holding an HttpConnectionManager with rds, http_filters and
// a few options) is instead checked with wireCheck, which accepts exactly
// the bytes proto.Unmarshal accepts without allocating, and its few fields
// are read with protowire into the same hcmView the proto path builds.
// Anything unusual (an inline route_config, a singular message field sent
// twice, which protobuf merges, config_discovery, more than
// maxWireFilters filters) falls back to the proto path.
// FuzzDecodeListener checks that both paths agree. The decoded Listener
// takes two allocations: one block for the Listener, its filters and
// their configs (newListener), one string for the names (fill).

// Field numbers, from the descriptors so that they cannot drift.
var (
	listenerDesc    = (*v3listenerpb.Listener)(nil).ProtoReflect().Descriptor()
	apiListenerDesc = (*v3listenerpb.ApiListener)(nil).ProtoReflect().Descriptor()
	hcmDesc         = (*v3httppb.HttpConnectionManager)(nil).ProtoReflect().Descriptor()
	rdsDesc         = (*v3httppb.Rds)(nil).ProtoReflect().Descriptor()
	httpFilterDesc  = (*v3httppb.HttpFilter)(nil).ProtoReflect().Descriptor()
	configSrcDesc   = (*v3corepb.ConfigSource)(nil).ProtoReflect().Descriptor()
	httpOptionsDesc = (*v3corepb.HttpProtocolOptions)(nil).ProtoReflect().Descriptor()
	durationDesc    = (*durationpb.Duration)(nil).ProtoReflect().Descriptor()

	listenerNameField        = fieldNumber(listenerDesc, "name")
	listenerAPIListenerField = fieldNumber(listenerDesc, "api_listener")
	apiListenerAnyField      = fieldNumber(apiListenerDesc, "api_listener")

	hcmRdsField          = fieldNumber(hcmDesc, "rds")
	hcmRouteConfigField  = fieldNumber(hcmDesc, "route_config")
	hcmScopedRoutesField = fieldNumber(hcmDesc, "scoped_routes")
	hcmFiltersField      = fieldNumber(hcmDesc, "http_filters")
	hcmXffField          = fieldNumber(hcmDesc, "xff_num_trusted_hops")
	hcmOriginalIPField   = fieldNumber(hcmDesc, "original_ip_detection_extensions")
	hcmCommonField       = fieldNumber(hcmDesc, "common_http_protocol_options")

	rdsConfigSourceField = fieldNumber(rdsDesc, "config_source")
	rdsNameField         = fieldNumber(rdsDesc, "route_config_name")

	configSrcADSField  = fieldNumber(configSrcDesc, "ads")
	configSrcSelfField = fieldNumber(configSrcDesc, "self")
	configSrcSpecifier = numberSetOf(configSrcDesc.Oneofs().ByName("config_source_specifier").Fields())

	httpOptionsMaxStreamField = fieldNumber(httpOptionsDesc, "max_stream_duration")

	filterNameField      = fieldNumber(httpFilterDesc, "name")
	filterTypedConfField = fieldNumber(httpFilterDesc, "typed_config")
	filterOptionalField  = fieldNumber(httpFilterDesc, "is_optional")
	filterConfigOneof    = numberSetOf(httpFilterDesc.Oneofs().ByName("config_type").Fields())

	// listenerPlans are the plans of the messages the fused walks read,
	// fetched once per Listener.
	listenerPlans = sync.OnceValue(func() *listenerPlanSet {
		return &listenerPlanSet{
			listener:    planFor(listenerDesc),
			apiListener: planFor(apiListenerDesc),
			hcm:         planFor(hcmDesc),
			rds:         planFor(rdsDesc),
			configSrc:   planFor(configSrcDesc),
			httpOptions: planFor(httpOptionsDesc),
			httpFilter:  planFor(httpFilterDesc),
			duration:    planFor(durationDesc),
		}
	})
)

// listenerPlanSet holds the plan of each message of the Listener fast path.
type listenerPlanSet struct {
	listener, apiListener, hcm, rds, configSrc, httpOptions, httpFilter, duration *wirePlan
}

func fieldNumber(md protoreflect.MessageDescriptor, name protoreflect.Name) protowire.Number {
	return md.Fields().ByName(name).Number()
}

// numberSet is a set of field numbers below 128, the members of a oneof.
type numberSet [2]uint64

func numberSetOf(fields protoreflect.FieldDescriptors) numberSet {
	var s numberSet
	for i := range fields.Len() {
		n := fields.Get(i).Number()
		if n >= 128 {
			panic("resources: oneof member " + string(fields.Get(i).FullName()) + " has a field number ≥ 128")
		}
		s[n/64] |= 1 << (n % 64)
	}
	return s
}

func (s numberSet) has(n protowire.Number) bool {
	return n < 128 && s[n/64]&(1<<(n%64)) != 0
}

// listenerWire is what the fast path reads of a Listener besides the
// hcmView's scalars: the strings and filter configs, as bytes of the
// input, which fill turns into the hcmView's strings and Anys.
type listenerWire struct {
	name     []byte // name
	rdsName  []byte // rds.route_config_name
	nFilters int
	filters  [maxWireFilters]wireFilter // http_filters[:nFilters]
}

// maxWireFilters is the longest chain of HTTP filters the fast path
// takes; longer ones, rare, go through proto.Unmarshal. A fixed array
// keeps listenerWire on the stack.
const maxWireFilters = 4

// wireFilter is one HttpFilter as read from the wire.
type wireFilter struct {
	name     []byte
	typeURL  string // typed_config.type_url
	value    []byte // typed_config.value
	hasCfg   bool   // typed_config is set
	optional bool   // is_optional
}

// fill completes v from w: the strings share one allocation, and the
// filters, appended to fs, have their configs in cfgs, one per filter. It
// returns the Listener name and the filters. The configs' values alias
// the input.
func (w *listenerWire) fill(v *hcmView, fs []filterView, cfgs []anypb.Any) (name string, _ []filterView) {
	wfs := w.filters[:w.nFilters]
	size := len(w.name) + len(w.rdsName)
	for i := range wfs {
		size += len(wfs[i].name)
	}
	var sb strings.Builder
	sb.Grow(size)
	sb.Write(w.name)
	sb.Write(w.rdsName)
	for i := range wfs {
		sb.Write(wfs[i].name)
	}
	s := sb.String()
	name, s = s[:len(w.name)], s[len(w.name):]
	v.rdsName, s = s[:len(w.rdsName)], s[len(w.rdsName):]
	for i := range wfs {
		f := &wfs[i]
		fv := filterView{optional: f.optional}
		fv.name, s = s[:len(f.name)], s[len(f.name):]
		if f.hasCfg {
			cfgs[i] = anypb.Any{TypeUrl: f.typeURL, Value: f.value}
			fv.cfg = &cfgs[i]
		}
		fs = append(fs, fv)
	}
	return name, fs
}

// listenerFromWire is the fast path of decodeListener: it reads a client
// Listener of the usual shape into v and w, with ok false when the
// Listener must go through proto.Unmarshal (which then also reports any
// error in the bytes). The bytes are checked, as wireCheck does, in the
// same pass that reads them: the fields the decoder reads are checked as
// they are read, the others with the plan of their message. The bytes of
// b are not copied: w aliases them.
func listenerFromWire(b []byte, v *hcmView, w *listenerWire) (ok bool) {
	ps := listenerPlans()
	lp := ps.listener
	if lp.unsupported {
		return false
	}
	depth := wireRecursionLimit - 1
	var (
		api  []byte
		apis int
	)
	it := wireIter{b: b}
	for it.next() {
		if it.bytesField(listenerAPIListenerField) {
			api, apis = it.val, apis+1
			continue
		}
		if !lp.checkIter(&it, depth) {
			return false
		}
		if it.bytesField(listenerNameField) {
			w.name = it.val
		}
	}
	if it.bad || apis != 1 {
		return false
	}
	typeURL, value, ok := apiListenerFromWire(ps, api, depth-1)
	return ok && typeURL == hcmTypeURL && hcmViewFromWire(ps, value, v, w)
}

// apiListenerFromWire checks a serialized ApiListener, checked at depth,
// and returns the type_url and value of its api_listener; ok is false
// when it is invalid or holds api_listener more than once, which
// proto.Unmarshal would merge.
func apiListenerFromWire(ps *listenerPlanSet, b []byte, depth int) (typeURL string, value []byte, ok bool) {
	a, n, ok := checkedSingleField(b, ps.apiListener, apiListenerAnyField, depth)
	if !ok || n != 1 {
		return "", nil, false
	}
	return anyFields(a, knownHCMTypeURL)
}

// checkedSingleField returns the value of the singular message or string
// field num of b (the last one, as proto.Unmarshal keeps for a string) and
// its number of occurrences with the expected wire type; a message field
// that occurs more than once is merged by proto.Unmarshal, which the fast
// paths do not model: they fall back when count > 1. It checks every
// other field of b, a message of plan p checked at depth; the caller
// checks the value of num. ok is false when b is invalid.
func checkedSingleField(b []byte, p *wirePlan, num protowire.Number, depth int) (v []byte, count int, ok bool) {
	it := wireIter{b: b}
	for it.next() {
		if it.bytesField(num) {
			v, count = it.val, count+1
		} else if !p.checkIter(&it, depth) {
			return nil, 0, false
		}
	}
	return v, count, !it.bad
}

// anyFields checks a serialized Any and returns its type_url and value,
// the last of each as proto.Unmarshal keeps. An Any has no nested
// messages: wireIter's framing checks and the type URLs' UTF-8 are all
// there is to check. known returns the constant equal to a type URL the
// caller expects, "" for others: the constants are valid UTF-8, so that
// the last type URL, the one kept, is only scanned when it is not one of
// them (a type URL replaced by a later one is always scanned).
func anyFields(b []byte, known func([]byte) string) (typeURL string, value []byte, ok bool) {
	var (
		last []byte
		n    int
	)
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(1):
			if n > 0 && !validUTF8(last) {
				return "", nil, false
			}
			last, n = it.val, n+1
		case it.bytesField(2):
			value = it.val
		}
	}
	if it.bad {
		return "", nil, false
	}
	if typeURL = known(last); typeURL == "" && len(last) > 0 {
		if !validUTF8(last) {
			return "", nil, false
		}
		typeURL = string(last)
	}
	return typeURL, value, true
}

// knownHCMTypeURL is the known func of anyFields for api_listener.
func knownHCMTypeURL(b []byte) string {
	if string(b) == hcmTypeURL {
		return hcmTypeURL
	}
	return ""
}

// knownFilterTypeURL is the known func of anyFields for HTTP filter
// configs: the types this package knows.
func knownFilterTypeURL(b []byte) string {
	switch string(b) {
	case routerTypeURL:
		return routerTypeURL
	case faultTypeURL:
		return faultTypeURL
	case rbacTypeURL:
		return rbacTypeURL
	case xdsTypedStructTypeURL:
		return xdsTypedStructTypeURL
	}
	return ""
}

// hcmViewFromWire checks and reads the serialized HttpConnectionManager b
// into v and w; ok is false when b is invalid or of a shape the fast path
// leaves to proto.Unmarshal. Like the proto path, which unmarshals the
// Any's value on its own, it starts at the full recursion limit.
func hcmViewFromWire(ps *listenerPlanSet, b []byte, v *hcmView, w *listenerWire) bool {
	hp := ps.hcm
	if hp.unsupported {
		return false
	}
	depth := wireRecursionLimit - 1
	var specifiers, commons int
	it := wireIter{b: b}
	for it.next() {
		n := it.num
		switch {
		case it.typ == protowire.VarintType && n == hcmXffField:
			v.xffHops = uint32(it.u)
		case it.typ != protowire.BytesType:
		case n == hcmRouteConfigField:
			return false // an inline route_config needs the proto
		case n == hcmRdsField:
			v.routeSpecifier, specifiers = n, specifiers+1
			if !rdsFromWire(ps, it.val, v, w, depth-1) {
				return false
			}
			continue
		case n == hcmFiltersField:
			f, ok := filterFromWire(ps, it.val, depth-1)
			if !ok {
				return false
			}
			if w.nFilters == maxWireFilters {
				return false
			}
			w.filters[w.nFilters], w.nFilters = f, w.nFilters+1
			continue
		case n == hcmCommonField:
			commons++
			if !maxStreamFromWire(ps, it.val, v, depth-1) {
				return false
			}
			continue
		case n == hcmScopedRoutesField:
			v.routeSpecifier, specifiers = n, specifiers+1
		case n == hcmOriginalIPField:
			v.originalIPExt = true
		}
		if !hp.checkIter(&it, depth) {
			return false
		}
	}
	// Two route specifiers replace or merge each other, as do two
	// common_http_protocol_options.
	return !it.bad && specifiers <= 1 && commons <= 1
}

// rdsFromWire checks and reads a serialized Rds, checked at depth, into
// v and w; ok is false when it is invalid or repeats config_source.
func rdsFromWire(ps *listenerPlanSet, b []byte, v *hcmView, w *listenerWire, depth int) bool {
	p := ps.rds
	var sources int
	it := wireIter{b: b}
	for it.next() {
		if it.bytesField(rdsConfigSourceField) {
			k, ok := configSourceKindFromWire(ps.configSrc, it.val, depth-1)
			if !ok {
				return false
			}
			v.rdsSource, sources = k, sources+1
			continue
		}
		if !p.checkIter(&it, depth) {
			return false
		}
		if it.bytesField(rdsNameField) {
			w.rdsName = it.val
		}
	}
	return !it.bad && sources <= 1
}

// configSourceKindFromWire checks a serialized ConfigSource, checked at
// depth, and returns its kind: the last member of config_source_specifier
// wins, as in proto.Unmarshal.
func configSourceKindFromWire(p *wirePlan, b []byte, depth int) (configSourceKind, bool) {
	k := configSourceNone
	it := wireIter{b: b}
	for it.next() {
		if !p.checkIter(&it, depth) {
			return k, false
		}
		if it.typ != protowire.BytesType || !configSrcSpecifier.has(it.num) {
			continue
		}
		switch it.num {
		case configSrcADSField:
			k = configSourceADS
		case configSrcSelfField:
			k = configSourceSelf
		default:
			k = configSourceOther
		}
	}
	return k, !it.bad
}

// maxStreamFromWire checks a serialized HttpProtocolOptions, checked at
// depth, and reads its max_stream_duration into v; ok is false when it is
// invalid or repeats max_stream_duration.
func maxStreamFromWire(ps *listenerPlanSet, b []byte, v *hcmView, depth int) bool {
	d, n, ok := checkedSingleField(b, ps.httpOptions, httpOptionsMaxStreamField, depth)
	if !ok || n > 1 {
		return false
	}
	if n == 1 {
		v.maxStream, ok = durationFromWire(ps.duration, d, depth-1)
	}
	return ok
}

// durationFromWire checks and decodes a serialized Duration, checked at
// depth.
func durationFromWire(p *wirePlan, b []byte, depth int) (durationParts, bool) {
	d := durationParts{set: true}
	it := wireIter{b: b}
	for it.next() {
		if it.typ == protowire.VarintType {
			switch it.num {
			case 1:
				d.seconds = int64(it.u)
			case 2:
				d.nanos = int32(it.u)
			}
		}
		if !p.checkIter(&it, depth) {
			return d, false
		}
	}
	return d, !it.bad
}

// filterFromWire checks and reads one serialized HttpFilter, checked at
// depth; ok is false when it is invalid, has config_discovery or repeats
// typed_config.
func filterFromWire(ps *listenerPlanSet, b []byte, depth int) (wireFilter, bool) {
	p := ps.httpFilter
	var (
		f        wireFilter
		cfgs     int
		oneofSet protowire.Number
	)
	it := wireIter{b: b}
	for it.next() {
		n := it.num
		switch {
		case n == filterOptionalField && it.typ == protowire.VarintType:
			f.optional = it.u != 0
		case it.typ != protowire.BytesType:
		case n == filterTypedConfField:
			oneofSet, cfgs = n, cfgs+1
			var ok bool
			if f.typeURL, f.value, ok = anyFields(it.val, knownFilterTypeURL); !ok {
				return f, false
			}
			continue
		case n == filterNameField:
			f.name = it.val
		case filterConfigOneof.has(n):
			oneofSet = n
		}
		if !p.checkIter(&it, depth) {
			return f, false
		}
	}
	if it.bad || cfgs > 1 || (oneofSet != 0 && oneofSet != filterTypedConfField) {
		return f, false
	}
	f.hasCfg = cfgs == 1
	return f, true
}
