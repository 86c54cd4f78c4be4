// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/types/known/anypb"
)

// ResourceType is the untyped view of a resource type that the client's
// engine works with. Every Type[T] implements it. Implementations must be
// safe for concurrent use and immutable.
type ResourceType interface {
	// TypeURL is the full type URL, for example
	// "type.googleapis.com/envoy.config.listener.v3.Listener".
	TypeURL() string

	// TypeName is a short name for messages, for example "Listener".
	TypeName() string

	// AllResourcesRequiredInSotW reports whether a SotW response of this
	// type carries every subscribed resource, so that a resource missing
	// from a response has been deleted (true for LDS and CDS; ).
	AllResourcesRequiredInSotW() bool

	// Decode decodes and validates one resource whose Resource wrapper, if
	// any, was already removed (see Unwrap) and whose type URL equals
	// TypeURL. It returns the resource name in canonical form, the decoded
	// value (of the Type's T) and an error when the resource is invalid.
	// A non-nil error with a non-empty name is a per-resource error; with
	// an empty name it is a top-level error of the response.
	// A panic in the type's decoder is recovered and returned as a
	// per-resource error. The value may share memory with
	// inner.Value, which must not be modified afterwards.
	Decode(inner *anypb.Any) (name string, value any, err error)

	// Name returns the canonical resource name of an unwrapped resource
	// without decoding it, when the type can do so cheaply; ok is false
	// otherwise. The client uses it to recognise resources whose bytes did
	// not change since they were cached, which it then does not decode.
	Name(inner *anypb.Any) (name string, ok bool)
}

// TypeConfig describes a resource type for NewType.
type TypeConfig[T any] struct {
	// TypeURL is the full type URL. Required.
	TypeURL string
	// TypeName is a short name for messages. Default: the last element of
	// TypeURL.
	TypeName string
	// AllResourcesRequiredInSotW: see ResourceType.
	AllResourcesRequiredInSotW bool
	// Decode decodes and validates one unwrapped resource. It returns the
	// resource name ("" if it cannot be determined, which makes a failure a
	// top-level error) and the value. Required. The value must be treated as
	// immutable once returned: it is shared by every watcher.
	Decode func(inner *anypb.Any) (name string, value T, err error)
	// NameField, when non-zero, is the protobuf field number of the
	// resource's name (a string field of the top-level message), which lets
	// the client find the name without decoding. Zero means the name is
	// only known after Decode.
	NameField int32
}

// Type is a resource type whose decoded values have Go type T. The built-in
// types are the constants ListenerType, RouteConfigType, ClusterType and
// EndpointsType, of type BuiltinType; NewType makes custom ones. Watches are typed by it:
// client.Watch(c, resources.ClusterType, name, w) delivers *Cluster values.
//
// Only this package implements Type (the built-in constants and NewType):
// the client relies on what Decode promises. Values are immutable and safe
// for concurrent use; copies are interchangeable.
type Type[T any] interface {
	ResourceType

	// DecodeTyped is Decode with the value typed. It checks the type URL,
	// recovers panics of the decoder into per-resource errors
	// and returns the name in canonical form (CanonicalName).
	DecodeTyped(inner *anypb.Any) (name string, value T, err error)

	// NameBytes is Name without allocating the name: it returns the bytes
	// of the name inside inner.Value, which alias them and must neither be
	// modified nor kept, when they are the canonical name; ok is false
	// when Name would fail or when the canonical form differs from the
	// bytes (an xdstp name with context parameters, R-5.2), in which case
	// use Name. A cache keyed by canonical name can be probed with
	// m[string(b)] without an allocation, which makes recognising an
	// unchanged resource allocation-free. It is not part of ResourceType;
	// the client checks for it with a type assertion to
	// interface{ NameBytes(*anypb.Any) ([]byte, bool) }.
	NameBytes(inner *anypb.Any) (name []byte, ok bool)

	// sealed keeps the implementations in this package.
	sealed()
}

// NewType returns a Type for a custom resource type. It panics if
// cfg.TypeURL is empty or cfg.Decode is nil: that is a programming error.
// cfg is copied: changing it afterwards does not change the Type.
func NewType[T any](cfg TypeConfig[T]) Type[T] {
	if cfg.TypeURL == "" || cfg.Decode == nil {
		panic("resources: NewType needs a TypeURL and a Decode func")
	}
	return newTypeImpl(cfg)
}

// newTypeImpl returns the implementation of the Type described by cfg,
// with its TypeName defaulted.
func newTypeImpl[T any](cfg TypeConfig[T]) *typeImpl[T] {
	if cfg.TypeName == "" {
		cfg.TypeName = lastElement(cfg.TypeURL)
	}
	return &typeImpl[T]{cfg: cfg}
}

// BuiltinType is the Go type of the four built-in resource types, the
// constants ListenerType (a BuiltinType[*Listener]), RouteConfigType,
// ClusterType and EndpointsType: each is a Type[T] whose value is its type
// URL, and being a constant it cannot be reassigned by an importer. Use
// them where a Type[T] is wanted:
//
//	cancel := client.Watch(c, resources.ListenerType, "svc", w) // w gets *Listener values
//
// Use the constants only: a BuiltinType converted from another string, or
// whose T is not the Go type of its type URL's values, is not a usable
// type (its Decode and DecodeTyped return an error, Name and NameBytes
// find nothing, and the client refuses its watches with ErrUnsupported).
// Safe for concurrent use.
type BuiltinType[T any] string

// The implementations of the built-in types.
var (
	listenerImpl    = newTypeImpl(listenerConfig)
	routeConfigImpl = newTypeImpl(routeConfigConfig)
	clusterImpl     = newTypeImpl(clusterConfig)
	endpointsImpl   = newTypeImpl(endpointsConfig)
)

// impl returns the implementation of t, and false when t is not one of
// the constants (another type URL, or a T that does not match it).
func (t BuiltinType[T]) impl() (*typeImpl[T], bool) {
	var impl any
	switch string(t) {
	case ListenerTypeURL:
		impl = listenerImpl
	case RouteConfigTypeURL:
		impl = routeConfigImpl
	case ClusterTypeURL:
		impl = clusterImpl
	case EndpointsTypeURL:
		impl = endpointsImpl
	}
	ti, ok := impl.(*typeImpl[T])
	return ti, ok
}

// errNotBuiltin is the error of Decode and DecodeTyped for a BuiltinType
// that is not one of the constants.
func (t BuiltinType[T]) errNotBuiltin() error {
	var zero T
	return fmt.Errorf("resources: BuiltinType[%T](%q) is not a built-in resource type", zero, string(t))
}

// TypeURL implements ResourceType.
func (t BuiltinType[T]) TypeURL() string { return string(t) }

// TypeName implements ResourceType: "Listener", "RouteConfiguration",
// "Cluster" or "ClusterLoadAssignment".
func (t BuiltinType[T]) TypeName() string {
	if ti, ok := t.impl(); ok {
		return ti.TypeName()
	}
	return lastElement(string(t))
}

// AllResourcesRequiredInSotW implements ResourceType: true for
// ListenerType and ClusterType.
func (t BuiltinType[T]) AllResourcesRequiredInSotW() bool {
	ti, ok := t.impl()
	return ok && ti.AllResourcesRequiredInSotW()
}

// Decode implements ResourceType.
func (t BuiltinType[T]) Decode(inner *anypb.Any) (string, any, error) {
	ti, ok := t.impl()
	if !ok {
		return "", nil, t.errNotBuiltin()
	}
	return ti.Decode(inner)
}

// DecodeTyped implements Type.
func (t BuiltinType[T]) DecodeTyped(inner *anypb.Any) (string, T, error) {
	ti, ok := t.impl()
	if !ok {
		var zero T
		return "", zero, t.errNotBuiltin()
	}
	return ti.DecodeTyped(inner)
}

// Name implements ResourceType.
func (t BuiltinType[T]) Name(inner *anypb.Any) (string, bool) {
	ti, ok := t.impl()
	if !ok {
		return "", false
	}
	return ti.Name(inner)
}

// NameBytes implements Type.
func (t BuiltinType[T]) NameBytes(inner *anypb.Any) ([]byte, bool) {
	ti, ok := t.impl()
	if !ok {
		return nil, false
	}
	return ti.NameBytes(inner)
}

func (BuiltinType[T]) sealed() {}

// typeImpl implements Type from a TypeConfig.
type typeImpl[T any] struct {
	cfg TypeConfig[T]
}

func (*typeImpl[T]) sealed() {}

// TypeURL implements ResourceType.
func (t *typeImpl[T]) TypeURL() string { return t.cfg.TypeURL }

// TypeName implements ResourceType.
func (t *typeImpl[T]) TypeName() string { return t.cfg.TypeName }

// AllResourcesRequiredInSotW implements ResourceType.
func (t *typeImpl[T]) AllResourcesRequiredInSotW() bool { return t.cfg.AllResourcesRequiredInSotW }

// Decode implements ResourceType.
func (t *typeImpl[T]) Decode(inner *anypb.Any) (name string, value any, err error) {
	n, v, err := t.DecodeTyped(inner)
	return n, v, err
}

// DecodeTyped implements Type.
func (t *typeImpl[T]) DecodeTyped(inner *anypb.Any) (name string, value T, err error) {
	if inner == nil {
		return "", value, fmt.Errorf("%s: no resource", t.cfg.TypeName)
	}
	if inner.GetTypeUrl() != t.cfg.TypeURL {
		return "", value, fmt.Errorf("%s: resource type URL %q does not match %q", t.cfg.TypeName, inner.GetTypeUrl(), t.cfg.TypeURL)
	}
	defer func() {
		if r := recover(); r != nil {
			// With a NameField the name is known without decoding, so the
			// panic is a per-resource error.
			name, _ = t.Name(inner)
			var zero T
			value = zero
			err = fmt.Errorf("%s %q: decoder panic: %v", t.cfg.TypeName, name, r)
		}
	}()
	n, v, err := t.cfg.Decode(inner)
	if n != "" {
		name = CanonicalName(n)
	} else {
		name = ""
	}
	return name, v, err
}

// Name implements ResourceType.
func (t *typeImpl[T]) Name(inner *anypb.Any) (string, bool) {
	if t.cfg.NameField == 0 || inner == nil || inner.GetTypeUrl() != t.cfg.TypeURL {
		return "", false
	}
	n, ok := scanStringField(inner.GetValue(), t.cfg.NameField)
	if !ok || n == "" {
		return "", false
	}
	return CanonicalName(n), true
}

// NameBytes implements Type.
func (t *typeImpl[T]) NameBytes(inner *anypb.Any) ([]byte, bool) {
	if t.cfg.NameField == 0 || inner == nil || inner.GetTypeUrl() != t.cfg.TypeURL {
		return nil, false
	}
	b, ok := scanBytesField(inner.GetValue(), t.cfg.NameField)
	if !ok || len(b) == 0 || !isCanonicalBytes(b) {
		return nil, false
	}
	return b, true
}

// isCanonicalBytes reports whether CanonicalName leaves the name b alone.
func isCanonicalBytes(b []byte) bool {
	if !bytes.HasPrefix(b, []byte(xdstpScheme+":")) {
		return true
	}
	return bytes.IndexByte(b, '?') < 0
}

func lastElement(typeURL string) string {
	for i := len(typeURL) - 1; i >= 0; i-- {
		if typeURL[i] == '/' || typeURL[i] == '.' {
			return typeURL[i+1:]
		}
	}
	return typeURL
}
