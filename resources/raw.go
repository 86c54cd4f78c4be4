// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"unsafe"

	"google.golang.org/protobuf/types/known/anypb"
)

// rawBytes is the serialized form of a decoded resource, the value of its
// unwrapped Any, as a string that shares the bytes' memory: 16 bytes a
// value where a slice takes 24, which keeps the value types in smaller
// size classes at tens of thousands of cached resources. The bytes are
// never modified once decoded (proto.Unmarshal allocated them for the
// Any; the Decode contract forbids changing inner afterwards). "" for a
// value that was not decoded from bytes (a RouteConfiguration inline in
// a Listener, the endpoints of a LOGICAL_DNS cluster).
type rawBytes string

// keepRaw returns b as a rawBytes, without copying.
func keepRaw(b []byte) rawBytes {
	return rawBytes(unsafe.String(unsafe.SliceData(b), len(b)))
}

// toAny returns r as an Any of typeURL with a copy of the bytes, or nil
// when r is empty.
func (r rawBytes) toAny(typeURL string) *anypb.Any {
	if r == "" {
		return nil
	}
	return &anypb.Any{TypeUrl: typeURL, Value: []byte(r)}
}
