// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"hash/maphash"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"unique"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// EndpointsTypeURL is the type URL of EDS resources.
const EndpointsTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

// EndpointsType, a Type[*Endpoints], is the EDS resource type: ClusterLoadAssignment resources,
// decoded to *Endpoints and validated by. A SotW response need not
// carry every subscribed resource. Its name is the cluster_name field
// (EDS service name), found without decoding.
// It is a constant: importers cannot reassign it.
const EndpointsType BuiltinType[*Endpoints] = EndpointsTypeURL

// endpointsConfig describes EndpointsType.
var endpointsConfig = TypeConfig[*Endpoints]{
	TypeURL:                    EndpointsTypeURL,
	TypeName:                   "ClusterLoadAssignment",
	AllResourcesRequiredInSotW: false,
	Decode:                     func(inner *anypb.Any) (string, *Endpoints, error) { return decodeEndpoints(inner, decodeOptions{}) },
	NameField:                  1, // cluster_name
}

// Endpoints is a decoded ClusterLoadAssignment: the endpoints of one
// cluster (or EDS service name), grouped by locality. It is immutable once
// decoded and shared by every watcher: do not modify it or its slices.
type Endpoints struct {
	// ClusterName is the resource name (cluster_name) in canonical form.
	ClusterName string
	// Localities are the localities with a non-zero weight, in the order
	// received; localities whose load_balancing_weight is 0 or unset are
	// dropped. Priorities are 0..N-1 without gaps. Empty when the
	// cluster has no endpoints.
	Localities []Locality
	// DropOverloads are the policy.drop_overloads in the order received,
	// nil when there are none.
	DropOverloads []DropOverload

	raw rawBytes // the serialized resource as received (the unwrapped Any's value)
}

// Raw returns the resource exactly as received, after removing any
// Resource wrapper: a new Any on each call (type URL
// EndpointsTypeURL) with a copy of the bytes.
func (e *Endpoints) Raw() *anypb.Any { return e.raw.toAny(EndpointsTypeURL) }

// Locality is a group of endpoints that share a locality and a priority
// (LocalityLbEndpoints).
type Locality struct {
	// ID identifies the locality. The same ID appears at most once per
	// priority.
	ID LocalityID
	// Priority is the priority of the locality, 0 being the highest.
	Priority uint32
	// Weight is the load_balancing_weight, always ≥ 1; the sum of the
	// weights of the localities of one priority fits in a uint32.
	Weight uint32
	// Endpoints are the lb_endpoints in the order received; possibly empty.
	Endpoints []Endpoint
	// ProxyAddress is the HTTP CONNECT proxy of the locality's endpoints
	// that have none of their own (gRFC A86), "host:port" with an IP
	// address: the socket address under the key
	// "envoy.http11_proxy_transport_socket.proxy_address" of the
	// locality's typed_filter_metadata. Read only by types made with
	// WithHTTPConnect; "" otherwise, and when unset.
	ProxyAddress string
}

// LocalityID is the locality of a group of endpoints (core.Locality).
type LocalityID struct {
	Region, Zone, SubZone string
}

// String returns the locality in a form suitable for messages, for example
// `{region="r", zone="z", sub_zone="s"}`.
func (l LocalityID) String() string {
	return fmt.Sprintf("{region=%q, zone=%q, sub_zone=%q}", l.Region, l.Zone, l.SubZone)
}

// Endpoint is one upstream host (LbEndpoint).
type Endpoint struct {
	// Addresses are the endpoint's addresses as "host:port" ("[v6]:port"
	// for IPv6); the first is endpoint.address, the others are
	// endpoint.additional_addresses (dual stack, gRFC A61). No address
	// appears twice in one resource.
	Addresses []string
	// Hostname is endpoint.hostname, "" if unset.
	Hostname string
	// HealthStatus is the health_status reported by the management server.
	// Endpoints are kept whatever their status; the load balancer filters.
	HealthStatus HealthStatus
	// Weight is load_balancing_weight, 1 when unset, never 0.
	Weight uint32
	// HashKey is the endpoint's key for the ring hash LB policy: the
	// string "hash_key" of the endpoint's "envoy.lb" filter metadata
	// (gRFC A76); "" when unset, in which case the address is hashed.
	HashKey string
	// ProxyAddress is the endpoint's HTTP CONNECT proxy (gRFC A86), as
	// Locality.ProxyAddress but from the endpoint's metadata, which takes
	// precedence. Read only by types made with WithHTTPConnect.
	ProxyAddress string
}

// DropOverload is one category of the policy.drop_overloads: the share of
// RPCs the client drops on the management server's instruction.
type DropOverload struct {
	// Category names the drop category for load reports.
	Category string
	// PerMillion is the share of RPCs to drop, in parts per million,
	// between 0 and 1,000,000.
	PerMillion uint32
}

// HealthStatus is the health of an endpoint, mirroring the numeric values
// of envoy.config.core.v3.HealthStatus. Values the management server sends
// that this library does not know are kept as they are.
type HealthStatus int32

// The health statuses. HealthStatusUnknown is the zero value: the
// management server said nothing about the endpoint's health.
const (
	HealthStatusUnknown   HealthStatus = 0
	HealthStatusHealthy   HealthStatus = 1
	HealthStatusUnhealthy HealthStatus = 2
	HealthStatusDraining  HealthStatus = 3
	HealthStatusTimeout   HealthStatus = 4
	HealthStatusDegraded  HealthStatus = 5
)

// String returns the proto enum name, for example "HEALTHY".
func (h HealthStatus) String() string {
	if name, ok := v3corepb.HealthStatus_name[int32(h)]; ok {
		return name
	}
	return fmt.Sprintf("HealthStatus(%d)", int32(h))
}

// decodeEndpoints decodes a ClusterLoadAssignment with the
// options o. The usual shape is read straight from the wire (see
// endpoints_wire.go); anything else, and every invalid resource, goes
// through proto.Unmarshal. Both paths convert with one endpointsBuilder.
func decodeEndpoints(inner *anypb.Any, o decodeOptions) (string, *Endpoints, error) {
	if name, e, ok := endpointsFromWire(inner.GetValue(), o.httpConnect); ok {
		e.ClusterName = CanonicalName(name)
		e.raw = keepRaw(inner.GetValue())
		return name, e, nil
	}
	return decodeEndpointsProto(inner, o)
}

// decodeEndpointsProto is the proto path of decodeEndpoints, for every
// ClusterLoadAssignment.
func decodeEndpointsProto(inner *anypb.Any, o decodeOptions) (string, *Endpoints, error) {
	cla := &v3endpointpb.ClusterLoadAssignment{}
	if err := unmarshalResource(inner, cla, "ClusterLoadAssignment"); err != nil {
		return "", nil, err
	}
	name := cla.GetClusterName()
	if name == "" {
		return "", nil, errEmptyName("cluster_name")
	}
	e, err := endpointsFromProto(cla, o)
	if err != nil {
		return name, nil, err
	}
	e.ClusterName = CanonicalName(name)
	e.raw = keepRaw(inner.GetValue())
	return name, e, nil
}

// endpointsFromProto validates cla and converts it with the options o.
// The caller sets ClusterName and raw. Field paths are built only on the
// error path.
func endpointsFromProto(cla *v3endpointpb.ClusterLoadAssignment, o decodeOptions) (*Endpoints, error) {
	e := &Endpoints{}
	if drops := cla.GetPolicy().GetDropOverloads(); len(drops) > 0 {
		e.DropOverloads = make([]DropOverload, 0, len(drops))
		for i, d := range drops {
			pm, err := perMillion(d.GetDropPercentage())
			if err != nil {
				return nil, withFieldPrefix(indexed("policy.drop_overloads", i)+".drop_percentage", err)
			}
			e.DropOverloads = append(e.DropOverloads, DropOverload{Category: d.GetCategory(), PerMillion: pm})
		}
	}
	locs := cla.GetEndpoints()
	b := endpointsBuilder{maxPrio: -1}
	if len(locs) > 0 {
		nEps, nAddrs, size := 0, 0, 0
		for _, lp := range locs {
			nEps += len(lp.GetLbEndpoints())
			for _, lb := range lp.GetLbEndpoints() {
				nAddrs++
				ep := lb.GetEndpoint()
				size += len(ep.GetAddress().GetSocketAddress().GetAddress()) + len("[]:65535")
				for _, aa := range ep.GetAdditionalAddresses() {
					nAddrs++
					size += len(aa.GetAddress().GetSocketAddress().GetAddress()) + len("[]:65535")
				}
			}
		}
		b.init(e, len(locs), nEps, nAddrs, size)
	}
	for i, lp := range locs {
		l := lp.GetLocality()
		if l == nil {
			return nil, invalid(indexed("endpoints", i)+".locality", "missing")
		}
		keep, err := b.locality(i, l.GetRegion(), l.GetZone(), l.GetSubZone(), lp.GetPriority(), lp.GetLoadBalancingWeight().GetValue())
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		if o.httpConnect {
			if b.loc.ProxyAddress, err = proxyAddress(lp.GetMetadata()); err != nil {
				return nil, withFieldPrefix(indexed("endpoints", i)+".metadata", err)
			}
		}
		if err := b.endpointsOfLocality(lp.GetLbEndpoints(), o.httpConnect); err != nil {
			return nil, withFieldPrefix(indexed("endpoints", i), err)
		}
		b.endLocality()
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	return e, nil
}

// endpointsBuilder validates and converts the localities of a
// ClusterLoadAssignment, for both paths of decodeEndpoints:
// locality, then for each of its endpoints endpointWeight, the addresses
// appended to seen.all, endpoint, then endLocality; finish at the end.
type endpointsBuilder struct {
	e          *Endpoints
	nLocs      int             // localities in the resource, weight 0 included
	priorities []priorityState // indexed by priority, up to the highest seen
	maxPrio    int
	arena      addressArena
	seen       addressSet
	allEps     []Endpoint // the Endpoints of every locality, in one block
	loc        Locality   // the current locality, without its Endpoints
	firstEp    int        // in allEps, of the current locality
	weightSum  uint64     // of the endpoints of the current locality
}

type priorityState struct {
	weightSum  uint64
	count      int                     // localities with a non-zero weight
	localities map[LocalityID]struct{} // for many localities only
}

// init prepares b (whose maxPrio is -1) for nLocs localities with nEps endpoints and nAddrs
// addresses taking up to size bytes, sized once.
func (b *endpointsBuilder) init(e *Endpoints, nLocs, nEps, nAddrs, size int) {
	b.e, b.nLocs = e, nLocs
	e.Localities = make([]Locality, 0, nLocs)
	b.seen = newAddressSet(nAddrs)
	b.allEps = make([]Endpoint, 0, nEps)
	b.arena.sb.Grow(size)
}

// locality starts locality i; keep is false for a locality that is
// dropped (weight 0 or unset, R-17.5). Errors name the field in full.
func (b *endpointsBuilder) locality(i int, region, zone, subZone string, prio, weight uint32) (keep bool, err error) {
	if weight == 0 {
		// a locality with weight 0 or unset is dropped.
		return false, nil
	}
	// Gaps are checked by finish; a priority ≥ the number of localities
	// necessarily leaves one. Checking here bounds the slice.
	if uint64(prio) >= uint64(b.nLocs) {
		return false, invalid(indexed("endpoints", i)+".priority", "priority %d leaves a gap: there are only %d localities", prio, b.nLocs)
	}
	for len(b.priorities) <= int(prio) {
		b.priorities = append(b.priorities, priorityState{})
	}
	ps := &b.priorities[prio]
	if !addWeight(&ps.weightSum, weight) {
		return false, invalid(indexed("endpoints", i)+".load_balancing_weight", "sum of locality weights of priority %d exceeds the uint32 range", prio)
	}
	id := LocalityID{Region: intern(region), Zone: intern(zone), SubZone: intern(subZone)}
	dup := false
	if b.nLocs <= 16 {
		// Few localities, the usual case: a scan costs less than a map.
		for _, o := range b.e.Localities {
			dup = dup || (o.Priority == prio && o.ID == id)
		}
	} else {
		if ps.localities == nil {
			ps.localities = make(map[LocalityID]struct{}, 1)
		}
		_, dup = ps.localities[id]
		ps.localities[id] = struct{}{}
	}
	if dup {
		return false, invalid(indexed("endpoints", i)+".locality", "locality %v appears twice in priority %d", id, prio)
	}
	ps.count++
	b.maxPrio = max(b.maxPrio, int(prio))
	b.loc = Locality{ID: id, Priority: prio, Weight: weight}
	b.firstEp, b.weightSum = len(b.allEps), 0
	return true, nil
}

// endpointWeight returns the weight of endpoint j of the current
// locality, whose load_balancing_weight is w if set. Errors are relative
// to the LocalityLbEndpoints.
func (b *endpointsBuilder) endpointWeight(j int, w uint32, set bool) (uint32, error) {
	weight := uint32(1)
	if set {
		if w == 0 {
			return 0, invalid(indexed("lb_endpoints", j)+".load_balancing_weight", "must be at least 1 when set")
		}
		weight = w
	}
	if !addWeight(&b.weightSum, weight) {
		return 0, invalid(indexed("lb_endpoints", j)+".load_balancing_weight", "sum of endpoint weights of the locality exceeds the uint32 range")
	}
	return weight, nil
}

// endpoint adds endpoint j of the current locality, whose addresses are
// seen.all[first:] (R-17.5: no duplicates). Errors are relative to the
// LocalityLbEndpoints.
func (b *endpointsBuilder) endpoint(j, first int, hostname string, health HealthStatus, weight uint32, hashKey string) error {
	all := b.seen.all
	for i := first; i < len(all); i++ {
		if !b.seen.insert(i) {
			return invalid(indexed("lb_endpoints", j)+".endpoint", "duplicate address %s", all[i])
		}
	}
	b.allEps = append(b.allEps, Endpoint{
		Addresses:    all[first:len(all):len(all)],
		Hostname:     hostname,
		HealthStatus: health,
		Weight:       weight,
		HashKey:      hashKey,
	})
	return nil
}

// endLocality adds the current locality.
func (b *endpointsBuilder) endLocality() {
	if n := len(b.allEps); n > b.firstEp {
		b.loc.Endpoints = b.allEps[b.firstEp:n:n]
	}
	b.e.Localities = append(b.e.Localities, b.loc)
}

// finish checks the priorities: 0..N-1 without gaps, after
// dropping weight-0 localities.
func (b *endpointsBuilder) finish() error {
	for p := 0; p <= b.maxPrio; p++ {
		if b.priorities[p].count == 0 {
			return invalid("endpoints", "priority %d has no locality with a non-zero weight, but priority %d has", p, b.maxPrio)
		}
	}
	return nil
}

// endpointsOfLocality converts the lb_endpoints of the current locality,
// with their proxy addresses when httpConnect; error fields are relative
// to the LocalityLbEndpoints.
func (b *endpointsBuilder) endpointsOfLocality(lbs []*v3endpointpb.LbEndpoint, httpConnect bool) error {
	for j, lb := range lbs {
		w := lb.GetLoadBalancingWeight()
		weight, err := b.endpointWeight(j, w.GetValue(), w != nil)
		if err != nil {
			return err
		}
		ep := lb.GetEndpoint()
		if ep == nil {
			// Stricter than grpc-go, as for socketAddress.
			if _, named := lb.GetHostIdentifier().(*v3endpointpb.LbEndpoint_EndpointName); named {
				return invalid(indexed("lb_endpoints", j)+".endpoint_name", "named endpoints are not supported")
			}
			return invalid(indexed("lb_endpoints", j)+".endpoint", "missing")
		}
		first := len(b.seen.all)
		a, err := socketAddress(ep.GetAddress(), &b.arena)
		if err != nil {
			return withFieldPrefix(indexed("lb_endpoints", j)+".endpoint.address", err)
		}
		b.seen.all = append(b.seen.all, a)
		for k, aa := range ep.GetAdditionalAddresses() {
			a, err := socketAddress(aa.GetAddress(), &b.arena)
			if err != nil {
				return withFieldPrefix(indexed(indexed("lb_endpoints", j)+".endpoint.additional_addresses", k)+".address", err)
			}
			b.seen.all = append(b.seen.all, a)
		}
		if err := b.endpoint(j, first, ep.GetHostname(), HealthStatus(lb.GetHealthStatus()), weight, hashKey(lb)); err != nil {
			return err
		}
		if httpConnect {
			proxy, err := proxyAddress(lb.GetMetadata())
			if err != nil {
				return withFieldPrefix(indexed("lb_endpoints", j)+".metadata", err)
			}
			b.allEps[len(b.allEps)-1].ProxyAddress = proxy
		}
	}
	return nil
}

// addressSeed seeds the hash of addressSet.
var addressSeed = maphash.MakeSeed()

// addressSet finds duplicate addresses in one resource. It costs
// less than a map[string]struct{}: one pointer-free table of indices into
// the slice of addresses the endpoints keep anyway.
type addressSet struct {
	all   []string // the addresses in the order found, some not yet inserted
	slots []uint32 // open addressing, linear probing: 1 + an index into all, 0 when free
	n     int      // the addresses inserted
}

// newAddressSet returns a set with room for n addresses without growing.
func newAddressSet(n int) addressSet {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return addressSet{all: make([]string, 0, n), slots: make([]uint32, size)}
}

// insert adds all[i] to the set, reporting false if an equal address is
// in it already.
func (s *addressSet) insert(i int) bool {
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	a := s.all[i]
	mask := uint64(len(s.slots) - 1)
	for h := maphash.String(addressSeed, a) & mask; ; h = (h + 1) & mask {
		switch j := s.slots[h]; {
		case j == 0:
			s.slots[h] = uint32(i + 1)
			s.n++
			return true
		case s.all[j-1] == a:
			return false
		}
	}
}

// grow doubles the table (at least 8 slots).
func (s *addressSet) grow() {
	old := s.slots
	s.slots = make([]uint32, max(8, 2*len(old)))
	mask := uint64(len(s.slots) - 1)
	for _, j := range old {
		if j == 0 {
			continue
		}
		h := maphash.String(addressSeed, s.all[j-1]) & mask
		for s.slots[h] != 0 {
			h = (h + 1) & mask
		}
		s.slots[h] = j
	}
}

// hashKey returns the A76 hash key of an endpoint, from its "envoy.lb"
// filter metadata. grpc-go converts typed_filter_metadata too, but only
// for types behind environment variables that default to off, so
// metadata makes a resource invalid only with WithHTTPConnect
// (proxyAddress).
func hashKey(lb *v3endpointpb.LbEndpoint) string {
	fm := lb.GetMetadata().GetFilterMetadata()
	if len(fm) == 0 {
		return ""
	}
	return fm["envoy.lb"].GetFields()["hash_key"].GetStringValue()
}

// socketAddress returns "host:port" for an Address that must be a socket
// address with a non-empty host and a numeric port; error fields are
// relative to the Address.
//
// Deliberately stricter than grpc-go, which turns a missing address, an
// empty host or a named port into the address ":0" (or "host:0") and
// accepts it: such an endpoint cannot be reached. gRPC C++ rejects all
// three (and further requires an IP literal, which grpc-go does not).
func socketAddress(a *v3corepb.Address, arena *addressArena) (string, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", invalid("socket_address", "missing")
	}
	if sa.GetAddress() == "" {
		return "", invalid("socket_address.address", "empty")
	}
	if _, ok := sa.GetPortSpecifier().(*v3corepb.SocketAddress_NamedPort); ok {
		return "", invalid("socket_address.named_port", "named ports are not supported")
	}
	return arena.joinHostPort(sa.GetAddress(), sa.GetPortValue()), nil
}

// intern returns s, sharing the memory of an equal string still in use:
// a mesh's locality names repeat in every ClusterLoadAssignment, and each
// decoded resource would otherwise keep its own copies.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

const (
	// proxyAddressKey is the metadata key of an endpoint's HTTP CONNECT
	// proxy (gRFC A86).
	proxyAddressKey = "envoy.http11_proxy_transport_socket.proxy_address"
	// addressTypeURL is the type of the metadata entries gRFC A86
	// validates.
	addressTypeURL = "type.googleapis.com/envoy.config.core.v3.Address"
)

// proxyAddress validates the entries of md's typed_filter_metadata whose
// type is envoy.config.core.v3.Address, whatever their key (gRFC A86: a
// registered metadata type): each must be a socket_address whose address
// is an IPv4 or IPv6 literal and whose port_value is set. It returns the
// one under proxyAddressKey as "host:port", "" when there is none. Error
// fields are relative to the Metadata; keys are checked in sorted order,
// so that the error is the same for the same resource.
func proxyAddress(md *v3corepb.Metadata) (string, error) {
	tfm := md.GetTypedFilterMetadata()
	if len(tfm) == 0 {
		return "", nil
	}
	var proxy string
	for _, key := range slices.Sorted(maps.Keys(tfm)) {
		a := tfm[key]
		if a.GetTypeUrl() != addressTypeURL {
			continue // another type: not gRPC's, ignored (gRFC A86)
		}
		field := fmt.Sprintf("typed_filter_metadata[%q]", key)
		addr := &v3corepb.Address{}
		if err := proto.Unmarshal(a.GetValue(), addr); err != nil {
			return "", invalid(field, "decoding Address: %w", err)
		}
		sa := addr.GetSocketAddress()
		if sa == nil {
			return "", invalid(field+".socket_address", "missing")
		}
		if _, err := netip.ParseAddr(sa.GetAddress()); err != nil {
			return "", invalid(field+".socket_address.address", "%q is not an IPv4 or IPv6 address", sa.GetAddress())
		}
		if sa.GetPortValue() == 0 {
			return "", invalid(field+".socket_address.port_value", "missing or zero")
		}
		if key == proxyAddressKey {
			proxy = net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
		}
	}
	return proxy, nil
}
