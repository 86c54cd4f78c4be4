// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"sync"
	"unique"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// The fast path of the ClusterLoadAssignment decoder. proto.Unmarshal
// allocates every message of the resource (five per endpoint), and the
// decoded Endpoints are only a few blocks: the usual shape (localities of
// endpoints with socket addresses, weights, health statuses and
// hostnames) is read from the wire in one pass that checks every field as
// proto.Unmarshal does (wirePlan.checkIter), into a pooled flat view, and
// converted with the endpointsBuilder of the proto path. Anything else (a
// policy, endpoint metadata, named endpoints or ports, non-socket
// addresses, a singular message field sent twice, which protobuf merges)
// and every invalid resource go through the proto path, which gives the
// error. FuzzDecodeEndpoints checks that both paths agree.

// Field numbers, from the descriptors so that they cannot drift.
var (
	claDesc        = (*v3endpointpb.ClusterLoadAssignment)(nil).ProtoReflect().Descriptor()
	localityLbDesc = (*v3endpointpb.LocalityLbEndpoints)(nil).ProtoReflect().Descriptor()
	localityDesc   = (*v3corepb.Locality)(nil).ProtoReflect().Descriptor()
	lbEndpointDesc = (*v3endpointpb.LbEndpoint)(nil).ProtoReflect().Descriptor()
	endpointDesc   = (*v3endpointpb.Endpoint)(nil).ProtoReflect().Descriptor()
	addlAddrDesc   = (*v3endpointpb.Endpoint_AdditionalAddress)(nil).ProtoReflect().Descriptor()
	addressDesc    = (*v3corepb.Address)(nil).ProtoReflect().Descriptor()
	socketAddrDesc = (*v3corepb.SocketAddress)(nil).ProtoReflect().Descriptor()
	uint32Desc     = (*wrapperspb.UInt32Value)(nil).ProtoReflect().Descriptor()

	claNameField      = fieldNumber(claDesc, "cluster_name")
	claEndpointsField = fieldNumber(claDesc, "endpoints")
	claPolicyField    = fieldNumber(claDesc, "policy")

	localityLbLocalityField = fieldNumber(localityLbDesc, "locality")
	localityLbEndpoints     = fieldNumber(localityLbDesc, "lb_endpoints")
	localityLbWeightField   = fieldNumber(localityLbDesc, "load_balancing_weight")
	localityLbPriorityField = fieldNumber(localityLbDesc, "priority")
	localityLbMetadataField = fieldNumber(localityLbDesc, "metadata")

	localityRegionField  = fieldNumber(localityDesc, "region")
	localityZoneField    = fieldNumber(localityDesc, "zone")
	localitySubZoneField = fieldNumber(localityDesc, "sub_zone")

	lbEndpointEndpointField = fieldNumber(lbEndpointDesc, "endpoint")
	lbEndpointHealthField   = fieldNumber(lbEndpointDesc, "health_status")
	lbEndpointMetadataField = fieldNumber(lbEndpointDesc, "metadata")
	lbEndpointWeightField   = fieldNumber(lbEndpointDesc, "load_balancing_weight")
	lbEndpointNameField     = fieldNumber(lbEndpointDesc, "endpoint_name")

	endpointAddressField  = fieldNumber(endpointDesc, "address")
	endpointHostnameField = fieldNumber(endpointDesc, "hostname")
	endpointAddlField     = fieldNumber(endpointDesc, "additional_addresses")
	addlAddressField      = fieldNumber(addlAddrDesc, "address")

	addressSocketField = fieldNumber(addressDesc, "socket_address")
	addressOneof       = numberSetOf(addressDesc.Oneofs().ByName("address").Fields())
	socketHostField    = fieldNumber(socketAddrDesc, "address")
	socketPortField    = fieldNumber(socketAddrDesc, "port_value")
	socketNamedField   = fieldNumber(socketAddrDesc, "named_port")
	uint32ValueField   = fieldNumber(uint32Desc, "value")

	// endpointsPlans are the plans of the messages the walk reads,
	// fetched once.
	endpointsPlans = sync.OnceValue(func() *endpointsPlanSet {
		return &endpointsPlanSet{
			cla: planFor(claDesc), localityLb: planFor(localityLbDesc), locality: planFor(localityDesc),
			lbEndpoint: planFor(lbEndpointDesc), endpoint: planFor(endpointDesc), addlAddr: planFor(addlAddrDesc),
			address: planFor(addressDesc), socketAddr: planFor(socketAddrDesc), uint32: planFor(uint32Desc),
		}
	})

	claWirePool = sync.Pool{New: func() any { return new(claWire) }}
)

// endpointsPlanSet holds the plan of each message of the fast path.
type endpointsPlanSet struct {
	cla, localityLb, locality, lbEndpoint, endpoint, addlAddr, address, socketAddr, uint32 *wirePlan
}

// claWire is a ClusterLoadAssignment as read from the wire: byte slices
// of the input, flat. Pooled: it is garbage once converted.
type claWire struct {
	plans *endpointsPlanSet
	// localityMetadata: a locality with metadata is not the usual shape.
	localityMetadata bool
	name             []byte
	locs             []wireLocality
	eps              []wireEndpoint
	addrs            []wireAddress
	size             int // arena bytes for the addresses
}

// wireLocality is one LocalityLbEndpoints.
type wireLocality struct {
	region, zone, subZone []byte
	priority, weight      uint32
	epEnd                 int // its endpoints end at claWire.eps[epEnd]
}

// wireEndpoint is one LbEndpoint.
type wireEndpoint struct {
	hostname  []byte
	health    int32
	weight    uint32
	weightSet bool
	addrEnd   int // its addresses, address first, end at claWire.addrs[addrEnd]
}

// wireAddress is a socket address.
type wireAddress struct {
	host []byte
	port uint32
}

// endpointsFromWire decodes b, a serialized ClusterLoadAssignment, if it
// has the usual shape and is valid; ok is false otherwise, and the caller
// takes the proto path. With httpConnect, locality metadata is not the
// usual shape either (WithHTTPConnect reads it). The caller sets
// ClusterName and raw.
func endpointsFromWire(b []byte, httpConnect bool) (name string, e *Endpoints, ok bool) {
	w := claWirePool.Get().(*claWire)
	defer w.release()
	w.plans, w.localityMetadata = endpointsPlans(), httpConnect
	if !w.readCLA(b, wireRecursionLimit-1) || len(w.name) == 0 {
		return "", nil, false
	}
	e = &Endpoints{}
	if len(w.locs) > 0 {
		bd := endpointsBuilder{maxPrio: -1}
		bd.init(e, len(w.locs), len(w.eps), len(w.addrs), w.size)
		ep, addr := 0, 0
		for i, l := range w.locs {
			keep, err := bd.locality(i, internBytes(l.region), internBytes(l.zone), internBytes(l.subZone), l.priority, l.weight)
			if err != nil {
				return "", nil, false
			}
			if !keep {
				if ep = l.epEnd; ep > 0 { // skip its endpoints
					addr = w.eps[ep-1].addrEnd
				}
				continue
			}
			for j := 0; ep < l.epEnd; j, ep = j+1, ep+1 {
				we := &w.eps[ep]
				weight, err := bd.endpointWeight(j, we.weight, we.weightSet)
				if err != nil {
					return "", nil, false
				}
				first := len(bd.seen.all)
				for ; addr < we.addrEnd; addr++ {
					a := &w.addrs[addr]
					if len(a.host) == 0 {
						return "", nil, false
					}
					bd.seen.all = append(bd.seen.all, bd.arena.joinHostPort(unsafe.String(unsafe.SliceData(a.host), len(a.host)), a.port))
				}
				if bd.endpoint(j, first, string(we.hostname), HealthStatus(we.health), weight, "") != nil {
					return "", nil, false
				}
			}
			bd.endLocality()
		}
		if bd.finish() != nil {
			return "", nil, false
		}
	}
	return string(w.name), e, true
}

// internBytes is intern for a byte slice.
func internBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unique.Make(string(b)).Value()
}

// release empties w, dropping its references to the input, and pools it
// unless it grew large.
func (w *claWire) release() {
	clear(w.locs)
	clear(w.eps)
	clear(w.addrs)
	*w = claWire{locs: w.locs[:0], eps: w.eps[:0], addrs: w.addrs[:0]}
	if cap(w.eps) <= 4096 && cap(w.addrs) <= 4096 && cap(w.locs) <= 1024 {
		claWirePool.Put(w)
	}
}

// The read functions walk one message each, at the recursion depth d of
// wirePlan.check after its decrement, and return false for anything the
// fast path does not take.

func (w *claWire) readCLA(b []byte, d int) bool {
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(claNameField):
			if !validUTF8(it.val) {
				return false
			}
			w.name = it.val
		case it.bytesField(claEndpointsField):
			if !w.readLocality(it.val, d-1) {
				return false
			}
		case it.num == claPolicyField:
			return false
		case !w.plans.cla.checkIter(&it, d):
			return false
		}
	}
	return !it.bad
}

func (w *claWire) readLocality(b []byte, d int) bool {
	var (
		l                      wireLocality
		hasLocality, hasWeight bool
	)
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(localityLbLocalityField):
			if hasLocality || !w.readLocalityID(it.val, d-1, &l) {
				return false
			}
			hasLocality = true
		case it.bytesField(localityLbEndpoints):
			if !w.readLbEndpoint(it.val, d-1) {
				return false
			}
		case it.bytesField(localityLbWeightField):
			var ok bool
			if l.weight, ok = w.readUInt32(it.val, d-1); hasWeight || !ok {
				return false
			}
			hasWeight = true
		case it.num == localityLbPriorityField && it.typ == protowire.VarintType:
			l.priority = uint32(it.u)
		case it.num == localityLbMetadataField && w.localityMetadata:
			return false
		case !w.plans.localityLb.checkIter(&it, d):
			return false
		}
	}
	l.epEnd = len(w.eps)
	w.locs = append(w.locs, l)
	return !it.bad && hasLocality
}

func (w *claWire) readLocalityID(b []byte, d int, l *wireLocality) bool {
	it := wireIter{b: b}
	for it.next() {
		var dst *[]byte
		switch {
		case it.bytesField(localityRegionField):
			dst = &l.region
		case it.bytesField(localityZoneField):
			dst = &l.zone
		case it.bytesField(localitySubZoneField):
			dst = &l.subZone
		case !w.plans.locality.checkIter(&it, d):
			return false
		}
		if dst != nil {
			if !validUTF8(it.val) {
				return false
			}
			*dst = it.val
		}
	}
	return !it.bad
}

func (w *claWire) readUInt32(b []byte, d int) (uint32, bool) {
	var v uint32
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.num == uint32ValueField && it.typ == protowire.VarintType:
			v = uint32(it.u)
		case !w.plans.uint32.checkIter(&it, d):
			return 0, false
		}
	}
	return v, !it.bad
}

func (w *claWire) readLbEndpoint(b []byte, d int) bool {
	var (
		ep                     wireEndpoint
		hasEndpoint, hasWeight bool
	)
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(lbEndpointEndpointField):
			if hasEndpoint || !w.readEndpoint(it.val, d-1, &ep) {
				return false
			}
			hasEndpoint = true
		case it.num == lbEndpointHealthField && it.typ == protowire.VarintType:
			ep.health = int32(it.u)
		case it.bytesField(lbEndpointWeightField):
			var ok bool
			if ep.weight, ok = w.readUInt32(it.val, d-1); hasWeight || !ok {
				return false
			}
			hasWeight, ep.weightSet = true, true
		case it.num == lbEndpointMetadataField || it.num == lbEndpointNameField:
			return false
		case !w.plans.lbEndpoint.checkIter(&it, d):
			return false
		}
	}
	ep.addrEnd = len(w.addrs)
	w.eps = append(w.eps, ep)
	return !it.bad && hasEndpoint
}

func (w *claWire) readEndpoint(b []byte, d int, ep *wireEndpoint) bool {
	first := len(w.addrs)
	w.addrs = append(w.addrs, wireAddress{}) // the address, filled below
	hasAddress := false
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(endpointAddressField):
			if hasAddress || !w.readAddress(it.val, d-1, &w.addrs[first]) {
				return false
			}
			hasAddress = true
		case it.bytesField(endpointHostnameField):
			if !validUTF8(it.val) {
				return false
			}
			ep.hostname = it.val
		case it.bytesField(endpointAddlField):
			if !w.readAdditionalAddress(it.val, d-1) {
				return false
			}
		case !w.plans.endpoint.checkIter(&it, d):
			return false
		}
	}
	return !it.bad && hasAddress
}

func (w *claWire) readAdditionalAddress(b []byte, d int) bool {
	var (
		a          wireAddress
		hasAddress bool
	)
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(addlAddressField):
			if hasAddress || !w.readAddress(it.val, d-1, &a) {
				return false
			}
			hasAddress = true
		case !w.plans.addlAddr.checkIter(&it, d):
			return false
		}
	}
	w.addrs = append(w.addrs, a)
	return !it.bad && hasAddress
}

func (w *claWire) readAddress(b []byte, d int, a *wireAddress) bool {
	hasSocket := false
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(addressSocketField):
			if hasSocket || !w.readSocketAddress(it.val, d-1, a) {
				return false
			}
			hasSocket = true
		case addressOneof.has(it.num):
			return false
		case !w.plans.address.checkIter(&it, d):
			return false
		}
	}
	return !it.bad && hasSocket
}

func (w *claWire) readSocketAddress(b []byte, d int, a *wireAddress) bool {
	it := wireIter{b: b}
	for it.next() {
		switch {
		case it.bytesField(socketHostField):
			if !validUTF8(it.val) {
				return false
			}
			a.host = it.val
		case it.num == socketPortField && it.typ == protowire.VarintType:
			a.port = uint32(it.u)
		case it.num == socketNamedField:
			return false
		case !w.plans.socketAddr.checkIter(&it, d):
			return false
		}
	}
	w.size += len(a.host) + len("[]:65535")
	return !it.bad && len(a.host) > 0
}
