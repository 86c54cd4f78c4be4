// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/anypb"
)

// ErrUnknownType is wrapped by the error of Check and Validate for a
// resource whose type URL is not one of the built-in types.
var ErrUnknownType = errors.New("resources: unknown resource type")

// Verdict is the result of checking one resource with Check.
type Verdict struct {
	// TypeURL is the type URL of the resource, after removing any
	// Resource wrapper; "" when the wrapper cannot be decoded.
	TypeURL string
	// TypeName is the short name of the built-in type, for example
	// "Cluster"; "" when TypeURL is not a built-in type.
	TypeName string
	// Name is the resource name in canonical form; "" when it cannot be
	// determined (an undecodable resource or an empty name).
	Name string
	// Value is the decoded value (*Listener, *RouteConfig, *Cluster or
	// *Endpoints) when Err is nil, nil otherwise.
	Value any
	// Err is nil when a gRPC client would accept the resource. Otherwise
	// it says why not; when a field is at fault it wraps a
	// *ValidationError, found with errors.As. For a type URL that is not
	// built in it wraps ErrUnknownType.
	Err error
}

// Check decodes and validates r, one resource of a built-in type
// (Listener, RouteConfiguration, Cluster or ClusterLoadAssignment),
// possibly inside an envoy.service.discovery.v3.Resource wrapper, exactly
// as a client of this library does on receiving it in a
// DiscoveryResponse. It does no I/O and is safe for concurrent use:
// a control plane can lint its output with it, for example in CI. opts
// give what a client would know besides the resource: with
// WithCertificateProviderInstances, the certificate provider instances of
// its bootstrap, which a Cluster's transport socket must name.
func Check(r *anypb.Any, opts ...DecodeOption) Verdict {
	inner, err := Unwrap(r)
	if err != nil {
		return Verdict{Err: err}
	}
	v := Verdict{TypeURL: inner.GetTypeUrl()}
	var typ ResourceType
	for _, t := range BuiltinTypes(opts...) {
		if t.TypeURL() == v.TypeURL {
			typ = t
		}
	}
	if typ == nil {
		v.Err = fmt.Errorf("%w %q", ErrUnknownType, v.TypeURL)
		return v
	}
	v.TypeName = typ.TypeName()
	v.Name, v.Value, v.Err = typ.Decode(inner)
	if v.Err != nil {
		v.Value = nil
	}
	return v
}

// Validate reports whether a gRPC client would accept r, a resource of a
// built-in type, possibly wrapped: it returns nil if so, and otherwise an
// error naming the resource and saying why, which wraps a
// *ValidationError when a field is at fault. It is Check without the
// details; see Check, and its opts.
func Validate(r *anypb.Any, opts ...DecodeOption) error {
	v := Check(r, opts...)
	switch {
	case v.Err == nil:
		return nil
	case v.TypeName == "":
		return v.Err
	case v.Name == "":
		return fmt.Errorf("%s: %w", v.TypeName, v.Err)
	default:
		return fmt.Errorf("%s %q: %w", v.TypeName, v.Name, v.Err)
	}
}
