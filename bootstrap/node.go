// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"google.golang.org/protobuf/types/known/structpb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

const (
	// UserAgentName is the node proto's `user_agent_name`.
	UserAgentName = "proxyless-xds-go"

	// Version is the version of this library, sent as the node proto's
	// `user_agent_version`.
	Version = "v0.1.0-dev"
)

// Client features this library supports, sent in the node proto's
// `client_features`.
const (
	clientFeatureNoOverprovisioning = "envoy.lb.does_not_support_overprovisioning"
	clientFeatureResourceInSotW     = "xds.config.resource-in-sotw"
	clientFeatureResourceTTL        = "xds.config.supports-resource-ttl"
)

// ClientFeatures returns the `client_features` the client sends in its
// node proto: "envoy.lb.does_not_support_overprovisioning",
// "xds.config.resource-in-sotw" and "xds.config.supports-resource-ttl"
// (the client honours Resource.ttl and heartbeats, R-18), in that order. The slice is fresh on each
// call and the caller may modify it. The LRS stream adds its own feature
// that is not included here.
func ClientFeatures() []string {
	return []string{clientFeatureNoOverprovisioning, clientFeatureResourceInSotW, clientFeatureResourceTTL}
}

// Proto returns the node proto the client sends to management servers
// Id, Cluster, Locality (nil when all three of its fields are
// empty) and Metadata (nil when n.Metadata is nil) from n, and the
// client-controlled UserAgentName, UserAgentVersion (Version) and
// ClientFeatures. The result is a fresh proto on each call, sharing nothing
// with n.
//
// Metadata entries whose values structpb.NewValue cannot convert (only
// possible when n was not built by Parse, for example a Go struct) are
// left out rather than failing the whole node.
func (n Node) Proto() *v3corepb.Node {
	p := &v3corepb.Node{
		Id:                   n.ID,
		Cluster:              n.Cluster,
		UserAgentName:        UserAgentName,
		UserAgentVersionType: &v3corepb.Node_UserAgentVersion{UserAgentVersion: Version},
		ClientFeatures:       ClientFeatures(),
	}
	if n.Locality != (Locality{}) {
		p.Locality = &v3corepb.Locality{
			Region:  n.Locality.Region,
			Zone:    n.Locality.Zone,
			SubZone: n.Locality.SubZone,
		}
	}
	if n.Metadata != nil {
		p.Metadata = &structpb.Struct{Fields: make(map[string]*structpb.Value, len(n.Metadata))}
		for k, v := range n.Metadata {
			if pv, err := structpb.NewValue(v); err == nil {
				p.Metadata.Fields[k] = pv
			}
		}
	}
	return p
}
