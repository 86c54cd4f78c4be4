// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"google.golang.org/protobuf/proto"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

const downstreamTLSTypeURL = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"

// ServerSecurityConfig is the TLS configuration of a server-side filter
// chain (gRFC A29): the server's identity certificate, and the roots that
// verify client certificates, from certificate provider instances of the
// bootstrap.
type ServerSecurityConfig struct {
	// IdentityInstanceName names the certificate provider instance (in
	// the bootstrap's certificate_providers) of the server's certificate;
	// never empty.
	IdentityInstanceName string
	// IdentityCertName is the certificate name passed to that provider.
	IdentityCertName string
	// RootInstanceName names the instance of the root certificates (or
	// SPIFFE trust bundle map) that verify client certificates; "" when
	// clients are not asked for one (TLS rather than mTLS).
	RootInstanceName string
	// RootCertName is the certificate name passed to that provider.
	RootCertName string
	// RequireClientCertificate is require_client_certificate: a client
	// without a certificate fails the handshake. When false and
	// RootInstanceName is set, a client certificate is asked for and
	// verified if given. Never set without RootInstanceName.
	RequireClientCertificate bool
}

// serverSecurityFromProto validates the transport socket of a filter chain
// (R-26.4, gRFC A29) and returns its security config, nil when ts is nil
// (the server's fallback credentials). Error fields are relative to ts.
func serverSecurityFromProto(ts *v3corepb.TransportSocket) (*ServerSecurityConfig, error) {
	if ts == nil {
		return nil, nil
	}
	if ts.GetName() != tlsTransportSocketName {
		return nil, invalid("name", "%q, want %q", ts.GetName(), tlsTransportSocketName)
	}
	tc := ts.GetTypedConfig()
	if tc.GetTypeUrl() != downstreamTLSTypeURL {
		return nil, invalid("typed_config", "type URL %q, want %q", tc.GetTypeUrl(), downstreamTLSTypeURL)
	}
	ctx := &v3tlspb.DownstreamTlsContext{}
	if err := proto.Unmarshal(tc.GetValue(), ctx); err != nil {
		return nil, invalid("typed_config", "decoding DownstreamTlsContext: %w", err)
	}
	if ctx.GetRequireSni().GetValue() {
		return nil, invalid("typed_config.require_sni", "true is not supported")
	}
	if p := ctx.GetOcspStaplePolicy(); p != v3tlspb.DownstreamTlsContext_LENIENT_STAPLING {
		return nil, invalid("typed_config.ocsp_staple_policy", "%s is not supported, only LENIENT_STAPLING", p)
	}
	const field = "typed_config.common_tls_context"
	sc, a29Err, err := commonTLS(field, ctx.GetCommonTlsContext())
	if err != nil {
		return nil, err
	}
	if a29Err != nil && sc.isEmpty() {
		return nil, a29Err
	}
	switch {
	case sc.SystemRootCerts:
		// gRFC A82: system roots are for clients; a server NACKs them.
		return nil, invalid(field+".validation_context.system_root_certs", "not supported on a server, use ca_certificate_provider_instance")
	case len(sc.SubjectAltNameMatchers) != 0:
		return nil, invalid(field+".validation_context.match_subject_alt_names", "not supported on a server")
	case sc.IdentityInstanceName == "":
		return nil, invalid(field+".tls_certificate_provider_instance", "missing: a server needs an identity certificate")
	}
	out := &ServerSecurityConfig{
		IdentityInstanceName: sc.IdentityInstanceName,
		IdentityCertName:     sc.IdentityCertName,
		RootInstanceName:     sc.RootInstanceName,
		RootCertName:         sc.RootCertName,
	}
	if ctx.GetRequireClientCertificate().GetValue() {
		if out.RootInstanceName == "" {
			return nil, invalid("typed_config.require_client_certificate", "true without a root certificate provider instance (validation_context.ca_certificate_provider_instance) to verify clients with")
		}
		out.RequireClientCertificate = true
	}
	return out, nil
}

// checkServerCertificateProviders returns an error when sc names a
// certificate provider instance that is not in instances, the bootstrap's
// certificate_providers (gRFC A29: the Listener is NACKed). Error fields
// are relative to the filter chain.
func checkServerCertificateProviders(sc *ServerSecurityConfig, instances map[string]bool) error {
	if sc == nil {
		return nil
	}
	const field = "transport_socket.typed_config.common_tls_context"
	if !instances[sc.IdentityInstanceName] {
		return invalid(field+".tls_certificate_provider_instance.instance_name", "identity certificate provider instance %q is not in the bootstrap's certificate_providers", sc.IdentityInstanceName)
	}
	if sc.RootInstanceName != "" && !instances[sc.RootInstanceName] {
		return invalid(field+".validation_context.ca_certificate_provider_instance.instance_name", "root certificate provider instance %q is not in the bootstrap's certificate_providers", sc.RootInstanceName)
	}
	return nil
}
