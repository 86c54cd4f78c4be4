// SPDX-License-Identifier: Apache-2.0

package client

import (
	"fmt"

	"github.com/proxyless/xds/resources"
)

// registry is an ordered set of resource types, keyed by type URL. A
// client holds one, fixed at creation: the built-in types first,
// then custom types in the order given. The order is the order in which the
// client sends requests of several types. A registry is immutable
// and safe for concurrent use.
type registry struct {
	types []resources.ResourceType
	byURL map[string]resources.ResourceType
}

// newRegistry returns a registry of types, in order. It returns an error if
// two types share a type URL or a type is nil.
func newRegistry(types ...resources.ResourceType) (*registry, error) {
	r := &registry{byURL: make(map[string]resources.ResourceType, len(types))}
	for i, t := range types {
		if t == nil {
			return nil, fmt.Errorf("client: resource type %d is nil", i)
		}
		if _, dup := r.byURL[t.TypeURL()]; dup {
			return nil, fmt.Errorf("client: resource type URL %q registered twice", t.TypeURL())
		}
		r.byURL[t.TypeURL()] = t
		r.types = append(r.types, t)
	}
	return r, nil
}

// Lookup returns the type registered for typeURL.
func (r *registry) Lookup(typeURL string) (resources.ResourceType, bool) {
	t, ok := r.byURL[typeURL]
	return t, ok
}

// Types returns the registered types in registration order. The returned
// slice must not be modified.
func (r *registry) Types() []resources.ResourceType { return r.types }
