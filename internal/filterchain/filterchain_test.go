// SPDX-License-Identifier: Apache-2.0

package filterchain

import (
	"net/netip"
	"testing"

	"github.com/proxyless/xds/resources"
)

// TestMatch checks the filter chain match of a connection
// (gRFC A36, R-26.2): most specific at each step, in Envoy's order,
// without going back.
func TestMatch(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	type conn struct {
		dst, src string
		port     uint16
	}
	tests := []struct {
		name   string
		chains []resources.FilterChainMatch
		unused []int // indexes of chains that never match
		conn   conn
		want   int
	}{
		{
			name:   "a chain without match takes every connection",
			chains: []resources.FilterChainMatch{{}},
			conn:   conn{"10.0.0.1", "10.0.0.2", 1000},
			want:   0,
		},
		{
			name: "the longest destination prefix wins, then any prefix over none",
			chains: []resources.FilterChainMatch{
				{},
				{PrefixRanges: []netip.Prefix{p("10.0.0.0/8")}},
				{PrefixRanges: []netip.Prefix{p("192.168.0.0/16"), p("10.1.0.0/16")}},
				{PrefixRanges: []netip.Prefix{p("0.0.0.0/0")}},
			},
			conn: conn{"10.1.2.3", "10.9.9.9", 1},
			want: 2,
		},
		{
			name: "a wildcard prefix beats no prefix",
			chains: []resources.FilterChainMatch{
				{},
				{PrefixRanges: []netip.Prefix{p("0.0.0.0/0")}},
			},
			conn: conn{"10.1.2.3", "10.9.9.9", 1},
			want: 1,
		},
		{
			name:   "no destination prefix contains the address",
			chains: []resources.FilterChainMatch{{PrefixRanges: []netip.Prefix{p("10.0.0.0/8")}}},
			conn:   conn{"192.168.0.1", "10.9.9.9", 1},
			want:   -1,
		},
		{
			name: "raw_buffer beats an empty transport protocol",
			chains: []resources.FilterChainMatch{
				{},
				{TransportProtocol: "raw_buffer"},
			},
			conn: conn{"10.0.0.1", "10.0.0.2", 1},
			want: 1,
		},
		{
			name: "a loopback source is SAME_IP_OR_LOOPBACK",
			chains: []resources.FilterChainMatch{
				{SourceType: resources.SourceTypeExternal},
				{SourceType: resources.SourceTypeSameIPOrLoopback},
				{},
			},
			conn: conn{"127.0.0.1", "127.0.0.1", 1},
			want: 1,
		},
		{
			name: "the destination address as source is SAME_IP_OR_LOOPBACK",
			chains: []resources.FilterChainMatch{
				{SourceType: resources.SourceTypeExternal},
				{SourceType: resources.SourceTypeSameIPOrLoopback},
			},
			conn: conn{"10.0.0.7", "10.0.0.7", 1},
			want: 1,
		},
		{
			name: "another host is EXTERNAL, and ANY when no chain says EXTERNAL",
			chains: []resources.FilterChainMatch{
				{SourceType: resources.SourceTypeSameIPOrLoopback},
				{SourceType: resources.SourceTypeAny},
			},
			conn: conn{"10.0.0.7", "10.0.0.8", 1},
			want: 1,
		},
		{
			name: "the longest source prefix wins",
			chains: []resources.FilterChainMatch{
				{SourcePrefixRanges: []netip.Prefix{p("10.0.0.0/8")}},
				{SourcePrefixRanges: []netip.Prefix{p("10.0.0.0/24")}},
				{},
			},
			conn: conn{"10.9.0.1", "10.0.0.5", 1},
			want: 1,
		},
		{
			name: "a listed source port beats none",
			chains: []resources.FilterChainMatch{
				{},
				{SourcePorts: []uint32{443, 8443}},
				{SourcePorts: []uint32{80}},
			},
			conn: conn{"10.0.0.1", "10.0.0.2", 8443},
			want: 1,
		},
		{
			name: "no going back: the most specific destination has no chain for the port",
			chains: []resources.FilterChainMatch{
				{PrefixRanges: []netip.Prefix{p("10.0.0.0/24")}, SourcePorts: []uint32{1}},
				{PrefixRanges: []netip.Prefix{p("10.0.0.0/8")}},
			},
			conn: conn{"10.0.0.5", "10.0.0.6", 2},
			want: -1,
		},
		{
			name: "chains that never match are skipped before matching",
			chains: []resources.FilterChainMatch{
				{PrefixRanges: []netip.Prefix{p("10.0.0.0/24")}, ServerNames: []string{"a"}},
				{PrefixRanges: []netip.Prefix{p("10.0.0.0/8")}},
			},
			unused: []int{0},
			conn:   conn{"10.0.0.5", "10.0.0.6", 2},
			want:   1,
		},
		{
			name: "IPv6",
			chains: []resources.FilterChainMatch{
				{PrefixRanges: []netip.Prefix{p("10.0.0.0/8")}},
				{PrefixRanges: []netip.Prefix{p("2001:db8::/32")}, SourcePrefixRanges: []netip.Prefix{p("::1/128")}},
			},
			conn: conn{"2001:db8::5", "::1", 2},
			want: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fcs := make([]resources.FilterChain, len(tc.chains))
			usable := make([]*struct{}, len(tc.chains))
			for i, m := range tc.chains {
				fcs[i].Match = m
				usable[i] = &struct{}{}
			}
			for _, i := range tc.unused {
				usable[i] = nil
			}
			if got := Match(fcs, usable, a(tc.conn.dst), a(tc.conn.src), tc.conn.port); got != tc.want {
				t.Errorf("Match() = %d, want %d", got, tc.want)
			}
		})
	}
}
