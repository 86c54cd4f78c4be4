// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"encoding/binary"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// scanStringField returns the value of the last occurrence of string field
// num in the serialized message b, as proto.Unmarshal would see it (last
// one wins). ok is false if b is malformed at its top level, the field is
// absent, or the value is not valid UTF-8 (which proto.Unmarshal would
// reject).
//
// It is on the path of every resource of every response (the client
// recognises unchanged resources by name and bytes), so one-byte tags and
// lengths, the usual case, are decoded inline.
func scanStringField(b []byte, num int32) (string, bool) {
	v, ok := scanBytesField(b, num)
	if !ok {
		return "", false
	}
	return string(v), true
}

// scanBytesField is scanStringField without the copy: the returned slice
// aliases b.
func scanBytesField(b []byte, num int32) ([]byte, bool) {
	var (
		val   []byte
		found bool
	)
	for len(b) > 0 {
		var (
			n   protowire.Number
			typ protowire.Type
		)
		if c := b[0]; c < 0x80 {
			n, typ = protowire.Number(c>>3), protowire.Type(c&7)
			if n == 0 {
				return nil, false
			}
			b = b[1:]
		} else {
			var l int
			if n, typ, l = protowire.ConsumeTag(b); l < 0 {
				return nil, false
			}
			b = b[l:]
		}
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(n, typ, b)
			if m < 0 {
				return nil, false
			}
			b = b[m:]
			continue
		}
		var size uint64
		if len(b) > 0 && b[0] < 0x80 {
			size, b = uint64(b[0]), b[1:]
		} else {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return nil, false
			}
			size, b = v, b[m:]
		}
		if size > uint64(len(b)) {
			return nil, false
		}
		if n == protowire.Number(num) {
			val, found = b[:size], true
		}
		b = b[size:]
	}
	if !found || !validUTF8(val) {
		return nil, false
	}
	return val, true
}

// wireIter iterates over the fields of a serialized message:
//
//	for it := (wireIter{b: b}); it.next(); {
//		switch it.num { … it.val, it.u … }
//	}
//
// After next returns false, bad reports whether b was malformed: a bad
// tag or field number, a truncated value, a misplaced end of group. It
// does not check the values themselves (UTF-8, nested messages): the
// decoders' fast paths use it on bytes that passed wireCheck, or check
// each field with wirePlan.checkIter.
type wireIter struct {
	b   []byte
	num protowire.Number // of the current field
	typ protowire.Type   // of the current field
	val []byte           // the value of a length-delimited field
	u   uint64           // the value of a varint field
	bad bool
}

func (it *wireIter) next() bool {
	b := it.b
	if len(b) == 0 {
		return false
	}
	// Inlined: a tag of one or two bytes (field numbers below 2048) with
	// a length of one or two bytes (values below 16 KiB) or a one-byte
	// varint, the common case and most of the fast paths' time. Anything
	// else, including every error, takes the general path below.
	var tag uint64
	i := 1
	if c := b[0]; c < 0x80 {
		tag = uint64(c)
	} else if len(b) >= 2 && b[1] < 0x80 {
		tag, i = uint64(c&0x7f)|uint64(b[1])<<7, 2
	}
	if num, typ := protowire.Number(tag>>3), protowire.Type(tag&7); num != 0 && i < len(b) {
		switch c := b[i]; typ {
		case protowire.BytesType:
			n, j := uint64(c), i+1
			if c >= 0x80 {
				if j >= len(b) || b[j] >= 0x80 {
					break
				}
				n, j = uint64(c&0x7f)|uint64(b[j])<<7, j+1
			}
			if n <= uint64(len(b)-j) {
				m := j + int(n)
				it.num, it.typ, it.val, it.u = num, typ, b[j:m:m], 0
				it.b = b[m:]
				return true
			}
		case protowire.VarintType:
			if c < 0x80 {
				it.num, it.typ, it.val, it.u = num, typ, nil, uint64(c)
				it.b = b[i+1:]
				return true
			}
		}
	}
	num, typ, n := protowire.ConsumeTag(it.b)
	if n < 0 || num > protowire.MaxValidNumber {
		it.bad = true
		return false
	}
	it.b = it.b[n:]
	it.num, it.typ, it.val, it.u = num, typ, nil, 0
	switch typ {
	case protowire.BytesType:
		it.val, n = protowire.ConsumeBytes(it.b)
	case protowire.VarintType:
		it.u, n = protowire.ConsumeVarint(it.b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, it.b)
	}
	if n < 0 {
		it.bad = true
		return false
	}
	it.b = it.b[n:]
	return true
}

// bytesField reports whether the current field is length-delimited field
// num.
func (it *wireIter) bytesField(num protowire.Number) bool {
	return it.num == num && it.typ == protowire.BytesType
}

// validUTF8 is utf8.Valid, faster for ASCII, the usual content of names
// and type URLs: it reads eight bytes at a time and leaves any other
// input to utf8.Valid. The decoders check every string field they read,
// as proto.Unmarshal does, and this is most of the cost.
func validUTF8(b []byte) bool {
	const high = 0x8080808080808080
	if n := len(b); n >= 8 {
		var acc uint64
		for i := 0; i+8 <= n; i += 8 {
			acc |= binary.LittleEndian.Uint64(b[i:])
		}
		acc |= binary.LittleEndian.Uint64(b[n-8:]) // the tail, overlapping
		return acc&high == 0 || utf8.Valid(b)
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b)
		}
	}
	return true
}
