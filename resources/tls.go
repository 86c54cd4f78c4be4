// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"google.golang.org/protobuf/proto"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3http11proxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

const (
	// tlsTransportSocketName is the name of the TLS transport socket.
	tlsTransportSocketName = "envoy.transport_sockets.tls"
	upstreamTLSTypeURL     = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	// http11ProxyTypeURL is the type of the HTTP/1.1 proxy transport
	// socket (HTTP CONNECT, gRFC A86), which wraps another.
	http11ProxyTypeURL = "type.googleapis.com/envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport"

	// maxSNILength is the longest UpstreamTlsContext.sni accepted, as
	// Envoy's (gRFC A101).
	maxSNILength = 255
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

	// SNI is UpstreamTlsContext.sni: the server name the client sends in
	// its TLS handshakes (gRFC A101), "" for none; at most 255 bytes.
	// AutoHostSNI takes precedence for an endpoint that has a host name.
	SNI string
	// AutoHostSNI is UpstreamTlsContext.auto_host_sni: the SNI of a
	// handshake is the host name of its endpoint (Endpoint.Hostname, or
	// the DNS name of a LOGICAL_DNS cluster, without port) when it has
	// one, else SNI (gRFC A101).
	AutoHostSNI bool
	// AutoSNISANValidation is UpstreamTlsContext.auto_sni_san_validation:
	// when a handshake sends an SNI, the server certificate must have a
	// DNS SAN that matches it, in place of SubjectAltNameMatchers; without
	// an SNI, SubjectAltNameMatchers apply as usual (gRFC A101).
	AutoSNISANValidation bool
}

// securityFromCluster validates the transport socket of c (R-17.4, gRFC
// A29) and returns its security config, nil when there is no TLS
// (plaintext, or the channel's fallback credentials), and whether the
// connections go through an HTTP CONNECT proxy. Error fields are relative
// to the Cluster.
//
// System root certificates (gRFC A82) are supported, as grpc-go does with
// GRPC_EXPERIMENTAL_XDS_SYSTEM_ROOT_CERTS: validation_context's
// system_root_certs, when ca_certificate_provider_instance is unset, sets
// SystemRootCerts. SNI (gRFC A101) is read, as grpc-go does with
// GRPC_EXPERIMENTAL_XDS_SNI. The HTTP/1.1 proxy transport socket (gRFC
// A86) is read only with httpConnect (WithHTTPConnect); without it, it is
// rejected as grpc-go rejects it when GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT
// is off: by its name, else by its type.
func securityFromCluster(c *v3clusterpb.Cluster, httpConnect bool) (sc *SecurityConfig, proxied bool, err error) {
	if len(c.GetTransportSocketMatches()) != 0 {
		return nil, false, invalid("transport_socket_matches", "not supported")
	}
	ts := c.GetTransportSocket()
	if ts == nil {
		return nil, false, nil
	}
	field := "transport_socket"
	if tc := ts.GetTypedConfig(); httpConnect && tc.GetTypeUrl() == http11ProxyTypeURL {
		// gRFC A86: the wrapper, whatever its name, and the transport
		// socket it wraps, validated as if it were the Cluster's own.
		proxy := &v3http11proxypb.Http11ProxyUpstreamTransport{}
		if err := proto.Unmarshal(tc.GetValue(), proxy); err != nil {
			return nil, false, invalid("transport_socket.typed_config", "decoding Http11ProxyUpstreamTransport: %w", err)
		}
		if ts = proxy.GetTransportSocket(); ts == nil {
			return nil, true, nil
		}
		field, proxied = "transport_socket.typed_config.transport_socket", true
	}
	if ts.GetName() != tlsTransportSocketName {
		return nil, false, invalid(field+".name", "%q, want %q", ts.GetName(), tlsTransportSocketName)
	}
	tc := ts.GetTypedConfig()
	if tc.GetTypeUrl() != upstreamTLSTypeURL {
		return nil, false, invalid(field+".typed_config", "type URL %q, want %q", tc.GetTypeUrl(), upstreamTLSTypeURL)
	}
	ctx := &v3tlspb.UpstreamTlsContext{}
	if err := proto.Unmarshal(tc.GetValue(), ctx); err != nil {
		return nil, false, invalid(field+".typed_config", "decoding UpstreamTlsContext: %w", err)
	}
	common := field + ".typed_config.common_tls_context"
	sc, a29Err, err := commonTLS(common, ctx.GetCommonTlsContext())
	if err != nil {
		return nil, false, err
	}
	if sc.RootInstanceName == "" && !sc.SystemRootCerts {
		if a29Err != nil {
			return nil, false, a29Err
		}
		return nil, false, invalid(common, "no root certificate provider instance (validation_context.ca_certificate_provider_instance) and no system_root_certs")
	}
	// gRFC A101, after the common TLS context as in grpc-go.
	if sni := ctx.GetSni(); len(sni) > maxSNILength {
		return nil, false, invalid(field+".typed_config.sni", "%d bytes, at most %d are allowed", len(sni), maxSNILength)
	}
	sc.SNI, sc.AutoHostSNI, sc.AutoSNISANValidation = ctx.GetSni(), ctx.GetAutoHostSni(), ctx.GetAutoSniSanValidation()
	return sc, proxied, nil
}

func (sc *SecurityConfig) isEmpty() bool {
	return sc.RootInstanceName == "" && sc.RootCertName == "" && sc.IdentityInstanceName == "" &&
		sc.IdentityCertName == "" && len(sc.SubjectAltNameMatchers) == 0 && !sc.SystemRootCerts
}

// checkCertificateProviders returns an error when the security config of
// c names a certificate provider instance that is not in instances, the
// bootstrap's certificate_providers (gRFC A29: the Cluster is NACKed).
// Error fields are relative to the Cluster.
func checkCertificateProviders(c *Cluster, instances map[string]bool) error {
	sc := c.Security
	if sc == nil {
		return nil
	}
	field := "transport_socket.typed_config.common_tls_context"
	if c.HTTPConnect {
		field = "transport_socket.typed_config.transport_socket.typed_config.common_tls_context"
	}
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
