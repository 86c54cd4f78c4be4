// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3gcpauthnpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
)

// TestGCPAuthn checks the GCP authentication filter's config (gRFC A83)
// in a Listener and as an override (validated, not used), and
// GCPAuthnCacheSize.
func TestGCPAuthn(t *testing.T) {
	tests := []struct {
		name    string
		cfg     *v3gcpauthnpb.GcpAuthnFilterConfig
		want    uint64
		wantErr string
	}{
		{name: "default cache size", cfg: &v3gcpauthnpb.GcpAuthnFilterConfig{}, want: 10},
		{name: "cache size", cfg: &v3gcpauthnpb.GcpAuthnFilterConfig{CacheConfig: &v3gcpauthnpb.TokenCacheConfig{CacheSize: wrapperspb.UInt64(3)}}, want: 3},
		{name: "ignored fields", cfg: &v3gcpauthnpb.GcpAuthnFilterConfig{TokenHeader: &v3gcpauthnpb.TokenHeader{Name: "x-token"}}, want: 10},
		{name: "cache size 0", cfg: &v3gcpauthnpb.GcpAuthnFilterConfig{CacheConfig: &v3gcpauthnpb.TokenCacheConfig{CacheSize: wrapperspb.UInt64(0)}}, wantErr: "cache_config.cache_size: 0, must be greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := GCPAuthnCacheSize(mustAny(t, tt.cfg))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("GCPAuthnCacheSize() = %d, %v; want an error containing %q", got, err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("GCPAuthnCacheSize() = %d, %v; want %d", got, err, tt.want)
			}
			l := listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "gcp", tt.cfg), routerFilter(t))))
			_, dl, err := ListenerType.DecodeTyped(mustAny(t, l))
			if tt.wantErr == "" && (err != nil || dl.HTTPFilters[0].TypeURL != gcpAuthnTypeURL || dl.HTTPFilters[0].GCPAuthnCacheSize != tt.want) {
				t.Errorf("Listener with the filter: %v; want valid", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Listener with the filter: %v; want an error containing %q", err, tt.wantErr)
			}
			rt := &v3routepb.Route{
				Match:                &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
				Action:               &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}}},
				TypedPerFilterConfig: map[string]*anypb.Any{"gcp": mustAny(t, tt.cfg)},
			}
			rc := &v3routepb.RouteConfiguration{Name: "r", VirtualHosts: []*v3routepb.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []*v3routepb.Route{rt}}}}
			_, _, err = RouteConfigType.DecodeTyped(mustAny(t, rc))
			if (err == nil) != (tt.wantErr == "") {
				t.Errorf("override: %v; want error %q", err, tt.wantErr)
			}
		})
	}
	if _, err := GCPAuthnCacheSize(mustAny(t, &v3routepb.Route{})); err == nil {
		t.Error("GCPAuthnCacheSize of another type: no error")
	}
}

// TestCluster_Audiences checks the audiences of Cluster metadata (gRFC
// A83).
func TestCluster_Audiences(t *testing.T) {
	rr := LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true, HealthyPanicThreshold: 50}
	withMeta := func(md map[string]*anypb.Any) func(*v3clusterpb.Cluster) {
		return func(c *v3clusterpb.Cluster) { c.Metadata = &v3corepb.Metadata{TypedFilterMetadata: md} }
	}
	audience := func(url string) *anypb.Any { return mustAny(t, &v3gcpauthnpb.Audience{Url: url}) }
	runDecodeCases(t, ClusterType, clusterName, []decodeCase[*Cluster]{
		{
			rule: "R-17.4",
			name: "audiences",
			give: edsCluster("c", "s", withMeta(map[string]*anypb.Any{
				"gcp": audience("https://backend.example"), "other": audience("https://o.example"),
				"x": mustAny(t, &v3corepb.Address{}), // another type: ignored
			})),
			want: &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024, MaxRetries: 3,
				Audiences: map[string]string{"gcp": "https://backend.example", "other": "https://o.example"}},
		},
		{
			rule:    "R-17.4",
			name:    "empty audience",
			give:    edsCluster("c", "s", withMeta(map[string]*anypb.Any{"gcp": audience("")})),
			wantErr: `metadata.typed_filter_metadata["gcp"].url: empty`,
		},
		{
			rule:    "R-17.4",
			name:    "undecodable audience",
			give:    edsCluster("c", "s", withMeta(map[string]*anypb.Any{"gcp": {TypeUrl: audienceTypeURL, Value: []byte{0xff}}})),
			wantErr: `metadata.typed_filter_metadata["gcp"]: decoding Audience`,
		},
	})
}
