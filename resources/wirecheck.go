// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"errors"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file checks serialized messages without decoding them. A gRPC
// client rejects a resource that proto.Unmarshal rejects, and
// proto.Unmarshal allocates every message it meets; where the decoders
// only need a few fields of a nested config, they check the bytes with
// wireCheck, which accepts exactly what proto.Unmarshal accepts but
// allocates nothing, and read the fields with protowire.

// errWireUnsupported means wireCheck cannot tell: the message uses a
// feature it does not model (groups, required fields, extensions,
// editions). Callers fall back to proto.Unmarshal.
var errWireUnsupported = errors.New("wire check: unsupported message feature")

// errWireInvalid means proto.Unmarshal would fail on the bytes. Callers
// that need the reason call proto.Unmarshal for its error.
var errWireInvalid = errors.New("wire check: invalid wire format")

// wireRecursionLimit is proto.Unmarshal's default recursion limit.
const wireRecursionLimit = 10000

// wireCheck reports whether proto.Unmarshal(b, m), for an m whose
// descriptor is md, would succeed: nil if it would, errWireInvalid if
// not, errWireUnsupported when md uses something this check does not
// model. It follows google.golang.org/protobuf's decoder: a known field
// with an unexpected wire type is an unknown field; unknown fields must
// be well formed; known message fields are checked recursively; proto3
// strings must be valid UTF-8; repeated scalars may be packed.
func wireCheck(b []byte, md protoreflect.MessageDescriptor) error {
	return planFor(md).check(b, wireRecursionLimit)
}

// wirePlan is what wireCheck needs of a message descriptor, compiled once
// per message type: the fields by number, with the wire type each
// expects. Plans are immutable once published and shared by all callers.
type wirePlan struct {
	unsupported bool                                // see errWireUnsupported
	dense       []wireFieldPlan                     // by field number, below len(dense)
	sparse      map[protowire.Number]*wireFieldPlan // field numbers beyond
}

// wireFieldPlan describes one field.
type wireFieldPlan struct {
	known    bool
	wireType protowire.Type // of one value; BytesType for maps
	list     bool           // repeated: scalars may come packed
	utf8     bool           // a string that must be valid UTF-8
	msg      *wirePlan      // for messages
	mapKey   *wireFieldPlan // for maps
	mapValue *wireFieldPlan // for maps
}

var (
	wirePlansMu sync.Mutex
	wirePlans   sync.Map // protoreflect.MessageDescriptor → *wirePlan, complete plans only
)

// planFor returns the plan of md, compiling it and the plans of the
// messages it contains on first use.
func planFor(md protoreflect.MessageDescriptor) *wirePlan {
	// Descriptors are keyed by identity: the generated ones are unique.
	if p, ok := wirePlans.Load(md); ok {
		return p.(*wirePlan)
	}
	wirePlansMu.Lock()
	defer wirePlansMu.Unlock()
	building := map[protoreflect.MessageDescriptor]*wirePlan{}
	p := buildPlan(md, building)
	for d, bp := range building {
		wirePlans.Store(d, bp)
	}
	return p
}

func buildPlan(md protoreflect.MessageDescriptor, building map[protoreflect.MessageDescriptor]*wirePlan) *wirePlan {
	if p, ok := wirePlans.Load(md); ok {
		return p.(*wirePlan)
	}
	if p := building[md]; p != nil {
		return p // recursive message: filled in by the caller up the stack
	}
	p := &wirePlan{}
	building[md] = p
	if md.RequiredNumbers().Len() > 0 || md.ExtensionRanges().Len() > 0 || md.Syntax() == protoreflect.Editions {
		p.unsupported = true
		return p
	}
	fields := md.Fields()
	maxDense := protowire.Number(0)
	for i := range fields.Len() {
		if n := fields.Get(i).Number(); n < 128 && n > maxDense {
			maxDense = n
		}
	}
	p.dense = make([]wireFieldPlan, maxDense+1)
	for i := range fields.Len() {
		fd := fields.Get(i)
		fp := buildFieldPlan(fd, building)
		if fp.wireType < 0 {
			p.unsupported = true // groups
		}
		if n := fd.Number(); n <= maxDense {
			p.dense[n] = fp
		} else {
			if p.sparse == nil {
				p.sparse = map[protowire.Number]*wireFieldPlan{}
			}
			p.sparse[n] = &fp
		}
	}
	return p
}

func buildFieldPlan(fd protoreflect.FieldDescriptor, building map[protoreflect.MessageDescriptor]*wirePlan) wireFieldPlan {
	fp := wireFieldPlan{known: true, wireType: wireTypeOf(fd.Kind()), list: fd.IsList()}
	switch {
	case fd.IsMap():
		k, v := buildFieldPlan(fd.MapKey(), building), buildFieldPlan(fd.MapValue(), building)
		fp.wireType, fp.list, fp.mapKey, fp.mapValue = protowire.BytesType, false, &k, &v
	case fd.Kind() == protoreflect.MessageKind:
		fp.msg = buildPlan(fd.Message(), building)
	case fd.Kind() == protoreflect.StringKind:
		fp.utf8 = fd.Syntax() == protoreflect.Proto3
	}
	return fp
}

func (p *wirePlan) field(n protowire.Number) *wireFieldPlan {
	if int(n) < len(p.dense) {
		if fp := &p.dense[n]; fp.known {
			return fp
		}
		return nil
	}
	return p.sparse[n]
}

// check checks the serialized message b against the plan.
func (p *wirePlan) check(b []byte, depth int) error {
	if depth--; depth < 0 {
		return errWireInvalid
	}
	if p.unsupported {
		return errWireUnsupported
	}
	for len(b) > 0 {
		var (
			num protowire.Number
			typ protowire.Type
			n   int
		)
		if b[0] < 0x80 && b[0] >= 1<<3 { // inlined: a one-byte tag
			num, typ, n = protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
		} else if num, typ, n = protowire.ConsumeTag(b); n < 0 || num > protowire.MaxValidNumber {
			return errWireInvalid
		}
		b = b[n:]
		if typ == protowire.EndGroupType {
			return errWireInvalid // not inside a group
		}
		n = -1
		if fp := p.field(num); fp != nil {
			var err error
			if n, err = fp.check(b, typ, depth); err != nil {
				return err
			}
		}
		if n < 0 { // unknown field, or a known one with another wire type
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errWireInvalid
			}
		}
		b = b[n:]
	}
	return nil
}

// check checks the value of the field at the start of b, of wire type
// typ, and returns its length, or -1 when the wire type makes it an
// unknown field.
func (fp *wireFieldPlan) check(b []byte, typ protowire.Type, depth int) (int, error) {
	if typ != fp.wireType {
		if typ != protowire.BytesType || !fp.list {
			return -1, nil
		}
		v, n := protowire.ConsumeBytes(b) // packed scalars
		if n < 0 {
			return 0, errWireInvalid
		}
		return n, fp.checkPacked(v)
	}
	if typ != protowire.BytesType {
		n := protowire.ConsumeFieldValue(0, typ, b)
		if n < 0 {
			return 0, errWireInvalid
		}
		return n, nil
	}
	var v []byte
	n := -1
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) { // inlined: a one-byte length
		n = 1 + int(b[0])
		v = b[1:n:n]
	} else if v, n = protowire.ConsumeBytes(b); n < 0 {
		return 0, errWireInvalid
	}
	return n, fp.checkBytes(v, depth)
}

// checkBytes checks v, the value of a length-delimited field of the
// field's own wire type.
func (fp *wireFieldPlan) checkBytes(v []byte, depth int) error {
	switch {
	case fp.msg != nil:
		return fp.msg.check(v, depth)
	case fp.mapKey != nil:
		return fp.checkMapEntry(v, depth)
	case fp.utf8 && !validUTF8(v):
		return errWireInvalid
	}
	return nil
}

// checkPacked checks v, the value of a packed repeated scalar field.
func (fp *wireFieldPlan) checkPacked(v []byte) error {
	for len(v) > 0 {
		m := protowire.ConsumeFieldValue(0, fp.wireType, v)
		if m < 0 {
			return errWireInvalid
		}
		v = v[m:]
	}
	return nil
}

// checkIter checks the current field of it, a wireIter over a message of
// this plan checked at depth (as check, after its decrement): the
// fused walks of the fast paths read the fields they need and check the
// others with it, so that they check and read the bytes in one pass.
// wireIter has already checked the field's framing.
func (p *wirePlan) checkIter(it *wireIter, depth int) bool {
	if it.typ != protowire.BytesType {
		return true // varints and fixed values have nothing more to check
	}
	fp := p.field(it.num)
	switch {
	case fp == nil:
		return true
	case fp.wireType == protowire.BytesType:
		return fp.checkBytes(it.val, depth) == nil
	case fp.list:
		return fp.checkPacked(it.val) == nil
	}
	return true
}

// checkMapEntry checks a map entry as proto.Unmarshal does: key (1) and
// value (2) are checked when their wire type is the expected one, and
// anything else is an unknown field.
func (fp *wireFieldPlan) checkMapEntry(b []byte, depth int) error {
	if depth--; depth < 0 {
		return errWireInvalid
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return errWireInvalid
		}
		b = b[n:]
		var kv *wireFieldPlan
		switch num {
		case 1:
			kv = fp.mapKey
		case 2:
			kv = fp.mapValue
		}
		n = -1
		if kv != nil && typ == kv.wireType {
			var err error
			if n, err = kv.check(b, typ, depth); err != nil {
				return err
			}
		}
		if n < 0 {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errWireInvalid
			}
		}
		b = b[n:]
	}
	return nil
}

// wireTypeOf returns the wire type of a kind, or -1 for groups.
func wireTypeOf(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Sfixed32Kind, protoreflect.Fixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Sfixed64Kind, protoreflect.Fixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	default:
		return -1
	}
}
