// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// This file lets validate read protojson whose Anys name types this binary
// does not link. protojson needs a message type to read the fields of an
// Any; gRPC, for a type it does not support, looks at nothing but the type
// URL (an optional HTTP filter is skipped, a required one rejected, an
// unknown LB policy passed over). So such an Any is read as its type URL
// with an empty value: its fields are dropped, and the type URL is kept
// for the validator to judge. Anys of linked types are read strictly.

// unmarshalOpaqueJSON is protojson.Unmarshal of data into m, with every
// Any of an unlinked type reduced to its "@type".
func unmarshalOpaqueJSON(data []byte, m proto.Message) error {
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep 64-bit integers exact
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	r := &opaqueResolver{}
	if !r.reduce(tree) {
		return protojson.Unmarshal(data, m)
	}
	reduced, err := json.Marshal(tree)
	if err != nil {
		return fmt.Errorf("re-encoding the JSON: %w", err)
	}
	return protojson.UnmarshalOptions{Resolver: r}.Unmarshal(reduced, m)
}

// opaqueResolver resolves the linked types as protoregistry.GlobalTypes
// does, and the type URLs reduce found unlinked to empty placeholder
// messages.
type opaqueResolver struct {
	placeholders map[string]protoreflect.MessageType // by type URL
}

// reduce replaces, in the JSON tree v, every object whose "@type" names an
// unlinked message with an object holding only that "@type", and records
// a placeholder for it. It reports whether it replaced any.
func (r *opaqueResolver) reduce(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		if url, ok := v["@type"].(string); ok {
			if _, err := protoregistry.GlobalTypes.FindMessageByURL(url); errors.Is(err, protoregistry.NotFound) {
				if mt, err := placeholderType(url); err == nil {
					if r.placeholders == nil {
						r.placeholders = make(map[string]protoreflect.MessageType)
					}
					r.placeholders[url] = mt
					clear(v)
					v["@type"] = url
					return true
				}
				// Not a valid message name: leave it to protojson's error.
			}
		}
		for _, c := range v {
			changed = r.reduce(c) || changed
		}
	case []any:
		for _, c := range v {
			changed = r.reduce(c) || changed
		}
	}
	return changed
}

func (r *opaqueResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, ok := r.placeholders[url]; ok {
		return mt, nil
	}
	return protoregistry.GlobalTypes.FindMessageByURL(url)
}

func (r *opaqueResolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(name)
}

func (r *opaqueResolver) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(name)
}

func (r *opaqueResolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}

// placeholders caches placeholderType's results, by type URL: the
// descriptors are immutable.
var placeholders sync.Map

// placeholderType returns a message type without fields whose full name
// is the last path element of url, for example
// envoy.extensions.filters.http.buffer.v3.Buffer.
func placeholderType(url string) (protoreflect.MessageType, error) {
	if mt, ok := placeholders.Load(url); ok {
		return mt.(protoreflect.MessageType), nil
	}
	name := protoreflect.FullName(url[strings.LastIndexByte(url, '/')+1:])
	if !name.IsValid() {
		return nil, fmt.Errorf("type URL %q does not end in a message name", url)
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("xdsctl/opaque/" + string(name) + ".proto"),
		Package:     proto.String(string(name.Parent())),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String(string(name.Name()))}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		return nil, fmt.Errorf("a placeholder for %q: %w", url, err)
	}
	mt := dynamicpb.NewMessageType(fd.Messages().Get(0))
	actual, _ := placeholders.LoadOrStore(url, mt)
	return actual.(protoreflect.MessageType), nil
}
