// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"time"

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
	inner, name, _, err := UnwrapResource(r)
	if err == nil && inner == nil {
		return nil, fmt.Errorf("resource wrapper %q has no resource", name)
	}
	return inner, err
}

// UnwrapResource returns, for one resource of a SotW response, the
// resource inside its Resource wrapper, or r itself when r is not wrapped
// with the wrapper's name (canonical) and ttl (R-18; 0 when
// none or not wrapped). A wrapper with a name and no resource is a
// heartbeat: inner is nil. An error means the wrapper is unusable
// (undecodable, or with neither resource nor name); it is a top-level
// error of the response.
func UnwrapResource(r *anypb.Any) (inner *anypb.Any, name string, ttl time.Duration, err error) {
	if r.GetTypeUrl() != ResourceWrapperTypeURL {
		return r, "", 0, nil
	}
	w := &v3discoverypb.Resource{}
	if err := proto.Unmarshal(r.GetValue(), w); err != nil {
		return nil, "", 0, fmt.Errorf("decoding resource wrapper: %w", err)
	}
	if w.GetResource() == nil && w.GetName() == "" {
		return nil, "", 0, fmt.Errorf("resource wrapper has neither resource nor name")
	}
	return w.GetResource(), CanonicalName(w.GetName()), w.GetTtl().AsDuration(), nil
}
