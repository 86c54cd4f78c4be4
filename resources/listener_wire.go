// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

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
// twice, which protobuf merges, config_discovery) falls back to the proto
// path. FuzzDecodeListener checks that both paths agree.

// Field numbers, from the descriptors so that they cannot drift.
var (
	listenerDesc    = (*v3listenerpb.Listener)(nil).ProtoReflect().Descriptor()
	apiListenerDesc = (*v3listenerpb.ApiListener)(nil).ProtoReflect().Descriptor()
	hcmDesc         = (*v3httppb.HttpConnectionManager)(nil).ProtoReflect().Descriptor()
	rdsDesc         = (*v3httppb.Rds)(nil).ProtoReflect().Descriptor()
	httpFilterDesc  = (*v3httppb.HttpFilter)(nil).ProtoReflect().Descriptor()
	configSrcDesc   = (*v3corepb.ConfigSource)(nil).ProtoReflect().Descriptor()
	httpOptionsDesc = (*v3corepb.HttpProtocolOptions)(nil).ProtoReflect().Descriptor()

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

	listenerPlan = sync.OnceValue(func() *wirePlan { return planFor(listenerDesc) })
	hcmPlan      = sync.OnceValue(func() *wirePlan { return planFor(hcmDesc) })
)

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

// singleField returns the value of singular message or string field num
// of b (the last one for a string, as proto.Unmarshal) and its number of
// occurrences with the expected wire type. A message field that occurs
// more than once is merged by proto.Unmarshal, which the fast paths do
// not model: they fall back when count > 1.
func singleField(b []byte, num protowire.Number) (v []byte, count int) {
	for it := (wireIter{b: b}); it.next(); {
		if it.bytesField(num) {
			v, count = it.val, count+1
		}
	}
	return v, count
}

// listenerFromWire is the fast path of decodeListener: it returns the name
// and the hcmView of a client Listener of the usual shape, with ok false
// when the Listener must go through proto.Unmarshal. The bytes of b are
// not copied: the view's configs alias them.
func listenerFromWire(b []byte, v *hcmView) (name string, ok bool) {
	if listenerPlan().check(b, wireRecursionLimit) != nil {
		return "", false
	}
	var (
		nameBytes []byte
		api       []byte
		apis      int
	)
	for it := (wireIter{b: b}); it.next(); {
		switch {
		case it.bytesField(listenerNameField):
			nameBytes = it.val
		case it.bytesField(listenerAPIListenerField):
			api, apis = it.val, apis+1
		}
	}
	if apis != 1 {
		return "", false
	}
	anyBytes, n := singleField(api, apiListenerAnyField)
	if n != 1 {
		return "", false
	}
	typeURL, value := anyFields(anyBytes)
	if string(typeURL) != hcmTypeURL || hcmPlan().check(value, wireRecursionLimit) != nil || !hcmViewFromWire(value, v) {
		return "", false
	}
	return string(nameBytes), true
}

// anyFields returns the type_url and value of a serialized Any, the last
// of each as proto.Unmarshal keeps; b must have passed wireCheck.
func anyFields(b []byte) (typeURL, value []byte) {
	for it := (wireIter{b: b}); it.next(); {
		switch {
		case it.bytesField(1):
			typeURL = it.val
		case it.bytesField(2):
			value = it.val
		}
	}
	return typeURL, value
}

// wireAny returns a serialized Any as an *anypb.Any whose value aliases b.
func wireAny(b []byte) *anypb.Any {
	typeURL, value := anyFields(b)
	return &anypb.Any{TypeUrl: filterTypeURL(typeURL), Value: value}
}

// filterTypeURL returns the type URL b as a string, without allocating for
// the HTTP filter types this package knows.
func filterTypeURL(b []byte) string {
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
	return string(b)
}

// hcmViewFromWire reads the view of an HttpConnectionManager that passed
// wireCheck into v; ok is false for shapes the fast path leaves to
// proto.Unmarshal.
func hcmViewFromWire(b []byte, v *hcmView) bool {
	var (
		rds, common         []byte
		specifiers, commons int
		filterBuf           [4][]byte // the filters' bytes; most chains are short
		filters             = filterBuf[:0]
	)
	for it := (wireIter{b: b}); it.next(); {
		n := it.num
		switch {
		case it.typ == protowire.VarintType && n == hcmXffField:
			v.xffHops = uint32(it.u)
		case it.typ != protowire.BytesType:
		case n == hcmRdsField || n == hcmRouteConfigField || n == hcmScopedRoutesField:
			v.routeSpecifier, specifiers = n, specifiers+1
			rds = it.val
		case n == hcmFiltersField:
			filters = append(filters, it.val)
		case n == hcmOriginalIPField:
			v.originalIPExt = true
		case n == hcmCommonField:
			common, commons = it.val, commons+1
		}
	}
	// Two route specifiers replace or merge each other; an inline
	// route_config needs the proto.
	if specifiers > 1 || commons > 1 || v.routeSpecifier == hcmRouteConfigField {
		return false
	}
	if v.routeSpecifier == hcmRdsField {
		var sources int
		for it := (wireIter{b: rds}); it.next(); {
			switch {
			case it.bytesField(rdsConfigSourceField):
				v.rdsSource, sources = configSourceKindFromWire(it.val), sources+1
			case it.bytesField(rdsNameField):
				v.rdsName = string(it.val)
			}
		}
		if sources > 1 {
			return false
		}
	}
	if commons == 1 {
		d, n := singleField(common, httpOptionsMaxStreamField)
		if n > 1 {
			return false
		}
		if n == 1 {
			v.maxStream = durationFromWire(d)
		}
	}
	if len(filters) > 0 {
		v.filters = make([]filterView, len(filters))
		for i, fb := range filters {
			f, ok := filterFromWire(fb)
			if !ok {
				return false
			}
			v.filters[i] = f
		}
	}
	return true
}

// configSourceKindFromWire returns the kind of a serialized ConfigSource:
// the last member of config_source_specifier wins, as in proto.Unmarshal.
func configSourceKindFromWire(b []byte) configSourceKind {
	k := configSourceNone
	for it := (wireIter{b: b}); it.next(); {
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
	return k
}

// durationFromWire decodes a serialized Duration that passed wireCheck.
func durationFromWire(b []byte) durationParts {
	d := durationParts{set: true}
	for it := (wireIter{b: b}); it.next(); {
		if it.typ == protowire.VarintType {
			switch it.num {
			case 1:
				d.seconds = int64(it.u)
			case 2:
				d.nanos = int32(it.u)
			}
		}
	}
	return d
}

// filterFromWire reads one serialized HttpFilter; ok is false when it has
// config_discovery or a repeated typed_config.
func filterFromWire(b []byte) (filterView, bool) {
	var (
		f        filterView
		cfg      []byte
		name     []byte
		cfgs     int
		oneofSet protowire.Number
	)
	for it := (wireIter{b: b}); it.next(); {
		n := it.num
		switch {
		case n == filterOptionalField && it.typ == protowire.VarintType:
			f.optional = it.u != 0
		case it.typ != protowire.BytesType:
		case n == filterNameField:
			name = it.val
		case filterConfigOneof.has(n):
			oneofSet = n
			if n == filterTypedConfField {
				cfg, cfgs = it.val, cfgs+1
			}
		}
	}
	if cfgs > 1 || (oneofSet != 0 && oneofSet != filterTypedConfField) {
		return f, false
	}
	f.name = string(name)
	if cfgs == 1 {
		f.cfg = wireAny(cfg)
	}
	return f, true
}
