// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// TestDurationParts checks that the allocation-free duration conversion
// agrees with durationpb's, errors included.
func TestDurationParts(t *testing.T) {
	for _, d := range []*durationpb.Duration{
		{}, {Seconds: 1, Nanos: 5}, {Nanos: 999_999_999}, {Seconds: -1}, {Nanos: -1}, {Seconds: 1, Nanos: -1},
		{Nanos: 1e9}, {Seconds: math.MaxInt64 / int64(time.Second)}, {Seconds: 315576000000}, {Seconds: 315576000001},
	} {
		want, wantErr := duration("f", d)
		got, gotErr := durationPartsOf(d).duration("f")
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("duration(%v) = %v, %v; durationpb gives %v, %v", d, got, gotErr, want, wantErr)
		}
	}
}

// TestWireCheck checks wireCheck against proto.Unmarshal on crafted
// inputs: unknown fields, wire type mismatches, packed fields, maps,
// invalid UTF-8 and field numbers out of range.
func TestWireCheck(t *testing.T) {
	md := (*v3clusterpb.Cluster)(nil).ProtoReflect().Descriptor()
	tag := func(b []byte, n protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(b, n, typ) }
	valid := mustAny(t, edsCluster("c", "s")).GetValue()
	meta, err := proto.Marshal(&v3corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"a": {}}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"valid":                    valid,
		"empty":                    nil,
		"unknown varint":           protowire.AppendVarint(tag(nil, 9999, protowire.VarintType), 1),
		"name as varint":           protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1),
		"name invalid UTF-8":       protowire.AppendBytes(tag(nil, 1, protowire.BytesType), []byte{0xff}),
		"truncated length":         protowire.AppendVarint(tag(nil, 1, protowire.BytesType), 10),
		"field number 0":           {0x00, 0x01},
		"field number too large":   protowire.AppendVarint(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), 1),
		"end group":                tag(nil, 5, protowire.EndGroupType),
		"unknown group":            tag(tag(nil, 9999, protowire.StartGroupType), 9999, protowire.EndGroupType),
		"unterminated group":       tag(nil, 9999, protowire.StartGroupType),
		"metadata map":             protowire.AppendBytes(tag(nil, 25, protowire.BytesType), meta),
		"map entry invalid key":    protowire.AppendBytes(tag(nil, 25, protowire.BytesType), protowire.AppendBytes(tag(nil, 1, protowire.BytesType), protowire.AppendBytes(tag(nil, 1, protowire.BytesType), []byte{0xff}))),
		"packed repeated enum":     protowire.AppendBytes(tag(nil, 1000, protowire.BytesType), []byte{1, 2, 3}),
		"nested message malformed": protowire.AppendBytes(tag(nil, 3, protowire.BytesType), []byte{0x0a, 0x05}),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			werr := wireCheck(b, md)
			perr := proto.Unmarshal(b, &v3clusterpb.Cluster{})
			if (werr == nil) != (perr == nil) {
				t.Fatalf("wireCheck() = %v, proto.Unmarshal() = %v", werr, perr)
			}
		})
	}
}

// TestType_NameBytes checks that NameBytes agrees with Name, and declines
// names whose canonical form differs.
func TestType_NameBytes(t *testing.T) {
	cases := []struct {
		name   string
		give   *anypb.Any
		wantOK bool
	}{
		{name: "plain", give: mustAny(t, edsCluster("c", "s")), wantOK: true},
		{name: "xdstp without parameters", give: mustAny(t, edsCluster("xdstp://a/envoy.config.cluster.v3.Cluster/c", "s")), wantOK: true},
		{name: "xdstp with parameters", give: mustAny(t, edsCluster("xdstp://a/envoy.config.cluster.v3.Cluster/c?b=1&a=2", "s"))},
		{name: "no name", give: mustAny(t, edsCluster("", "s"))},
		{name: "wrong type", give: mustAny(t, cla("c"))},
		{name: "nil", give: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := ClusterType.NameBytes(tc.give)
			if ok != tc.wantOK {
				t.Fatalf("NameBytes() ok = %v, want %v", ok, tc.wantOK)
			}
			if name, _ := ClusterType.Name(tc.give); ok && string(b) != name {
				t.Fatalf("NameBytes() = %q, Name() = %q", b, name)
			}
		})
	}
}

// TestValidUTF8 checks validUTF8 against utf8.Valid around its eight-byte
// reads: every length up to 24, with one non-ASCII or invalid byte at
// each position.
func TestValidUTF8(t *testing.T) {
	for n := range 25 {
		ascii := bytes.Repeat([]byte{'a'}, n)
		if !validUTF8(ascii) {
			t.Fatalf("validUTF8(%q) = false", ascii)
		}
		for i := range n {
			for _, bad := range [][]byte{{0xff}, {0x80}, []byte("é"), []byte("€"), {0xe2, 0x82}} {
				b := append(append(bytes.Clone(ascii[:i]), bad...), ascii[i:]...)
				if got, want := validUTF8(b), utf8.Valid(b); got != want {
					t.Fatalf("validUTF8(%q) = %v, utf8.Valid = %v", b, got, want)
				}
			}
		}
	}
}

// FuzzWireIter checks wireIter, whose inlined cases handle short tags and
// lengths, against a plain protowire walk of the same bytes. The seeds
// cover the edges of the inlined cases; go test runs them.
func FuzzWireIter(f *testing.F) {
	for _, seed := range [][]byte{
		{0x0a, 0x01, 'a'},  // one-byte tag and length
		{0x0a, 0x81, 0x01}, // two-byte length, truncated
		append([]byte{0x0a, 0x80, 0x01}, bytes.Repeat([]byte{'x'}, 128)...),
		bytes.Repeat(append([]byte{0x0a, 0x80, 0x01}, bytes.Repeat([]byte{'x'}, 128)...), 2),
		append([]byte{0x0a, 0xff, 0x7f}, bytes.Repeat([]byte{'x'}, 16383)...),
		{0x0a, 0x80, 0x80, 0x01},             // three-byte length
		{0x9a, 0x02, 0x01, 'a'},              // two-byte tag (35)
		{0x8a, 0x00, 0x01, 'a'},              // two-byte tag, not minimal (1)
		{0x82, 0x00, 0x01, 'a'},              // two-byte tag, field 0
		{0x02, 0x01, 'a'},                    // field 0
		{0x08, 0x96, 0x01},                   // two-byte varint
		{0x08},                               // truncated varint
		{0x0a},                               // truncated length
		{0x9a},                               // truncated tag
		{0x0d, 1, 2, 3, 4},                   // fixed32
		{0x0b, 0x0c},                         // group
		{0x0c},                               // end group
		{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00}, // field number too large
		{0xf8, 0xff, 0xff, 0xff, 0x07, 0x00}, // the largest field number
	} {
		f.Add(seed)
	}
	type field struct {
		num protowire.Number
		typ protowire.Type
		val []byte
		u   uint64
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []field
		it := wireIter{b: b}
		for it.next() {
			got = append(got, field{it.num, it.typ, it.val, it.u})
		}
		var want []field
		bad := false
		for r := b; len(r) > 0; {
			num, typ, n := protowire.ConsumeTag(r)
			if n < 0 || num > protowire.MaxValidNumber {
				bad = true
				break
			}
			r = r[n:]
			fd := field{num: num, typ: typ}
			switch typ {
			case protowire.BytesType:
				fd.val, n = protowire.ConsumeBytes(r)
			case protowire.VarintType:
				fd.u, n = protowire.ConsumeVarint(r)
			default:
				n = protowire.ConsumeFieldValue(num, typ, r)
			}
			if n < 0 {
				bad = true
				break
			}
			r = r[n:]
			want = append(want, fd)
		}
		if it.bad != bad {
			t.Fatalf("wireIter.bad = %v, protowire walk bad = %v", it.bad, bad)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(field{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("wireIter fields differ from the protowire walk (-want, +got):\n%s", diff)
		}
	})
}

// TestAddressArena checks addressArena.joinHostPort against
// net.JoinHostPort, and that its strings stay intact as it grows past
// its initial size.
func TestAddressArena(t *testing.T) {
	var a addressArena
	a.sb.Grow(8)
	var got, want []string
	for _, host := range []string{"10.0.0.1", "::1", "fe80::1%eth0", "example.com", ""} {
		for _, port := range []uint32{0, 9, 10, 99, 100, 8080, 65535, math.MaxUint32} {
			got = append(got, a.joinHostPort(host, port))
			want = append(want, net.JoinHostPort(host, strconv.FormatUint(uint64(port), 10)))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("joinHostPort (-net.JoinHostPort, +got):\n%s", diff)
	}
}
