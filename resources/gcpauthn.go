// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3gcpauthnpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
)

const (
	// gcpAuthnTypeURL is the config type of the GCP authentication
	// filter (gRFC A83).
	gcpAuthnTypeURL = "type.googleapis.com/envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig"
	// audienceTypeURL is the type of the Cluster metadata entries that
	// give its audience.
	audienceTypeURL = "type.googleapis.com/envoy.extensions.filters.http.gcp_authn.v3.Audience"

	// defaultGCPAuthnCacheSize is cache_config.cache_size when unset.
	defaultGCPAuthnCacheSize = 10
)

// gcpAuthnImpl is the GCP authentication filter (gRFC A83), a client
// filter. Its overrides are validated and not used.
var gcpAuthnImpl = &httpFilterImpl{
	client: true,
	parse: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		size, err := gcpAuthnCacheSize(cfg, typedStruct)
		return filterConfig{gcpAuthnCacheSize: size}, err
	},
	parseOverride: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		_, err := gcpAuthnCacheSize(cfg, typedStruct)
		return filterConfig{}, err // validated, not used (gRFC A83)
	},
}

// GCPAuthnCacheSize returns the cache size of a GCP authentication
// filter's config (GcpAuthnFilterConfig, gRFC A83) as validated in a
// Listener: cache_config.cache_size, 10 when unset; the other fields are
// ignored, as gRPC does. It returns an error for another config, or an
// invalid one (a cache size of 0).
func GCPAuthnCacheSize(cfg *anypb.Any) (uint64, error) {
	return gcpAuthnCacheSize(cfg, false)
}

func gcpAuthnCacheSize(cfg *anypb.Any, typedStruct bool) (uint64, error) {
	m := &v3gcpauthnpb.GcpAuthnFilterConfig{}
	if err := unmarshalFilterConfig(cfg, typedStruct, m); err != nil {
		return 0, err
	}
	size := m.GetCacheConfig().GetCacheSize()
	if size == nil {
		return defaultGCPAuthnCacheSize, nil
	}
	if size.GetValue() == 0 {
		return 0, invalid("cache_config.cache_size", "0, must be greater than 0")
	}
	return size.GetValue(), nil
}

// audiencesFromMetadata returns the audiences of a Cluster's metadata
// (gRFC A83): its typed_filter_metadata entries of type
// envoy.extensions.filters.http.gcp_authn.v3.Audience, by key (the name
// of the filter instance that uses it), each with a non-empty url. nil
// when there are none. Error fields are relative to the Cluster; keys are
// checked in sorted order.
func audiencesFromMetadata(md *v3corepb.Metadata) (map[string]string, error) {
	tfm := md.GetTypedFilterMetadata()
	var out map[string]string
	for _, key := range slices.Sorted(maps.Keys(tfm)) {
		a := tfm[key]
		if a.GetTypeUrl() != audienceTypeURL {
			continue
		}
		field := fmt.Sprintf("metadata.typed_filter_metadata[%q]", key)
		aud := &v3gcpauthnpb.Audience{}
		if err := proto.Unmarshal(a.GetValue(), aud); err != nil {
			return nil, invalid(field, "decoding Audience: %w", err)
		}
		if aud.GetUrl() == "" {
			return nil, invalid(field+".url", "empty")
		}
		if out == nil {
			out = make(map[string]string, 1)
		}
		out[key] = aud.GetUrl()
	}
	return out, nil
}
