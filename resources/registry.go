// SPDX-License-Identifier: Apache-2.0

package resources

import "fmt"

// Registry is an ordered set of resource types, keyed by type URL. The
// client holds one, fixed at creation: the built-in types first,
// then custom types in the order given. The order is the order in which the
// client sends requests of several types. A Registry is immutable
// and safe for concurrent use.
type Registry struct {
	types []ResourceType
	byURL map[string]ResourceType
}

// NewRegistry returns a registry of types, in order. It returns an error if
// two types share a type URL or a type is nil.
func NewRegistry(types ...ResourceType) (*Registry, error) {
	r := &Registry{byURL: make(map[string]ResourceType, len(types))}
	for i, t := range types {
		if t == nil {
			return nil, fmt.Errorf("resources: type %d is nil", i)
		}
		if _, dup := r.byURL[t.TypeURL()]; dup {
			return nil, fmt.Errorf("resources: type URL %q registered twice", t.TypeURL())
		}
		r.byURL[t.TypeURL()] = t
		r.types = append(r.types, t)
	}
	return r, nil
}

// BuiltinTypes returns the four types a gRPC client uses, in the order LDS,
// RDS, CDS, EDS: the constants ListenerType, RouteConfigType, ClusterType
// and EndpointsType, except that an option that changes validation (a
// client's bootstrap, WithCertificateProviderInstances) gives Cluster and
// Listener types of their own in place of ClusterType and ListenerType,
// with the same type URLs and Go types, so that Watch(c, ClusterType, …)
// works with them.
func BuiltinTypes(opts ...DecodeOption) []ResourceType {
	o := newDecodeOptions(opts)
	return []ResourceType{listenerTypeWith(o), RouteConfigType, clusterTypeWith(o), EndpointsType}
}

// Lookup returns the type registered for typeURL.
func (r *Registry) Lookup(typeURL string) (ResourceType, bool) {
	t, ok := r.byURL[typeURL]
	return t, ok
}

// Types returns the registered types in registration order. The returned
// slice must not be modified.
func (r *Registry) Types() []ResourceType { return r.types }
