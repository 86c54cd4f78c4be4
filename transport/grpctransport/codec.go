// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// rawCodec is a gRPC codec for messages that are already serialized: it
// marshals a []byte and unmarshals into a *[]byte. On the wire the messages
// are the same protobuf bytes the proto codec would produce.
//
// Each direction copies the message exactly once, which the
// transport.Stream contract requires: Marshal copies into a pooled buffer
// because gRPC writes the frame after SendMsg returns, and Unmarshal copies
// out of gRPC's pooled buffers, which are reused after it returns.
type rawCodec struct{}

// Marshal returns a copy of v, which must be a []byte.
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("grpctransport: cannot marshal %T, want []byte", v)
	}
	if len(b) == 0 {
		return nil, nil
	}
	return mem.BufferSlice{mem.Copy(b, mem.DefaultBufferPool())}, nil
}

// Unmarshal stores a copy of data in v, which must be a *[]byte; an empty
// message is stored as nil.
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("grpctransport: cannot unmarshal into %T, want *[]byte", v)
	}
	*p = data.Materialize()
	return nil
}

// Name returns "", so that the content-type is plain "application/grpc",
// which every gRPC server reads as protobuf. A non-empty name would become
// a content-subtype ("application/grpc+name") that a server must know.
func (rawCodec) Name() string {
	return ""
}
