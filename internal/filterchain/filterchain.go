// SPDX-License-Identifier: Apache-2.0

// Package filterchain chooses the filter chain of a connection to an
// xDS-enabled server (gRFC A36, R-26.2): the most specific match of the
// Listener's filter chains, in Envoy's order, restricted to what a server
// without listener filters sees. The gRPC server (package server) and the
// net/http server (package xdshttp) share it.
package filterchain

import (
	"net"
	"net/netip"
	"slices"
	"strconv"

	"github.com/proxyless/xds/resources"
)

// Match returns the index of the filter chain of fcs that
// matches a connection from src:srcPort to dst most specifically, -1 when
// none does (the default chain's turn). Only chains with a non-nil entry
// in usable take part (the others never match). It follows Envoy's
// filter chain matching, restricted to what a gRPC server sees (gRFC
// A36): at each step, of the chains left, only those that match most
// specifically stay, and an empty step ends the match without going back:
//
//  1. destination IP: the longest prefix_ranges entry containing dst; a
//     chain without prefix_ranges is less specific than any prefix;
//  2. transport_protocol: "raw_buffer" before "";
//  3. source_type: SAME_IP_OR_LOOPBACK (src is a loopback address or
//     dst) or EXTERNAL (otherwise) before ANY;
//  4. source IP: the longest source_prefix_ranges entry containing src,
//     as in step 1;
//  5. source port: a chain listing srcPort before one without
//     source_ports.
//
// Listener validation makes the result unique; were it not, the
// first chain would win.
func Match[T any](fcs []resources.FilterChain, usable []*T, dst, src netip.Addr, srcPort uint16) int {
	cands := make([]int, 0, len(fcs))
	for i := range fcs {
		if usable[i] != nil {
			cands = append(cands, i)
		}
	}
	cands = longestPrefix(cands, dst, func(i int) []netip.Prefix { return fcs[i].Match.PrefixRanges })
	cands = mostSpecific(cands, func(i int) bool { return fcs[i].Match.TransportProtocol == "raw_buffer" })
	st := resources.SourceTypeExternal
	if src.IsLoopback() || src == dst {
		st = resources.SourceTypeSameIPOrLoopback
	}
	cands = slices.DeleteFunc(cands, func(i int) bool {
		t := fcs[i].Match.SourceType
		return t != resources.SourceTypeAny && t != st
	})
	cands = mostSpecific(cands, func(i int) bool { return fcs[i].Match.SourceType == st })
	cands = longestPrefix(cands, src, func(i int) []netip.Prefix { return fcs[i].Match.SourcePrefixRanges })
	cands = slices.DeleteFunc(cands, func(i int) bool {
		ports := fcs[i].Match.SourcePorts
		return len(ports) > 0 && !slices.Contains(ports, uint32(srcPort))
	})
	cands = mostSpecific(cands, func(i int) bool { return len(fcs[i].Match.SourcePorts) > 0 })
	if len(cands) == 0 {
		return -1
	}
	return cands[0]
}

// longestPrefix keeps the candidates whose prefixes (by prefixes) contain
// addr with the most bits; a candidate without prefixes matches any
// address with fewer bits than any prefix (-1).
func longestPrefix(cands []int, addr netip.Addr, prefixes func(int) []netip.Prefix) []int {
	best := -2
	score := make([]int, len(cands))
	for k, i := range cands {
		ps := prefixes(i)
		score[k] = -2
		if len(ps) == 0 {
			score[k] = -1
		}
		for _, p := range ps {
			if p.Contains(addr) {
				score[k] = max(score[k], p.Bits())
			}
		}
		best = max(best, score[k])
	}
	out := cands[:0]
	for k, i := range cands {
		if score[k] == best && best > -2 {
			out = append(out, i)
		}
	}
	return out
}

// mostSpecific keeps the candidates for which specific holds, if any.
func mostSpecific(cands []int, specific func(int) bool) []int {
	if slices.ContainsFunc(cands, specific) {
		return slices.DeleteFunc(cands, func(i int) bool { return !specific(i) })
	}
	return cands
}

// Label names filter chain i of a Listener in messages (-1: the default
// chain): `filter chain "name"`, `filter chain 2` when it has no name.
func Label(fc *resources.FilterChain, i int) string {
	switch {
	case i < 0:
		return "default filter chain " + strconv.Quote(fc.Name)
	case fc.Name == "":
		return "filter chain " + strconv.Itoa(i)
	}
	return "filter chain " + strconv.Quote(fc.Name)
}

// AddrPort returns the IP and port of a connection's address a, an IPv4
// address mapped in IPv6 unmapped; false when a has none (not an IP
// address).
func AddrPort(a net.Addr) (netip.AddrPort, bool) {
	if tcp, ok := a.(*net.TCPAddr); ok {
		ap := tcp.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	if a == nil {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}
