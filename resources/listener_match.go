// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"net/netip"
	"slices"
	"strconv"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// SourceType is filter_chain_match.source_type: which connections a
// filter chain matches by where they come from.
type SourceType uint8

const (
	// SourceTypeAny matches every connection (ANY, the default).
	SourceTypeAny SourceType = iota
	// SourceTypeSameIPOrLoopback matches connections whose source address
	// is a loopback address or the connection's destination address
	// (SAME_IP_OR_LOOPBACK).
	SourceTypeSameIPOrLoopback
	// SourceTypeExternal matches the other connections (EXTERNAL).
	SourceTypeExternal
)

// String returns the proto enum name.
func (t SourceType) String() string {
	switch t {
	case SourceTypeAny:
		return "ANY"
	case SourceTypeSameIPOrLoopback:
		return "SAME_IP_OR_LOOPBACK"
	case SourceTypeExternal:
		return "EXTERNAL"
	}
	return "SourceType(" + strconv.Itoa(int(t)) + ")"
}

// FilterChainMatch is a filter chain's filter_chain_match, normalized as
// gRFC A36 says: CIDR ranges are masked, with prefix_len clamped
// to the address family's length (absent is 0) and IPv4-mapped IPv6
// ranges of at least 96 bits turned into IPv4 ranges. An empty list means
// the field is unset (any value matches). The zero value matches every
// connection.
//
// A gRPC server matches a connection on the destination (local) address,
// the source type, the source address and the source port; the fields it
// cannot see (destination_port without use_original_dst, server_names,
// transport protocols other than "raw_buffer", application_protocols,
// direct_source_prefix_ranges) make the chain never match: Unsupported
// names the first one set.
type FilterChainMatch struct {
	// DestinationPort is destination_port; 0 when unset.
	DestinationPort uint32
	// PrefixRanges is prefix_ranges: the destination addresses.
	PrefixRanges []netip.Prefix
	// ServerNames is server_names.
	ServerNames []string
	// TransportProtocol is transport_protocol: "" or "raw_buffer" match a
	// gRPC connection, "raw_buffer" more specifically.
	TransportProtocol string
	// ApplicationProtocols is application_protocols.
	ApplicationProtocols []string
	// DirectSourcePrefixRanges is direct_source_prefix_ranges.
	DirectSourcePrefixRanges []netip.Prefix
	// SourceType is source_type.
	SourceType SourceType
	// SourcePrefixRanges is source_prefix_ranges.
	SourcePrefixRanges []netip.Prefix
	// SourcePorts is source_ports.
	SourcePorts []uint32
}

// Unsupported returns the name of the first field of m that makes a gRPC
// server never match it (gRFC A36, R-26.2), "" when it can match.
// direct_source_prefix_ranges, which A36 predates, is one: grpc-go
// ignores it, which would let a chain meant for some sources serve every
// source.
func (m *FilterChainMatch) Unsupported() string {
	switch {
	case m.DestinationPort != 0:
		return "destination_port"
	case len(m.ServerNames) != 0:
		return "server_names"
	case m.TransportProtocol != "" && m.TransportProtocol != "raw_buffer":
		return "transport_protocol"
	case len(m.ApplicationProtocols) != 0:
		return "application_protocols"
	case len(m.DirectSourcePrefixRanges) != 0:
		return "direct_source_prefix_ranges"
	}
	return ""
}

// overlaps reports whether m and o have a matcher in common once each is
// replaced by the Cartesian product of its fields (gRFC A36): then the
// most specific match of some connection would not be unique, and the
// Listener is invalid. Fields that never match count too, as A36 says.
func (m *FilterChainMatch) overlaps(o *FilterChainMatch) bool {
	return m.DestinationPort == o.DestinationPort &&
		m.TransportProtocol == o.TransportProtocol &&
		m.SourceType == o.SourceType &&
		intersect(m.PrefixRanges, o.PrefixRanges) &&
		intersect(m.SourcePrefixRanges, o.SourcePrefixRanges) &&
		intersect(m.SourcePorts, o.SourcePorts) &&
		intersect(m.ServerNames, o.ServerNames) &&
		intersect(m.ApplicationProtocols, o.ApplicationProtocols) &&
		intersect(m.DirectSourcePrefixRanges, o.DirectSourcePrefixRanges)
}

// intersect reports whether the value sets a and b of one field share a
// value, an empty list standing for the single value "unset".
func intersect[T comparable](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	for _, v := range a {
		if slices.Contains(b, v) {
			return true
		}
	}
	return false
}

// filterChainMatchFromProto normalizes m into out; error fields are
// relative to m.
func filterChainMatchFromProto(m *v3listenerpb.FilterChainMatch, out *FilterChainMatch) error {
	out.DestinationPort = m.GetDestinationPort().GetValue()
	var err error
	if out.PrefixRanges, err = prefixRanges("prefix_ranges", m.GetPrefixRanges()); err != nil {
		return err
	}
	out.ServerNames = m.GetServerNames()
	out.TransportProtocol = m.GetTransportProtocol()
	out.ApplicationProtocols = m.GetApplicationProtocols()
	if out.DirectSourcePrefixRanges, err = prefixRanges("direct_source_prefix_ranges", m.GetDirectSourcePrefixRanges()); err != nil {
		return err
	}
	switch st := m.GetSourceType(); st {
	case v3listenerpb.FilterChainMatch_ANY:
		out.SourceType = SourceTypeAny
	case v3listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK:
		out.SourceType = SourceTypeSameIPOrLoopback
	case v3listenerpb.FilterChainMatch_EXTERNAL:
		out.SourceType = SourceTypeExternal
	default:
		return invalid("source_type", "unknown value %d", int32(st))
	}
	if out.SourcePrefixRanges, err = prefixRanges("source_prefix_ranges", m.GetSourcePrefixRanges()); err != nil {
		return err
	}
	out.SourcePorts = m.GetSourcePorts()
	return nil
}

// prefixRanges normalizes the CIDR ranges rs (gRFC A36): address_prefix
// must be an IP address; prefix_len is clamped to the family's length
// (absent is 0); the address is masked; an IPv4-mapped IPv6 range of at
// least 96 bits becomes the IPv4 range it maps, since a server sees the
// addresses of IPv4 connections on a dual-stack socket as IPv4. Error
// fields are relative to the field's parent.
func prefixRanges(field string, rs []*v3corepb.CidrRange) ([]netip.Prefix, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := make([]netip.Prefix, len(rs))
	for i, r := range rs {
		addr, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil {
			return nil, invalid(indexed(field, i)+".address_prefix", "%q is not an IP address", r.GetAddressPrefix())
		}
		addr = addr.WithZone("")
		bits := int(min(r.GetPrefixLen().GetValue(), uint32(addr.BitLen())))
		if addr.Is4In6() && bits >= 96 {
			addr, bits = addr.Unmap(), bits-96
		}
		out[i] = netip.PrefixFrom(addr, bits).Masked()
	}
	return out, nil
}
