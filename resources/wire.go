// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// scanStringField returns the value of the last occurrence of string field
// num in the serialized message b, as proto.Unmarshal would see it (last
// one wins). ok is false if b is malformed, the field is absent, or the
// value is not valid UTF-8 (which proto.Unmarshal would reject).
func scanStringField(b []byte, num int32) (string, bool) {
	var (
		val   []byte
		found bool
	)
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return "", false
		}
		b = b[l:]
		if n == protowire.Number(num) && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", false
			}
			val, found = v, true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return "", false
		}
		b = b[m:]
	}
	if !found || !utf8.Valid(val) {
		return "", false
	}
	return string(val), true
}
