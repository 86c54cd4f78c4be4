// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"google.golang.org/protobuf/proto"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

const (
	// tlsTransportSocketName is the only transport socket gRPC knows.
	tlsTransportSocketName = "envoy.transport_sockets.tls"
	upstreamTLSTypeURL     = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
)

// SecurityConfig is the TLS configuration of a cluster (gRFC A29): where
// the client gets its root certificates, and its identity certificate for
// mutual TLS, from certificate provider instances of the bootstrap.
type SecurityConfig struct {
	// RootInstanceName names the certificate provider instance (in the
	// bootstrap's certificate_providers) of the root certificates that
	// validate servers; empty exactly when SystemRootCerts is set.
	RootInstanceName string
	// RootCertName is the certificate name passed to that provider.
	RootCertName string
	// IdentityInstanceName names the certificate provider instance of the
	// client's identity certificate, "" when the client presents none.
	IdentityInstanceName string
	// IdentityCertName is the certificate name passed to that provider.
	IdentityCertName string
	// SubjectAltNameMatchers are match_subject_alt_names: the server's
	// certificate must have a SAN that one of them matches; nil means any
	// SAN.
	SubjectAltNameMatchers []StringMatcher
	// SystemRootCerts reports that servers are validated with the system's
	// root certificates (validation_context.system_root_certs, gRFC A82):
	// set only when no ca_certificate_provider_instance is given, which
	// takes precedence.
	SystemRootCerts bool
}

// securityFromCluster validates the transport socket of c (R-17.4, gRFC
// A29) and returns its security config, nil when there is no transport
// socket (plaintext, or the channel's fallback credentials). Error fields
// are relative to the Cluster.
//
// System root certificates (gRFC A82) are supported, as grpc-go does with
// GRPC_EXPERIMENTAL_XDS_SYSTEM_ROOT_CERTS: validation_context's
// system_root_certs, when ca_certificate_provider_instance is unset, sets
// SystemRootCerts. As grpc-go with its defaults, the HTTP/1.1 proxy
// transport socket (GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT) and SNI
// (GRPC_EXPERIMENTAL_XDS_SNI) are not supported: the proxy socket is an
// unsupported type, and sni is ignored.
func securityFromCluster(c *v3clusterpb.Cluster) (*SecurityConfig, error) {
	if len(c.GetTransportSocketMatches()) != 0 {
		return nil, invalid("transport_socket_matches", "not supported")
	}
	ts := c.GetTransportSocket()
	if ts == nil {
		return nil, nil
	}
	if ts.GetName() != tlsTransportSocketName {
		return nil, invalid("transport_socket.name", "%q, want %q", ts.GetName(), tlsTransportSocketName)
	}
	tc := ts.GetTypedConfig()
	if tc.GetTypeUrl() != upstreamTLSTypeURL {
		return nil, invalid("transport_socket.typed_config", "type URL %q, want %q", tc.GetTypeUrl(), upstreamTLSTypeURL)
	}
	ctx := &v3tlspb.UpstreamTlsContext{}
	if err := proto.Unmarshal(tc.GetValue(), ctx); err != nil {
		return nil, invalid("transport_socket.typed_config", "decoding UpstreamTlsContext: %w", err)
	}
	const field = "transport_socket.typed_config.common_tls_context"
	sc, a29Err, err := commonTLS(field, ctx.GetCommonTlsContext())
	if err != nil {
		return nil, err
	}
	if sc.RootInstanceName == "" && !sc.SystemRootCerts {
		if a29Err != nil {
			return nil, a29Err
		}
		return nil, invalid(field, "no root certificate provider instance (validation_context.ca_certificate_provider_instance) and no system_root_certs")
	}
	return sc, nil
}

func (sc *SecurityConfig) isEmpty() bool {
	return sc.RootInstanceName == "" && sc.RootCertName == "" && sc.IdentityInstanceName == "" &&
		sc.IdentityCertName == "" && len(sc.SubjectAltNameMatchers) == 0 && !sc.SystemRootCerts
}

// checkCertificateProviders returns an error when sc names a certificate
// provider instance that is not in instances, the bootstrap's
// certificate_providers (gRFC A29: the Cluster is NACKed). Error fields
// are relative to the Cluster.
func checkCertificateProviders(sc *SecurityConfig, instances map[string]bool) error {
	if sc == nil {
		return nil
	}
	const field = "transport_socket.typed_config.common_tls_context"
	if sc.IdentityInstanceName != "" && !instances[sc.IdentityInstanceName] {
		return invalid(field+".tls_certificate_provider_instance.instance_name", "identity certificate provider instance %q is not in the bootstrap's certificate_providers", sc.IdentityInstanceName)
	}
	if sc.RootInstanceName != "" && !instances[sc.RootInstanceName] {
		return invalid(field+".validation_context.ca_certificate_provider_instance.instance_name", "root certificate provider instance %q is not in the bootstrap's certificate_providers", sc.RootInstanceName)
	}
	return nil
}

// securityFromCommon reads the gRFC A29 fields of common; error fields
// are relative to it.
func securityFromCommon(common *v3tlspb.CommonTlsContext) (*SecurityConfig, error) {
	identity := common.GetTlsCertificateProviderInstance()
	if identity == nil && len(common.GetTlsCertificates()) != 0 {
		return nil, invalid("tls_certificates", "not supported, use tls_certificate_provider_instance")
	}
	if identity == nil && len(common.GetTlsCertificateSdsSecretConfigs()) != 0 {
		return nil, invalid("tls_certificate_sds_secret_configs", "not supported, use tls_certificate_provider_instance")
	}
	sc := &SecurityConfig{IdentityInstanceName: identity.GetInstanceName(), IdentityCertName: identity.GetCertificateName()}
	var (
		vc    *v3tlspb.CertificateValidationContext
		field string
	)
	switch t := common.GetValidationContextType().(type) {
	case *v3tlspb.CommonTlsContext_ValidationContext:
		vc, field = t.ValidationContext, "validation_context"
	case *v3tlspb.CommonTlsContext_CombinedValidationContext:
		vc, field = t.CombinedValidationContext.GetDefaultValidationContext(), "combined_validation_context.default_validation_context"
	case nil:
		return sc, nil
	default:
		return nil, invalid("", "unsupported validation context %s", oneofName(common.ProtoReflect(), "validation_context_type"))
	}
	switch {
	case len(vc.GetVerifyCertificateSpki()) != 0:
		return nil, invalid(field+".verify_certificate_spki", "not supported")
	case len(vc.GetVerifyCertificateHash()) != 0:
		return nil, invalid(field+".verify_certificate_hash", "not supported")
	case vc.GetRequireSignedCertificateTimestamp().GetValue():
		return nil, invalid(field+".require_signed_certificate_timestamp", "not supported")
	case vc.GetCrl() != nil:
		return nil, invalid(field+".crl", "not supported")
	case vc.GetCustomValidatorConfig() != nil:
		return nil, invalid(field+".custom_validator_config", "not supported")
	}
	switch root := vc.GetCaCertificateProviderInstance(); {
	case root != nil:
		sc.RootInstanceName, sc.RootCertName = root.GetInstanceName(), root.GetCertificateName()
	case vc.GetSystemRootCerts() != nil:
		sc.SystemRootCerts = true // gRFC A82
	default:
		return nil, invalid(field+".ca_certificate_provider_instance", "missing, and system_root_certs is not set")
	}
	ms, err := sanMatchers(vc)
	if err != nil {
		return nil, withFieldPrefix(field, err)
	}
	sc.SubjectAltNameMatchers = ms
	return sc, nil
}

// securityFromDeprecated reads the deprecated certificate provider fields
// of common, as grpc-go still does; error fields are relative to it.
func securityFromDeprecated(common *v3tlspb.CommonTlsContext) (*SecurityConfig, error) {
	sc := &SecurityConfig{}
	//lint:ignore SA1019 gRFC A29: gRPC still reads the deprecated certificate provider and SAN fields
	if id := common.GetTlsCertificateCertificateProviderInstance(); id != nil {
		sc.IdentityInstanceName, sc.IdentityCertName = id.GetInstanceName(), id.GetCertificateName()
	}
	switch t := common.GetValidationContextType().(type) {
	case *v3tlspb.CommonTlsContext_CombinedValidationContext:
		if def := t.CombinedValidationContext.GetDefaultValidationContext(); def != nil {
			ms, err := sanMatchers(def)
			if err != nil {
				return nil, withFieldPrefix("combined_validation_context.default_validation_context", err)
			}
			sc.SubjectAltNameMatchers = ms
		}
		//lint:ignore SA1019 gRFC A29: gRPC still reads the deprecated certificate provider and SAN fields
		if pi := t.CombinedValidationContext.GetValidationContextCertificateProviderInstance(); pi != nil {
			sc.RootInstanceName, sc.RootCertName = pi.GetInstanceName(), pi.GetCertificateName()
		}
	case *v3tlspb.CommonTlsContext_ValidationContextCertificateProviderInstance:
		//lint:ignore SA1019 gRFC A29: gRPC still reads the deprecated certificate provider and SAN fields
		sc.RootInstanceName, sc.RootCertName = t.ValidationContextCertificateProviderInstance.GetInstanceName(), t.ValidationContextCertificateProviderInstance.GetCertificateName()
	case nil:
	default:
		return nil, invalid("", "unsupported validation context %s", oneofName(common.ProtoReflect(), "validation_context_type"))
	}
	return sc, nil
}

// sanMatchers converts match_subject_alt_names; error fields are relative
// to the CertificateValidationContext.
func sanMatchers(vc *v3tlspb.CertificateValidationContext) ([]StringMatcher, error) {
	//lint:ignore SA1019 gRFC A29: gRPC still reads the deprecated certificate provider and SAN fields
	sms := vc.GetMatchSubjectAltNames()
	if len(sms) == 0 {
		return nil, nil
	}
	out := make([]StringMatcher, len(sms))
	for i, m := range sms {
		sm, err := stringMatcherFromProto(m)
		if err != nil {
			return nil, withFieldPrefix(indexed("match_subject_alt_names", i), err)
		}
		out[i] = sm
	}
	return out, nil
}
