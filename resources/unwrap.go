// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// ResourceWrapperTypeURL is the type URL of the
// envoy.service.discovery.v3.Resource wrapper that a management server may
// put around a resource in a SotW response (client feature
// "xds.config.resource-in-sotw").
const ResourceWrapperTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// Unwrap returns the resource inside a Resource wrapper, or r itself when r
// is not wrapped. The wrapper's name and ttl are ignored. An error
// means the wrapper is unusable (undecodable, or a heartbeat with no
// resource inside); it is a top-level error of the response.
func Unwrap(r *anypb.Any) (*anypb.Any, error) {
	if r.GetTypeUrl() != ResourceWrapperTypeURL {
		return r, nil
	}
	w := &v3discoverypb.Resource{}
	if err := proto.Unmarshal(r.GetValue(), w); err != nil {
		return nil, fmt.Errorf("decoding resource wrapper: %w", err)
	}
	if w.GetResource() == nil {
		return nil, fmt.Errorf("resource wrapper %q has no resource", w.GetName())
	}
	return w.GetResource(), nil
}
