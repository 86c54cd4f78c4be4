// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	v1udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3wrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	v3leastrequestpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	v3pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	v3ringhashpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	v3wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
)

const (
	defaultRingHashMinSize = 1024
	defaultRingHashMaxSize = 8 * 1024 * 1024
	ringHashSizeLimit      = 8 * 1024 * 1024 // both bounds, gRFC A42

	defaultLeastRequestChoiceCount = 2 // gRFC A48

	// maxLBPolicyDepth is the nesting gRFC A52 allows in
	// load_balancing_policy: "Configurations that require more than 16
	// levels of recursion are considered invalid".
	maxLBPolicyDepth = 16
)

// LBPolicy is the load balancing policy of a cluster, from
// load_balancing_policy when set (gRFC A52), else from lb_policy and its
// config. The fields of the other kinds are zero.
type LBPolicy struct {
	// Kind is the endpoint picking policy.
	Kind LBPolicyKind
	// WeightedByLocality reports whether a locality is first picked by
	// locality weight, and Kind applied to the endpoints of that locality
	// (gRPC's xds_wrr_locality policy). It is true for lb_policy
	// ROUND_ROBIN (gRPC runs it as xds_wrr_locality with round_robin
	// inside), and for a load_balancing_policy WrrLocality, whose
	// endpoint_picking_policy gives Kind.
	WeightedByLocality bool
	// PickFirstShuffleAddressList is shuffle_address_list of
	// LBPolicyPickFirst (gRFC A62).
	PickFirstShuffleAddressList bool
	// HealthyPanicThreshold is the Cluster's
	// common_lb_config.healthy_panic_threshold in whole percent, for
	// every kind, for an HTTP data plane (R-17.7, Envoy's panic
	// threshold): 50 when unset, 0 disables panic. gRPC ignores it.
	HealthyPanicThreshold uint8
	// LeastRequestChoiceCount is the number of endpoints LBPolicyLeastRequest
	// compares, ≥ 2, default 2 (gRFC A48). gRPC uses at most 10.
	LeastRequestChoiceCount uint32
	// RingHashMinSize and RingHashMaxSize bound the ring size of
	// LBPolicyRingHash, in entries: 1 ≤ min ≤ max ≤ 8,388,608. Unset or
	// zero values default to 1024 and 8,388,608 (gRFC A42). gRPC caps
	// both at GRPC_RING_HASH_CAP (default 4096) when it builds the ring.
	RingHashMinSize, RingHashMaxSize uint64
	// WeightedRoundRobin is the config of LBPolicyWeightedRoundRobin
	// (gRFC A58); nil for other kinds.
	WeightedRoundRobin *WeightedRoundRobinConfig
	// Custom is the balancer of LBPolicyCustom (gRFC A52); nil for other
	// kinds.
	Custom *CustomLBPolicy
}

// CustomLBPolicy is a load balancing policy of gRPC's balancer registry,
// named by a TypedStruct in load_balancing_policy (gRFC A52).
type CustomLBPolicy struct {
	// Name is the name of the gRPC balancer: the last segment of the
	// type_url of the TypedStruct, a balancer registered with gRPC in
	// this program.
	Name string
	// Config is the balancer's config: the TypedStruct's value as a JSON
	// object ("{}" when unset), for its ParseConfig.
	Config string
}

// WeightedRoundRobinConfig is the config of the client-side weighted
// round robin policy (gRFC A58), with its defaults applied.
type WeightedRoundRobinConfig struct {
	// EnableOOBLoadReport is enable_oob_load_report; false by default.
	EnableOOBLoadReport bool
	// OOBReportingPeriod is oob_reporting_period; 10s by default.
	OOBReportingPeriod time.Duration
	// BlackoutPeriod is blackout_period; 10s by default.
	BlackoutPeriod time.Duration
	// WeightExpirationPeriod is weight_expiration_period; 3m by default.
	WeightExpirationPeriod time.Duration
	// WeightUpdatePeriod is weight_update_period; 1s by default. gRPC
	// raises values below 100ms to 100ms.
	WeightUpdatePeriod time.Duration
	// ErrorUtilizationPenalty is error_utilization_penalty, ≥ 0; 1 by
	// default.
	ErrorUtilizationPenalty float32
}

// LBPolicyKind is a load balancing policy. The zero value is not a valid
// kind; Decode never returns it.
type LBPolicyKind uint8

// The supported load balancing policies.
const (
	// LBPolicyRoundRobin is round robin: lb_policy ROUND_ROBIN or
	// load_balancing_policy RoundRobin.
	LBPolicyRoundRobin LBPolicyKind = iota + 1
	// LBPolicyRingHash is ring hash with the XX_HASH function (gRFC A42).
	LBPolicyRingHash
	// LBPolicyLeastRequest is least request (gRFC A48).
	LBPolicyLeastRequest
	// LBPolicyPickFirst is pick first (load_balancing_policy only).
	LBPolicyPickFirst
	// LBPolicyWeightedRoundRobin is client-side weighted round robin
	// (load_balancing_policy only, gRFC A58).
	LBPolicyWeightedRoundRobin
	// LBPolicyCustom is a balancer registered with gRPC, named by an
	// xds.type.v3.TypedStruct or udpa.type.v1.TypedStruct in
	// load_balancing_policy (gRFC A52): see LBPolicy.Custom.
	LBPolicyCustom
)

// String returns the policy's name, for example "ROUND_ROBIN".
func (k LBPolicyKind) String() string {
	switch k {
	case LBPolicyRoundRobin:
		return "ROUND_ROBIN"
	case LBPolicyRingHash:
		return "RING_HASH"
	case LBPolicyLeastRequest:
		return "LEAST_REQUEST"
	case LBPolicyPickFirst:
		return "PICK_FIRST"
	case LBPolicyWeightedRoundRobin:
		return "WEIGHTED_ROUND_ROBIN"
	case LBPolicyCustom:
		return "CUSTOM"
	default:
		return fmt.Sprintf("LBPolicyKind(%d)", uint8(k))
	}
}

// legacyLBPolicy reads lb_policy and its config (R-17.4, gRFC A42, A48).
// It is checked even when load_balancing_policy is set, as grpc-go does.
func legacyLBPolicy(c *v3clusterpb.Cluster) (LBPolicy, error) {
	switch c.GetLbPolicy() {
	case v3clusterpb.Cluster_ROUND_ROBIN:
		return LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true}, nil
	case v3clusterpb.Cluster_RING_HASH:
		rh := c.GetRingHashLbConfig()
		if hf := rh.GetHashFunction(); hf != v3clusterpb.Cluster_RingHashLbConfig_XX_HASH {
			return LBPolicy{}, invalid("ring_hash_lb_config.hash_function", "unsupported hash function %v, want XX_HASH", hf)
		}
		p, err := ringHashPolicy(rh.GetMinimumRingSize().GetValue(), rh.GetMaximumRingSize().GetValue())
		return p, withFieldPrefix("ring_hash_lb_config", err)
	case v3clusterpb.Cluster_LEAST_REQUEST:
		p := LBPolicy{Kind: LBPolicyLeastRequest, LeastRequestChoiceCount: defaultLeastRequestChoiceCount}
		if cc := c.GetLeastRequestLbConfig().GetChoiceCount(); cc != nil {
			p.LeastRequestChoiceCount = cc.GetValue()
		}
		if p.LeastRequestChoiceCount < 2 {
			return LBPolicy{}, invalid("least_request_lb_config.choice_count", "%d, must be at least 2", p.LeastRequestChoiceCount)
		}
		return p, nil
	default:
		return LBPolicy{}, invalid("lb_policy", "unsupported policy %v", c.GetLbPolicy())
	}
}

// ringHashPolicy applies gRPC's ring size defaults and bounds; zero means
// unset. Error fields are relative to the ring hash config.
//
// grpc-go checks the bounds of lb_policy RING_HASH only when the LB
// policy is built, so it accepts the Cluster and fails the channel; gRPC
// C++ and Java NACK it, as this package does, so that the error reaches
// the management server.
func ringHashPolicy(minSize, maxSize uint64) (LBPolicy, error) {
	p := LBPolicy{Kind: LBPolicyRingHash, RingHashMinSize: defaultRingHashMinSize, RingHashMaxSize: defaultRingHashMaxSize}
	if minSize != 0 {
		p.RingHashMinSize = minSize
	}
	if maxSize != 0 {
		p.RingHashMaxSize = maxSize
	}
	switch {
	case p.RingHashMinSize > ringHashSizeLimit:
		return LBPolicy{}, invalid("minimum_ring_size", "%d exceeds the limit %d", p.RingHashMinSize, ringHashSizeLimit)
	case p.RingHashMaxSize > ringHashSizeLimit:
		return LBPolicy{}, invalid("maximum_ring_size", "%d exceeds the limit %d", p.RingHashMaxSize, ringHashSizeLimit)
	case p.RingHashMinSize > p.RingHashMaxSize:
		return LBPolicy{}, invalid("", "minimum_ring_size %d is greater than maximum_ring_size %d", p.RingHashMinSize, p.RingHashMaxSize)
	}
	return p, nil
}

// The type URLs of the load_balancing_policy extensions gRPC supports
// (gRFC A52 and the policies added since).
const (
	lbRoundRobinTypeURL   = "type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"
	lbRingHashTypeURL     = "type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash"
	lbLeastRequestTypeURL = "type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest"
	lbPickFirstTypeURL    = "type.googleapis.com/envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst"
	lbWRRTypeURL          = "type.googleapis.com/envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin"
	lbWRRLocalityTypeURL  = "type.googleapis.com/envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality"
	xdsTypedStructTypeURL = "type.googleapis.com/xds.type.v3.TypedStruct"
	udpaTypedStructURL    = "type.googleapis.com/udpa.type.v1.TypedStruct"
)

// lbEntry is one policy of a LoadBalancingPolicy: its typed_config.
type lbEntry struct {
	typeURL string
	value   []byte
}

// lbList is a LoadBalancingPolicy, decoded (proto) or serialized (wire,
// the endpoint_picking_policy fields of a WrrLocality). Its policies are
// visited in order without being collected, so that the usual case
// allocates nothing.
type lbList struct {
	proto *v3clusterpb.LoadBalancingPolicy
	wire  []byte
}

var (
	wrrLocalityDesc = (*v3wrrlocalitypb.WrrLocality)(nil).ProtoReflect().Descriptor()
	lbPolicyDesc    = (*v3clusterpb.LoadBalancingPolicy)(nil).ProtoReflect().Descriptor()
	lbPolicyPolDesc = (*v3clusterpb.LoadBalancingPolicy_Policy)(nil).ProtoReflect().Descriptor()

	tecDesc = (*v3corepb.TypedExtensionConfig)(nil).ProtoReflect().Descriptor()

	wrrLocalityPlan = sync.OnceValue(func() *wirePlan { return planFor(wrrLocalityDesc) })
	lbPolicyPlan    = sync.OnceValue(func() *wirePlan { return planFor(lbPolicyDesc) })
	lbPolicyPolPlan = sync.OnceValue(func() *wirePlan { return planFor(lbPolicyPolDesc) })
	tecPlan         = sync.OnceValue(func() *wirePlan { return planFor(tecDesc) })

	wrrLocalityChildField = fieldNumber(wrrLocalityDesc, "endpoint_picking_policy")
	lbPoliciesField       = fieldNumber(lbPolicyDesc, "policies")
	lbPolicyTECField      = fieldNumber(lbPolicyPolDesc, "typed_extension_config")
	tecTypedConfigField   = protowire.Number(2) // TypedExtensionConfig.typed_config
)

// each calls f with the policies in order until f returns true. It
// returns false, having stopped, when a serialized list is invalid or
// repeats a singular message field, which proto.Unmarshal would merge:
// the caller then uses the proto path, which reports the error of
// invalid bytes. (Repeated endpoint_picking_policy fields are merged by
// appending their policies, which is what visiting them in order does.)
//
// A serialized list is checked, as wireCheck does, in the same pass that
// reads it, to its end even after f returned true: f may have acted on a
// policy of bytes that turn out invalid, and the caller must then drop
// what f did.
func (l lbList) each(f func(i int, e lbEntry) bool) bool {
	if l.wire == nil {
		for i, p := range l.proto.GetPolicies() {
			tc := p.GetTypedExtensionConfig().GetTypedConfig()
			if f(i, lbEntry{typeURL: tc.GetTypeUrl(), value: tc.GetValue()}) {
				return true
			}
		}
		return true
	}
	wp := wrrLocalityPlan()
	if wp.unsupported {
		return false
	}
	depth := wireRecursionLimit - 1 // the WrrLocality is unmarshalled on its own
	i, done := 0, false
	it := wireIter{b: l.wire}
	for it.next() {
		if !it.bytesField(wrrLocalityChildField) {
			if !wp.checkIter(&it, depth) {
				return false
			}
			continue
		}
		lp := lbPolicyPlan()
		pit := wireIter{b: it.val}
		for pit.next() {
			if !pit.bytesField(lbPoliciesField) {
				if !lp.checkIter(&pit, depth-1) {
					return false
				}
				continue
			}
			e, ok := lbEntryFromWire(pit.val, depth-2)
			if !ok {
				return false
			}
			if !done {
				done = f(i, e)
			}
			i++
		}
		if pit.bad {
			return false
		}
	}
	return !it.bad
}

// lbEntryFromWire checks a serialized LoadBalancingPolicy.Policy, checked
// at depth, and returns its typed_extension_config.typed_config; ok is
// false when it is invalid or repeats either message.
func lbEntryFromWire(b []byte, depth int) (e lbEntry, ok bool) {
	tec, n, ok := checkedSingleField(b, lbPolicyPolPlan(), lbPolicyTECField, depth)
	if !ok || n > 1 {
		return e, false
	}
	tc, n, ok := checkedSingleField(tec, tecPlan(), tecTypedConfigField, depth-1)
	if !ok || n > 1 {
		return e, false
	}
	typeURL, value, ok := anyFields(tc, knownLBTypeURL)
	return lbEntry{typeURL: typeURL, value: value}, ok
}

// knownLBTypeURL is the known func of anyFields for load balancing
// policies: the types this package knows.
func knownLBTypeURL(b []byte) string {
	switch string(b) {
	case lbRoundRobinTypeURL:
		return lbRoundRobinTypeURL
	case lbRingHashTypeURL:
		return lbRingHashTypeURL
	case lbLeastRequestTypeURL:
		return lbLeastRequestTypeURL
	case lbPickFirstTypeURL:
		return lbPickFirstTypeURL
	case lbWRRTypeURL:
		return lbWRRTypeURL
	case lbWRRLocalityTypeURL:
		return lbWRRLocalityTypeURL
	}
	return ""
}

// wrrLocalityPolicy converts a serialized WrrLocality met at depth; error
// fields are relative to it. Its endpoint_picking_policy is read from the
// wire by lbList.each, which checks the bytes as it reads them (the usual
// child is a RoundRobin, which needs nothing more); bytes that are
// invalid, or that proto.Unmarshal would merge, are decoded instead.
func wrrLocalityPolicy(b []byte, depth int) (LBPolicy, error) {
	p, complete, err := lbPolicyFromList(lbList{wire: b}, depth+1)
	if !complete {
		m := &v3wrrlocalitypb.WrrLocality{}
		if err := unmarshalLBConfig(b, m); err != nil {
			return LBPolicy{}, err
		}
		p, err = lbPolicyFromProto(lbList{proto: m.GetEndpointPickingPolicy()}, depth+1)
	}
	if err != nil {
		return LBPolicy{}, withFieldPrefix("endpoint_picking_policy", err)
	}
	p.WeightedByLocality = true
	return p, nil
}

// lbPolicyFromProto converts load_balancing_policy (gRFC A52): the first
// policy of the list gRPC supports is used, unsupported ones are skipped,
// and an error in a supported one, no supported policy, or nesting deeper
// than 16 levels is an error. depth is the nesting level, 0 at the top.
// Error fields are relative to the LoadBalancingPolicy.
//
// A custom policy in a TypedStruct (xds.type.v3 or udpa.type.v1) is
// supported when a balancer of its name (the last segment of the
// TypedStruct's type_url) is registered with gRPC in this program
// (balancer.Get), as in grpc-go: LBPolicyCustom, with the TypedStruct's
// value as its JSON config; otherwise it is skipped (after checking that
// the TypedStruct decodes).
func lbPolicyFromProto(l lbList, depth int) (LBPolicy, error) {
	p, _, err := lbPolicyFromList(l, depth) // complete: l is decoded
	return p, err
}

// lbPolicyFromList is lbPolicyFromProto for a decoded or serialized list;
// complete is false, and the result meaningless, when a serialized list
// must be decoded (see lbList.each).
func lbPolicyFromList(l lbList, depth int) (p LBPolicy, complete bool, err error) {
	if depth >= maxLBPolicyDepth {
		// Invalid bytes are reported as such, before the depth.
		if !l.each(func(int, lbEntry) bool { return true }) {
			return LBPolicy{}, false, nil
		}
		return LBPolicy{}, true, invalid("", "nested more than %d levels deep", maxLBPolicyDepth)
	}
	var found bool
	complete = l.each(func(i int, e lbEntry) bool {
		p, found, err = lbPolicyEntry(e, depth)
		if err != nil {
			err = withFieldPrefix(indexed("policies", i)+".typed_extension_config.typed_config", err)
		}
		return found || err != nil
	})
	switch {
	case !complete:
		return LBPolicy{}, false, nil
	case err != nil:
		return LBPolicy{}, true, err
	case found:
		return p, true, nil
	}
	return LBPolicy{}, true, invalid("policies", "no supported policy (gRPC supports round_robin, ring_hash, least_request, pick_first, client_side_weighted_round_robin, wrr_locality, and a TypedStruct naming a balancer registered with gRPC)")
}

// lbEntryMemo is the last supported policy with a config that
// lbPolicyEntry converted without error: a control plane usually sends
// every cluster the same policy, byte for byte, and the conversion of
// equal bytes at equal depth gives an equal, immutable LBPolicy. Only
// successes are kept, so errors are always computed afresh.
type lbEntryMemo struct {
	typeURL string
	value   string // a copy: the caller's bytes may change later
	depth   int
	p       LBPolicy
}

// lastLBEntry is the memo of lbPolicyEntry, shared by all decoders.
var lastLBEntry atomic.Pointer[lbEntryMemo]

// lbPolicyEntry converts one policy; found is false for a policy gRPC
// does not support, which is skipped. Error fields are relative to the
// policy's typed_config.
func lbPolicyEntry(e lbEntry, depth int) (p LBPolicy, found bool, err error) {
	if e.typeURL == lbRoundRobinTypeURL {
		// As grpc-go, the RoundRobin config is not decoded: gRPC's round
		// robin has no settings.
		return LBPolicy{Kind: LBPolicyRoundRobin}, true, nil
	}
	if m := lastLBEntry.Load(); m != nil && m.depth == depth && m.typeURL == e.typeURL && m.value == string(e.value) {
		return m.p, true, nil
	}
	p, found, err = convertLBEntry(e, depth)
	if found && err == nil {
		lastLBEntry.Store(&lbEntryMemo{typeURL: e.typeURL, value: string(e.value), depth: depth, p: p})
	}
	return p, found, err
}

// convertLBEntry is lbPolicyEntry without the memo, for a policy other
// than round robin.
func convertLBEntry(e lbEntry, depth int) (p LBPolicy, found bool, err error) {
	switch e.typeURL {
	case lbRingHashTypeURL:
		m := &v3ringhashpb.RingHash{}
		if err = unmarshalLBConfig(e.value, m); err != nil {
			return LBPolicy{}, true, err
		}
		if m.GetHashFunction() != v3ringhashpb.RingHash_XX_HASH {
			// grpc-go wants XX_HASH exactly, so an unset (DEFAULT_HASH)
			// hash function is an error too.
			return LBPolicy{}, true, invalid("hash_function", "unsupported hash function %v, want XX_HASH", m.GetHashFunction())
		}
		p, err = ringHashPolicy(m.GetMinimumRingSize().GetValue(), m.GetMaximumRingSize().GetValue())
		return p, true, err
	case lbLeastRequestTypeURL:
		m := &v3leastrequestpb.LeastRequest{}
		if err = unmarshalLBConfig(e.value, m); err != nil {
			return LBPolicy{}, true, err
		}
		p = LBPolicy{Kind: LBPolicyLeastRequest, LeastRequestChoiceCount: defaultLeastRequestChoiceCount}
		if cc := m.GetChoiceCount(); cc != nil {
			p.LeastRequestChoiceCount = cc.GetValue()
		}
		if p.LeastRequestChoiceCount < 2 {
			return LBPolicy{}, true, invalid("choice_count", "%d, must be at least 2", p.LeastRequestChoiceCount)
		}
		return p, true, nil
	case lbPickFirstTypeURL:
		m := &v3pickfirstpb.PickFirst{}
		if err = unmarshalLBConfig(e.value, m); err != nil {
			return LBPolicy{}, true, err
		}
		return LBPolicy{Kind: LBPolicyPickFirst, PickFirstShuffleAddressList: m.GetShuffleAddressList()}, true, nil
	case lbWRRTypeURL:
		p, err = wrrPolicy(e.value)
		return p, true, err
	case lbWRRLocalityTypeURL:
		p, err = wrrLocalityPolicy(e.value, depth)
		return p, true, err
	case xdsTypedStructTypeURL:
		ts := &v3xdstypepb.TypedStruct{}
		if err = unmarshalLBConfig(e.value, ts); err != nil {
			return LBPolicy{}, false, err
		}
		return customPolicy(ts.GetTypeUrl(), ts.GetValue())
	case udpaTypedStructURL:
		ts := &v1udpatypepb.TypedStruct{}
		if err = unmarshalLBConfig(e.value, ts); err != nil {
			return LBPolicy{}, false, err
		}
		return customPolicy(ts.GetTypeUrl(), ts.GetValue())
	default:
		// "Any entry not in the above list is unsupported and will be
		// skipped." (A52)
		return LBPolicy{}, false, nil
	}
}

// customPolicy returns the custom policy (gRFC A52) of a TypedStruct of
// type typeURL and value v: found when gRPC's balancer registry has the
// last segment of typeURL. Error fields are relative to the TypedStruct.
func customPolicy(typeURL string, v *structpb.Struct) (LBPolicy, bool, error) {
	name := typeURL[strings.LastIndexByte(typeURL, '/')+1:]
	if name == "" || balancer.Get(name) == nil {
		return LBPolicy{}, false, nil // "skipped", A52
	}
	// encoding/json of the Struct's map: stable bytes (sorted keys), unlike
	// protojson, so that equal configs compare equal.
	js, err := json.Marshal(v.AsMap())
	if err != nil {
		return LBPolicy{}, true, invalid("value", "encoding the config of %q in JSON: %w", name, err)
	}
	return LBPolicy{Kind: LBPolicyCustom, Custom: &CustomLBPolicy{Name: name, Config: string(js)}}, true, nil
}

func unmarshalLBConfig(b []byte, m proto.Message) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return invalid("", "decoding %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return nil
}

// wrrPolicy converts a ClientSideWeightedRoundRobin config with the
// defaults of gRFC A58; error fields are relative to it.
func wrrPolicy(b []byte) (LBPolicy, error) {
	m := &v3wrrpb.ClientSideWeightedRoundRobin{}
	if err := unmarshalLBConfig(b, m); err != nil {
		return LBPolicy{}, err
	}
	c := &WeightedRoundRobinConfig{
		EnableOOBLoadReport:     m.GetEnableOobLoadReport().GetValue(),
		OOBReportingPeriod:      10 * time.Second,
		BlackoutPeriod:          10 * time.Second,
		WeightExpirationPeriod:  3 * time.Minute,
		WeightUpdatePeriod:      time.Second,
		ErrorUtilizationPenalty: 1,
	}
	if err := optDuration("oob_reporting_period", m.GetOobReportingPeriod(), &c.OOBReportingPeriod); err != nil {
		return LBPolicy{}, err
	}
	if err := optDuration("blackout_period", m.GetBlackoutPeriod(), &c.BlackoutPeriod); err != nil {
		return LBPolicy{}, err
	}
	if err := optDuration("weight_expiration_period", m.GetWeightExpirationPeriod(), &c.WeightExpirationPeriod); err != nil {
		return LBPolicy{}, err
	}
	if err := optDuration("weight_update_period", m.GetWeightUpdatePeriod(), &c.WeightUpdatePeriod); err != nil {
		return LBPolicy{}, err
	}
	if p := m.GetErrorUtilizationPenalty(); p != nil {
		// grpc-go fails to encode NaN and infinities into its JSON config,
		// so they are errors there too.
		if v := float64(p.GetValue()); v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return LBPolicy{}, invalid("error_utilization_penalty", "%v, must be a finite number ≥ 0", p.GetValue())
		}
		c.ErrorUtilizationPenalty = p.GetValue()
	}
	return LBPolicy{Kind: LBPolicyWeightedRoundRobin, WeightedRoundRobin: c}, nil
}
