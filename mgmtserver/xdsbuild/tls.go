// SPDX-License-Identifier: Apache-2.0

package xdsbuild

import (
	"encoding/json"
	"fmt"
	"time"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// UpstreamTLSOptions describe the UpstreamTlsContext of UpstreamTLS (gRFC
// A29): which certificate provider instances of the bootstrap give the
// roots and the client certificate, and which server SANs are accepted.
type UpstreamTLSOptions struct {
	// RootInstance and RootCertName are
	// validation_context.ca_certificate_provider_instance; "" leaves it
	// unset (then set SystemRootCerts).
	RootInstance, RootCertName string
	// SystemRootCerts sets validation_context.system_root_certs (gRFC
	// A82).
	SystemRootCerts bool
	// IdentityInstance and IdentityCertName are
	// tls_certificate_provider_instance; "" means no client certificate
	// (TLS rather than mTLS).
	IdentityInstance, IdentityCertName string
	// SubjectAltNames is validation_context.match_subject_alt_names; see
	// ExactSAN and PrefixSAN.
	SubjectAltNames []*v3matcherpb.StringMatcher
}

// UpstreamTLS returns an envoy.transport_sockets.tls transport socket
// holding the UpstreamTlsContext that o describes, with the gRFC A29
// fields (validation_context, tls_certificate_provider_instance).
func UpstreamTLS(o UpstreamTLSOptions) *v3corepb.TransportSocket {
	//lint:ignore SA1019 gRFC A29: gRPC reads match_subject_alt_names, not match_typed_subject_alt_names
	vc := &v3tlspb.CertificateValidationContext{MatchSubjectAltNames: o.SubjectAltNames}
	if o.RootInstance != "" {
		vc.CaCertificateProviderInstance = &v3tlspb.CertificateProviderPluginInstance{InstanceName: o.RootInstance, CertificateName: o.RootCertName}
	}
	if o.SystemRootCerts {
		vc.SystemRootCerts = &v3tlspb.CertificateValidationContext_SystemRootCerts{}
	}
	common := &v3tlspb.CommonTlsContext{ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: vc}}
	if o.IdentityInstance != "" {
		common.TlsCertificateProviderInstance = &v3tlspb.CertificateProviderPluginInstance{InstanceName: o.IdentityInstance, CertificateName: o.IdentityCertName}
	}
	return &v3corepb.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: MarshalAny(&v3tlspb.UpstreamTlsContext{CommonTlsContext: common})},
	}
}

// WithUpstreamTLS sets the transport socket of c to UpstreamTLS(o) and
// returns c.
func WithUpstreamTLS(c *v3clusterpb.Cluster, o UpstreamTLSOptions) *v3clusterpb.Cluster {
	c.TransportSocket = UpstreamTLS(o)
	return c
}

// ExactSAN returns a match_subject_alt_names matcher of the exact value
// san, for example a SPIFFE ID.
func ExactSAN(san string) *v3matcherpb.StringMatcher {
	return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: san}}
}

// PrefixSAN returns a match_subject_alt_names matcher of the prefix
// prefix, for example a SPIFFE trust domain "spiffe://example.org/".
func PrefixSAN(prefix string) *v3matcherpb.StringMatcher {
	return &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{Prefix: prefix}}
}

// FileWatcher is the config of a "file_watcher" certificate provider
// instance (gRFC A29, A87); empty fields are left out.
type FileWatcher struct {
	CertificateFile          string `json:"certificate_file,omitempty"`
	PrivateKeyFile           string `json:"private_key_file,omitempty"`
	CACertificateFile        string `json:"ca_certificate_file,omitempty"`
	SPIFFETrustBundleMapFile string `json:"spiffe_trust_bundle_map_file,omitempty"`
	// RefreshInterval is written as a protobuf JSON duration ("0.1s");
	// zero leaves it out (the plugin's default, 10 minutes).
	RefreshInterval time.Duration `json:"-"`
}

// WithCertificateProviders returns the bootstrap JSON b (from Bootstrap)
// with a certificate_providers object holding a file_watcher instance per
// entry of providers (instance name → config), replacing any it had. It
// returns an error when b is not a JSON object.
func WithCertificateProviders(b []byte, providers map[string]FileWatcher) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("xdsbuild: the bootstrap is not a JSON object: %w", err)
	}
	type instance struct {
		PluginName string         `json:"plugin_name"`
		Config     map[string]any `json:"config"`
	}
	cps := make(map[string]instance, len(providers))
	for name, fw := range providers {
		cfg := make(map[string]any)
		for k, v := range map[string]string{
			"certificate_file":             fw.CertificateFile,
			"private_key_file":             fw.PrivateKeyFile,
			"ca_certificate_file":          fw.CACertificateFile,
			"spiffe_trust_bundle_map_file": fw.SPIFFETrustBundleMapFile,
		} {
			if v != "" {
				cfg[k] = v
			}
		}
		if fw.RefreshInterval > 0 {
			cfg["refresh_interval"] = fmt.Sprintf("%gs", fw.RefreshInterval.Seconds())
		}
		cps[name] = instance{PluginName: "file_watcher", Config: cfg}
	}
	js, err := json.Marshal(cps)
	if err != nil {
		return nil, fmt.Errorf("xdsbuild: encoding certificate_providers: %w", err)
	}
	doc["certificate_providers"] = js
	return json.MarshalIndent(doc, "", "  ")
}
