// SPDX-License-Identifier: Apache-2.0

package pertype

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers read from responses without decoding their resources
// (envoy/service/discovery/v3/discovery.proto).
const (
	fieldResponseNonce   = 5 // DiscoveryResponse.nonce, DeltaDiscoveryResponse.nonce
	fieldDeltaResources  = 2 // DeltaDiscoveryResponse.resources
	fieldDeltaRemoved    = 6 // DeltaDiscoveryResponse.removed_resources
	fieldResourceVersion = 1 // Resource.version
	fieldResourceName    = 3 // Resource.name
)

var errMalformed = errors.New("pertype: malformed response")

// eachField calls fn with every field of the message b; fn gets the
// field's raw value for length-delimited fields.
func eachField(b []byte, fn func(num protowire.Number, val []byte)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errMalformed
			}
			fn(num, v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
	}
	return nil
}

// scanNonce returns the nonce of a serialized DiscoveryResponse.
func scanNonce(b []byte) (string, error) {
	var nonce string
	err := eachField(b, func(num protowire.Number, v []byte) {
		if num == fieldResponseNonce {
			nonce = string(v)
		}
	})
	return nonce, err
}

// deltaScan is what the mux tracks of a DeltaDiscoveryResponse.
type deltaScan struct {
	nonce     string
	resources []nameVersion
	removed   []string
}

type nameVersion struct{ name, version string }

// scanDelta reads the nonce, the names and versions of the resources and
// the removed names of a serialized DeltaDiscoveryResponse, without
// decoding the resources' bodies.
func scanDelta(b []byte) (deltaScan, error) {
	var (
		d    deltaScan
		rerr error
	)
	err := eachField(b, func(num protowire.Number, v []byte) {
		switch num {
		case fieldResponseNonce:
			d.nonce = string(v)
		case fieldDeltaRemoved:
			d.removed = append(d.removed, string(v))
		case fieldDeltaResources:
			var nv nameVersion
			if err := eachField(v, func(num protowire.Number, v []byte) {
				switch num {
				case fieldResourceName:
					nv.name = string(v)
				case fieldResourceVersion:
					nv.version = string(v)
				}
			}); err != nil {
				rerr = err
			}
			d.resources = append(d.resources, nv)
		}
	})
	if err == nil {
		err = rerr
	}
	return d, err
}
