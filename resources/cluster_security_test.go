// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build resources with the deprecated fields gRPC still accepts.

package resources

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v1udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3wrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	v3leastrequestpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	v3pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	v3ringhashpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	v3roundrobinpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	v3wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	v3http11proxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// withTLS sets an UpstreamTlsContext with common as the transport socket.
func withTLS(t testing.TB, common *v3tlspb.CommonTlsContext) func(*v3clusterpb.Cluster) {
	return func(c *v3clusterpb.Cluster) {
		c.TransportSocket = &v3corepb.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &v3tlspb.UpstreamTlsContext{CommonTlsContext: common})},
		}
	}
}

func provider(name, cert string) *v3tlspb.CertificateProviderPluginInstance {
	return &v3tlspb.CertificateProviderPluginInstance{InstanceName: name, CertificateName: cert}
}

// validationContext returns a CommonTlsContext whose validation_context is
// vc, with an identity provider.
func validationContext(vc *v3tlspb.CertificateValidationContext) *v3tlspb.CommonTlsContext {
	return &v3tlspb.CommonTlsContext{
		TlsCertificateProviderInstance: provider("id", "id-cert"),
		ValidationContextType:          &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: vc},
	}
}

// rootVC returns a validation context with a root provider, changed by
// mod.
func rootVC(mod func(*v3tlspb.CertificateValidationContext)) *v3tlspb.CommonTlsContext {
	vc := &v3tlspb.CertificateValidationContext{CaCertificateProviderInstance: provider("root", "root-cert")}
	if mod != nil {
		mod(vc)
	}
	return validationContext(vc)
}

func withOutlier(od *v3clusterpb.OutlierDetection) func(*v3clusterpb.Cluster) {
	return func(c *v3clusterpb.Cluster) { c.OutlierDetection = od }
}

// clusterSecurityCases are the cases of transport sockets (gRFC A29) and
// outlier detection (gRFC A50) of.
func clusterSecurityCases(t testing.TB) []decodeCase[*Cluster] {
	rr := LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true}
	want := func(mod func(*Cluster)) *Cluster {
		c := &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024}
		mod(c)
		return c
	}
	full := &SecurityConfig{RootInstanceName: "root", RootCertName: "root-cert", IdentityInstanceName: "id", IdentityCertName: "id-cert"}
	san := func(sm *v3matcherpb.StringMatcher) func(*v3tlspb.CertificateValidationContext) {
		return func(vc *v3tlspb.CertificateValidationContext) {
			vc.MatchSubjectAltNames = []*v3matcherpb.StringMatcher{sm}
		}
	}
	const tlsField = "transport_socket.typed_config.common_tls_context"
	return []decodeCase[*Cluster]{
		{
			// grpc-go happy-case-with-validation-context-provider-instance-using-new-fields.
			rule: "R-17.4",
			name: "tls with root and identity providers and SAN matchers",
			give: edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) {
				vc.MatchSubjectAltNames = []*v3matcherpb.StringMatcher{
					{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "a.example.com"}},
					{MatchPattern: &v3matcherpb.StringMatcher_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: ".*\\.example\\.com"}}, IgnoreCase: true},
				}
				// Ignored fields, as in grpc-go.
				vc.TrustedCa = &v3corepb.DataSource{Specifier: &v3corepb.DataSource_Filename{Filename: "/ca.pem"}}
			}))),
			want: want(func(c *Cluster) {
				c.Security = &SecurityConfig{RootInstanceName: "root", RootCertName: "root-cert", IdentityInstanceName: "id", IdentityCertName: "id-cert", SubjectAltNameMatchers: []StringMatcher{
					{Kind: StringMatchExact, Value: "a.example.com"},
					{Kind: StringMatchSafeRegex, Value: ".*\\.example\\.com", Regex: fullRE(t, ".*\\.example\\.com")},
				}}
			}),
		},
		{
			// grpc-go happy-case-with-combined-validation-context-using-new-fields.
			rule: "R-17.4",
			name: "tls with a combined validation context",
			give: edsCluster("c", "s", withTLS(t, &v3tlspb.CommonTlsContext{
				TlsCertificateProviderInstance: provider("id", "id-cert"),
				ValidationContextType: &v3tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &v3tlspb.CommonTlsContext_CombinedCertificateValidationContext{
					DefaultValidationContext: &v3tlspb.CertificateValidationContext{CaCertificateProviderInstance: provider("root", "root-cert")},
				}},
			})),
			want: want(func(c *Cluster) { c.Security = full }),
		},
		{
			// grpc-go happy-case-with-no-identity-certs-using-new-fields.
			rule: "R-17.4",
			name: "tls without identity",
			give: edsCluster("c", "s", withTLS(t, &v3tlspb.CommonTlsContext{
				ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: &v3tlspb.CertificateValidationContext{CaCertificateProviderInstance: provider("root", "")}},
			})),
			want: want(func(c *Cluster) { c.Security = &SecurityConfig{RootInstanceName: "root"} }),
		},
		{
			// grpc-go happy-case-with-validation-context-provider-instance-using-deprecated-fields.
			rule: "R-17.4",
			name: "tls with the deprecated provider fields",
			give: edsCluster("c", "s", withTLS(t, &v3tlspb.CommonTlsContext{
				TlsCertificateCertificateProviderInstance: &v3tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "id", CertificateName: "id-cert"},
				ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContextCertificateProviderInstance{
					ValidationContextCertificateProviderInstance: &v3tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "root", CertificateName: "root-cert"},
				},
			})),
			want: want(func(c *Cluster) { c.Security = full }),
		},
		{
			// gRFC A50: an empty outlier_detection gets every default.
			rule: "R-17.4",
			name: "outlier detection defaults",
			give: edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{})),
			want: want(func(c *Cluster) {
				c.OutlierDetection = &OutlierDetection{
					Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10,
					SuccessRate:    &SuccessRateEjection{StdevFactor: 1900, EnforcementPercentage: 100, MinimumHosts: 5, RequestVolume: 100},
					Consecutive5xx: &ConsecutiveEjection{Threshold: 5, EnforcementPercentage: 100}, // Envoy's default
				}
			}),
		},
		{
			// grpc-go every-field-set-non-zero; the bounds are inclusive.
			rule: "R-17.4",
			name: "outlier detection with every field",
			give: edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{
				Interval: durationpb.New(time.Second), BaseEjectionTime: durationpb.New(2 * time.Second), MaxEjectionTime: durationpb.New(0),
				MaxEjectionPercent: wrapperspb.UInt32(100), EnforcingSuccessRate: wrapperspb.UInt32(100), SuccessRateStdevFactor: wrapperspb.UInt32(1),
				SuccessRateMinimumHosts: wrapperspb.UInt32(2), SuccessRateRequestVolume: wrapperspb.UInt32(3),
				FailurePercentageThreshold: wrapperspb.UInt32(100), EnforcingFailurePercentage: wrapperspb.UInt32(100),
				FailurePercentageMinimumHosts: wrapperspb.UInt32(4), FailurePercentageRequestVolume: wrapperspb.UInt32(5),
			})),
			want: want(func(c *Cluster) {
				c.OutlierDetection = &OutlierDetection{
					Interval: time.Second, BaseEjectionTime: 2 * time.Second, MaxEjectionPercent: 100,
					SuccessRate:       &SuccessRateEjection{StdevFactor: 1, EnforcementPercentage: 100, MinimumHosts: 2, RequestVolume: 3},
					FailurePercentage: &FailurePercentageEjection{Threshold: 100, EnforcementPercentage: 100, MinimumHosts: 4, RequestVolume: 5},
					Consecutive5xx:    &ConsecutiveEjection{Threshold: 5, EnforcementPercentage: 100},
				}
			}),
		},
		{
			// gRFC A50: enforcing_success_rate 0 disables success rate
			// ejection; failure percentage ejection needs a non-zero
			// enforcing_failure_percentage.
			rule: "R-17.4",
			name: "outlier detection with both algorithms off",
			give: edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(0), EnforcingFailurePercentage: wrapperspb.UInt32(0)})),
			want: want(func(c *Cluster) {
				c.OutlierDetection = &OutlierDetection{Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10,
					Consecutive5xx: &ConsecutiveEjection{Threshold: 5, EnforcementPercentage: 100}}
			}),
		},

		// Invalid transport sockets (grpc-go TestValidateClusterWithSecurityConfig
		// and TestSecurityConfigFromCommonTLSContextUsingNewFields_ErrorCases).
		{
			rule: "R-17.4",
			name: "transport socket matches",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) {
				c.TransportSocketMatches = []*v3clusterpb.Cluster_TransportSocketMatch{{Name: "m"}}
			}),
			wantErr: "transport_socket_matches: not supported",
		},
		{
			rule: "R-17.4",
			name: "transport socket with another name",
			give: edsCluster("c", "s", withTLS(t, rootVC(nil)), func(c *v3clusterpb.Cluster) {
				c.TransportSocket.Name = "envoy.transport_sockets.alts"
			}),
			wantErr: `transport_socket.name: "envoy.transport_sockets.alts", want "envoy.transport_sockets.tls"`,
		},
		{
			rule: "R-17.4",
			name: "transport socket of another type",
			give: edsCluster("c", "s", withTLS(t, rootVC(nil)), func(c *v3clusterpb.Cluster) {
				c.TransportSocket.ConfigType = &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &v3tlspb.DownstreamTlsContext{})}
			}),
			wantErr: `transport_socket.typed_config: type URL "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"`,
		},
		{
			// the HTTP/1.1 proxy wrapper needs
			// GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT, off by default.
			rule: "R-17.4",
			name: "http 1.1 proxy transport socket",
			give: edsCluster("c", "s", withTLS(t, rootVC(nil)), func(c *v3clusterpb.Cluster) {
				c.TransportSocket.ConfigType = &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &v3http11proxypb.Http11ProxyUpstreamTransport{TransportSocket: c.TransportSocket})}
			}),
			wantErr: `transport_socket.typed_config: type URL "type.googleapis.com/envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport"`,
		},
		{
			rule: "R-17.4",
			name: "undecodable upstream tls context",
			give: edsCluster("c", "s", withTLS(t, rootVC(nil)), func(c *v3clusterpb.Cluster) {
				c.TransportSocket.ConfigType = &v3corepb.TransportSocket_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: upstreamTLSTypeURL, Value: []byte{1, 2, 3, 4}}}
			}),
			wantErr: "transport_socket.typed_config: decoding UpstreamTlsContext",
		},
		{
			rule:    "R-17.4",
			name:    "no common tls context",
			give:    edsCluster("c", "s", withTLS(t, nil)),
			wantErr: tlsField + ": missing",
		},
		{
			rule:    "R-17.4",
			name:    "tls params",
			give:    edsCluster("c", "s", withTLS(t, func() *v3tlspb.CommonTlsContext { c := rootVC(nil); c.TlsParams = &v3tlspb.TlsParameters{}; return c }())),
			wantErr: tlsField + ".tls_params: not supported",
		},
		{
			rule: "R-17.4",
			name: "custom handshaker",
			give: edsCluster("c", "s", withTLS(t, func() *v3tlspb.CommonTlsContext {
				c := rootVC(nil)
				c.CustomHandshaker = &v3corepb.TypedExtensionConfig{Name: "h"}
				return c
			}())),
			wantErr: tlsField + ".custom_handshaker: not supported",
		},
		{
			rule: "R-17.4",
			name: "tls certificates without a provider",
			give: edsCluster("c", "s", withTLS(t, func() *v3tlspb.CommonTlsContext {
				c := rootVC(nil)
				c.TlsCertificateProviderInstance = nil
				c.TlsCertificates = []*v3tlspb.TlsCertificate{{}}
				return c
			}())),
			wantErr: tlsField + ".tls_certificates: not supported",
		},
		{
			rule: "R-17.4",
			name: "tls certificate sds secret configs",
			give: edsCluster("c", "s", withTLS(t, func() *v3tlspb.CommonTlsContext {
				c := rootVC(nil)
				c.TlsCertificateProviderInstance = nil
				c.TlsCertificateSdsSecretConfigs = []*v3tlspb.SdsSecretConfig{{Name: "s"}}
				return c
			}())),
			wantErr: tlsField + ".tls_certificate_sds_secret_configs: not supported",
		},
		{
			rule: "R-17.4",
			name: "sds validation context",
			give: edsCluster("c", "s", withTLS(t, &v3tlspb.CommonTlsContext{
				ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContextSdsSecretConfig{ValidationContextSdsSecretConfig: &v3tlspb.SdsSecretConfig{Name: "s"}},
			})),
			wantErr: tlsField + ": unsupported validation context validation_context_sds_secret_config",
		},
		{
			// gRFC A82: system_root_certs without a root provider
			// (grpc-go with GRPC_EXPERIMENTAL_XDS_SYSTEM_ROOT_CERTS).
			rule: "R-17.4",
			name: "system root certs",
			give: edsCluster("c", "s", withTLS(t, validationContext(&v3tlspb.CertificateValidationContext{
				SystemRootCerts:      &v3tlspb.CertificateValidationContext_SystemRootCerts{},
				MatchSubjectAltNames: []*v3matcherpb.StringMatcher{{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "a.example.com"}}},
			}))),
			want: want(func(c *Cluster) {
				c.Security = &SecurityConfig{SystemRootCerts: true, IdentityInstanceName: "id", IdentityCertName: "id-cert",
					SubjectAltNameMatchers: []StringMatcher{{Kind: StringMatchExact, Value: "a.example.com"}}}
			}),
		},
		{
			// gRFC A82: a root provider wins over system_root_certs.
			rule: "R-17.4",
			name: "root provider and system root certs",
			give: edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) {
				vc.SystemRootCerts = &v3tlspb.CertificateValidationContext_SystemRootCerts{}
			}))),
			want: want(func(c *Cluster) { c.Security = full }),
		},
		{
			// a root provider or system_root_certs is required.
			rule:    "R-17.4",
			name:    "validation context without a root provider",
			give:    edsCluster("c", "s", withTLS(t, validationContext(&v3tlspb.CertificateValidationContext{}))),
			wantErr: tlsField + ".validation_context.ca_certificate_provider_instance: missing, and system_root_certs is not set",
		},
		{
			// grpc-go transport-socket-without-validation-context.
			rule:    "R-17.4",
			name:    "no validation context",
			give:    edsCluster("c", "s", withTLS(t, &v3tlspb.CommonTlsContext{TlsCertificateProviderInstance: provider("id", "")})),
			wantErr: tlsField + ": no root certificate provider instance",
		},
		{
			rule:    "R-17.4",
			name:    "verify certificate spki",
			give:    edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) { vc.VerifyCertificateSpki = []string{"x"} }))),
			wantErr: tlsField + ".validation_context.verify_certificate_spki: not supported",
		},
		{
			rule:    "R-17.4",
			name:    "verify certificate hash",
			give:    edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) { vc.VerifyCertificateHash = []string{"x"} }))),
			wantErr: tlsField + ".validation_context.verify_certificate_hash: not supported",
		},
		{
			rule: "R-17.4",
			name: "require signed certificate timestamp",
			give: edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) {
				vc.RequireSignedCertificateTimestamp = wrapperspb.Bool(true)
			}))),
			wantErr: tlsField + ".validation_context.require_signed_certificate_timestamp: not supported",
		},
		{
			rule: "R-17.4",
			name: "crl",
			give: edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) {
				vc.Crl = &v3corepb.DataSource{Specifier: &v3corepb.DataSource_InlineString{InlineString: "x"}}
			}))),
			wantErr: tlsField + ".validation_context.crl: not supported",
		},
		{
			rule: "R-17.4",
			name: "custom validator",
			give: edsCluster("c", "s", withTLS(t, rootVC(func(vc *v3tlspb.CertificateValidationContext) {
				vc.CustomValidatorConfig = &v3corepb.TypedExtensionConfig{Name: "v"}
			}))),
			wantErr: tlsField + ".validation_context.custom_validator_config: not supported",
		},
		{
			// grpc-go empty-prefix-in-matching-SAN.
			rule:    "R-17.4",
			name:    "SAN matcher with an empty prefix",
			give:    edsCluster("c", "s", withTLS(t, rootVC(san(&v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{}})))),
			wantErr: tlsField + ".validation_context.match_subject_alt_names[0].prefix: empty",
		},
		{
			// grpc-go invalid-regex-in-matching-SAN-with-new-fields.
			rule: "R-17.4",
			name: "SAN matcher with a bad regex",
			give: edsCluster("c", "s", withTLS(t, rootVC(san(&v3matcherpb.StringMatcher{
				MatchPattern: &v3matcherpb.StringMatcher_SafeRegex{SafeRegex: &v3matcherpb.RegexMatcher{Regex: "??"}},
			})))),
			wantErr: tlsField + ".validation_context.match_subject_alt_names[0].safe_regex.regex: invalid RE2 pattern",
		},

		// Invalid outlier detection (grpc-go TestOutlierDetectionUnmarshaling).
		{
			rule:    "R-17.4",
			name:    "outlier interval negative",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{Interval: durationpb.New(-time.Second)})),
			wantErr: "outlier_detection.interval: negative duration",
		},
		{
			rule:    "R-17.4",
			name:    "outlier interval overflows",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{Interval: &durationpb.Duration{Seconds: 315576000001}})),
			wantErr: "outlier_detection.interval: invalid duration",
		},
		{
			rule:    "R-17.4",
			name:    "outlier base ejection time negative",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{BaseEjectionTime: durationpb.New(-time.Second)})),
			wantErr: "outlier_detection.base_ejection_time: negative duration",
		},
		{
			rule:    "R-17.4",
			name:    "outlier max ejection time negative",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{MaxEjectionTime: durationpb.New(-time.Second)})),
			wantErr: "outlier_detection.max_ejection_time: negative duration",
		},
		{
			rule:    "R-17.4",
			name:    "outlier max ejection percent above 100",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{MaxEjectionPercent: wrapperspb.UInt32(101)})),
			wantErr: "outlier_detection.max_ejection_percent: 101, must be at most 100",
		},
		{
			rule:    "R-17.4",
			name:    "outlier enforcing success rate above 100",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(101)})),
			wantErr: "outlier_detection.enforcing_success_rate: 101, must be at most 100",
		},
		{
			rule:    "R-17.4",
			name:    "outlier failure percentage threshold above 100",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{FailurePercentageThreshold: wrapperspb.UInt32(101)})),
			wantErr: "outlier_detection.failure_percentage_threshold: 101, must be at most 100",
		},
		{
			rule:    "R-17.4",
			name:    "outlier enforcing failure percentage above 100",
			give:    edsCluster("c", "s", withOutlier(&v3clusterpb.OutlierDetection{EnforcingFailurePercentage: wrapperspb.UInt32(101)})),
			wantErr: "outlier_detection.enforcing_failure_percentage: 101, must be at most 100",
		},
	}
}

// lbPolicies returns a load_balancing_policy with the given configs.
func lbPolicies(t testing.TB, cfgs ...proto.Message) *v3clusterpb.LoadBalancingPolicy {
	p := &v3clusterpb.LoadBalancingPolicy{}
	for _, c := range cfgs {
		a, ok := c.(*anypb.Any)
		if !ok {
			a = mustAny(t, c)
		}
		p.Policies = append(p.Policies, &v3clusterpb.LoadBalancingPolicy_Policy{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "p", TypedConfig: a}})
	}
	return p
}

func withLBPolicy(p *v3clusterpb.LoadBalancingPolicy) func(*v3clusterpb.Cluster) {
	return func(c *v3clusterpb.Cluster) { c.LoadBalancingPolicy = p }
}

// clusterLBCases are the cases of load_balancing_policy (R-17.4, gRFC A52).
func clusterLBCases(t testing.TB) []decodeCase[*Cluster] {
	want := func(p LBPolicy) *Cluster {
		return &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: p, MaxRequests: 1024}
	}
	ringHash := func(min, max uint64) *v3ringhashpb.RingHash {
		rh := &v3ringhashpb.RingHash{HashFunction: v3ringhashpb.RingHash_XX_HASH}
		if min != 0 {
			rh.MinimumRingSize = wrapperspb.UInt64(min)
		}
		if max != 0 {
			rh.MaximumRingSize = wrapperspb.UInt64(max)
		}
		return rh
	}
	wrrLocality := func(child *v3clusterpb.LoadBalancingPolicy) *v3wrrlocalitypb.WrrLocality {
		return &v3wrrlocalitypb.WrrLocality{EndpointPickingPolicy: child}
	}
	nested := lbPolicies(t, &v3roundrobinpb.RoundRobin{})
	for range maxLBPolicyDepth - 1 {
		nested = lbPolicies(t, wrrLocality(nested))
	}
	tooDeep := lbPolicies(t, wrrLocality(nested))
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/example.CustomLB"}
	return []decodeCase[*Cluster]{
		{
			// gRFC A52: wrr_locality wrapping round_robin, the usual config.
			rule: "R-17.4",
			name: "lb policy wrr locality of round robin",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, wrrLocality(lbPolicies(t, &v3roundrobinpb.RoundRobin{}))))),
			want: want(LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true}),
		},
		{
			// gRFC A52: unsupported entries are skipped, custom TypedStruct
			// policies included; the first supported one is used.
			rule: "R-17.4",
			name: "lb policy skips unsupported entries",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, unknown, &v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/my_lb"}, ringHash(10, 100), &v3roundrobinpb.RoundRobin{}))),
			want: want(LBPolicy{Kind: LBPolicyRingHash, RingHashMinSize: 10, RingHashMaxSize: 100}),
		},
		{
			// gRFC A52: a TypedStruct naming a balancer registered with
			// gRPC is a custom policy, its value the JSON config.
			rule: "R-17.4",
			name: "lb policy custom",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, unknown, &v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/my_lb"},
				&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/pick_first", Value: mustStruct(t, map[string]any{"shuffleAddressList": true, "b": []any{1, "x"}})}, ringHash(10, 100)))),
			want: want(LBPolicy{Kind: LBPolicyCustom, Custom: &CustomLBPolicy{Name: "pick_first", Config: `{"b":[1,"x"],"shuffleAddressList":true}`}}),
		},
		{
			rule: "R-17.4",
			name: "lb policy custom udpa without value, in wrr locality",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, wrrLocality(lbPolicies(t, &v1udpatypepb.TypedStruct{TypeUrl: "example.com/x/pick_first"}))))),
			want: want(LBPolicy{Kind: LBPolicyCustom, WeightedByLocality: true, Custom: &CustomLBPolicy{Name: "pick_first", Config: `{}`}}),
		},
		{
			// load_balancing_policy overrides lb_policy.
			rule: "R-17.4",
			name: "lb policy overrides lb_policy",
			give: edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_RING_HASH },
				withLBPolicy(lbPolicies(t, &v3leastrequestpb.LeastRequest{ChoiceCount: wrapperspb.UInt32(11)}))),
			want: want(LBPolicy{Kind: LBPolicyLeastRequest, LeastRequestChoiceCount: 11}),
		},
		{
			rule: "R-17.4",
			name: "lb policy ring hash defaults",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, ringHash(0, 0)))),
			want: want(LBPolicy{Kind: LBPolicyRingHash, RingHashMinSize: 1024, RingHashMaxSize: 8 << 20}),
		},
		{
			rule: "R-17.4",
			name: "lb policy least request default",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3leastrequestpb.LeastRequest{}))),
			want: want(LBPolicy{Kind: LBPolicyLeastRequest, LeastRequestChoiceCount: 2}),
		},
		{
			rule: "R-17.4",
			name: "lb policy pick first",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3pickfirstpb.PickFirst{ShuffleAddressList: true}))),
			want: want(LBPolicy{Kind: LBPolicyPickFirst, PickFirstShuffleAddressList: true}),
		},
		{
			// gRFC A58 defaults.
			rule: "R-17.4",
			name: "lb policy weighted round robin defaults",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3wrrpb.ClientSideWeightedRoundRobin{}))),
			want: want(LBPolicy{Kind: LBPolicyWeightedRoundRobin, WeightedRoundRobin: &WeightedRoundRobinConfig{
				OOBReportingPeriod: 10 * time.Second, BlackoutPeriod: 10 * time.Second, WeightExpirationPeriod: 3 * time.Minute,
				WeightUpdatePeriod: time.Second, ErrorUtilizationPenalty: 1,
			}}),
		},
		{
			rule: "R-17.4",
			name: "lb policy weighted round robin in wrr locality",
			give: edsCluster("c", "s", withLBPolicy(lbPolicies(t, wrrLocality(lbPolicies(t, &v3wrrpb.ClientSideWeightedRoundRobin{
				EnableOobLoadReport: wrapperspb.Bool(true), OobReportingPeriod: durationpb.New(time.Second), BlackoutPeriod: durationpb.New(0),
				WeightExpirationPeriod: durationpb.New(time.Minute), WeightUpdatePeriod: durationpb.New(time.Millisecond), ErrorUtilizationPenalty: wrapperspb.Float(0),
			}))))),
			want: want(LBPolicy{Kind: LBPolicyWeightedRoundRobin, WeightedByLocality: true, WeightedRoundRobin: &WeightedRoundRobinConfig{
				EnableOOBLoadReport: true, OOBReportingPeriod: time.Second, WeightExpirationPeriod: time.Minute, WeightUpdatePeriod: time.Millisecond,
			}}),
		},
		{
			// gRFC A52: 16 levels of nesting are allowed.
			rule: "R-17.4",
			name: "lb policy nested 16 levels",
			give: edsCluster("c", "s", withLBPolicy(nested)),
			want: want(LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true}),
		},

		// Invalid load_balancing_policy.
		{
			rule:    "R-17.4",
			name:    "lb policy with no supported entry",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, unknown, &v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/my_lb"}))),
			wantErr: "load_balancing_policy.policies: no supported policy",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy empty",
			give:    edsCluster("c", "s", withLBPolicy(&v3clusterpb.LoadBalancingPolicy{})),
			wantErr: "load_balancing_policy.policies: no supported policy",
		},
		{
			// gRFC A52: more than 16 levels → NACK.
			rule:    "R-17.4",
			name:    "lb policy nested 17 levels",
			give:    edsCluster("c", "s", withLBPolicy(tooDeep)),
			wantErr: "nested more than 16 levels deep",
		},
		{
			// grpc-go wants XX_HASH exactly; unset is DEFAULT_HASH.
			rule:    "R-17.4",
			name:    "lb policy ring hash without hash function",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3ringhashpb.RingHash{}))),
			wantErr: "load_balancing_policy.policies[0].typed_extension_config.typed_config.hash_function: unsupported hash function DEFAULT_HASH",
		},
		{
			// grpc-go ring-hash-max-bound-greater-than-upper-bound-load-balancing-policy.
			rule:    "R-17.4",
			name:    "lb policy ring hash max above the limit",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, ringHash(10, 8<<20+1)))),
			wantErr: "typed_config.maximum_ring_size: 8388609 exceeds the limit",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy ring hash min above max",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, ringHash(0, 100)))),
			wantErr: "typed_config: minimum_ring_size 1024 is greater than maximum_ring_size 100",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy least request choice count 1",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3leastrequestpb.LeastRequest{ChoiceCount: wrapperspb.UInt32(1)}))),
			wantErr: "typed_config.choice_count: 1, must be at least 2",
		},
		{
			// An error in the first supported entry stops the search.
			rule:    "R-17.4",
			name:    "lb policy undecodable entry",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &anypb.Any{TypeUrl: lbPickFirstTypeURL, Value: []byte{0x08}}, &v3roundrobinpb.RoundRobin{}))),
			wantErr: "policies[0].typed_extension_config.typed_config: decoding envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy undecodable TypedStruct",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &anypb.Any{TypeUrl: xdsTypedStructTypeURL, Value: []byte{0x0a}}, &v3roundrobinpb.RoundRobin{}))),
			wantErr: "policies[0].typed_extension_config.typed_config: decoding xds.type.v3.TypedStruct",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy wrr locality without a supported child",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, wrrLocality(lbPolicies(t, unknown))))),
			wantErr: "typed_config.endpoint_picking_policy.policies: no supported policy",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy weighted round robin negative penalty",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3wrrpb.ClientSideWeightedRoundRobin{ErrorUtilizationPenalty: wrapperspb.Float(-1)}))),
			wantErr: "typed_config.error_utilization_penalty: -1, must be a finite number ≥ 0",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy weighted round robin NaN penalty",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3wrrpb.ClientSideWeightedRoundRobin{ErrorUtilizationPenalty: wrapperspb.Float(float32(math.NaN()))}))),
			wantErr: "typed_config.error_utilization_penalty: NaN",
		},
		{
			rule:    "R-17.4",
			name:    "lb policy weighted round robin negative period",
			give:    edsCluster("c", "s", withLBPolicy(lbPolicies(t, &v3wrrpb.ClientSideWeightedRoundRobin{BlackoutPeriod: durationpb.New(-time.Second)}))),
			wantErr: "typed_config.blackout_period: negative duration",
		},
		{
			// As grpc-go: lb_policy is checked even when
			// load_balancing_policy overrides it.
			rule:    "R-17.4",
			name:    "unsupported lb_policy beside load_balancing_policy",
			give:    edsCluster("c", "s", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_MAGLEV }, withLBPolicy(lbPolicies(t, &v3roundrobinpb.RoundRobin{}))),
			wantErr: "lb_policy: unsupported policy MAGLEV",
		},
	}
}

// TestLBPolicyMemo decodes clusters one after the other as a client does,
// so that each meets the policy its predecessor left in lbPolicyEntry's
// memo: other bytes of the same type, and equal bytes at another depth,
// must each be converted afresh.
func TestLBPolicyMemo(t *testing.T) {
	wrrLocality := func(child *v3clusterpb.LoadBalancingPolicy) *v3wrrlocalitypb.WrrLocality {
		return &v3wrrlocalitypb.WrrLocality{EndpointPickingPolicy: child}
	}
	ringHash := func(min uint64) *v3ringhashpb.RingHash {
		return &v3ringhashpb.RingHash{HashFunction: v3ringhashpb.RingHash_XX_HASH, MinimumRingSize: wrapperspb.UInt64(min), MaximumRingSize: wrapperspb.UInt64(1000)}
	}
	nested := lbPolicies(t, &v3roundrobinpb.RoundRobin{})
	for range maxLBPolicyDepth - 1 {
		nested = lbPolicies(t, wrrLocality(nested))
	}
	decode := func(lbp *v3clusterpb.LoadBalancingPolicy) (LBPolicy, error) {
		t.Helper()
		_, c, err := ClusterType.DecodeTyped(mustAny(t, edsCluster("c", "s", withLBPolicy(lbp))))
		if err != nil {
			return LBPolicy{}, err
		}
		return c.LBPolicy, nil
	}
	ringSize := func(lbp *v3clusterpb.LoadBalancingPolicy) uint64 {
		t.Helper()
		p, err := decode(lbp)
		if err != nil {
			t.Fatalf("decoding: %v", err)
		}
		return p.RingHashMinSize
	}

	// The same type with other bytes, then the first bytes again.
	for _, min := range []uint64{10, 20, 10} {
		if got := ringSize(lbPolicies(t, ringHash(min))); got != min {
			t.Errorf("ring hash minimum_ring_size %d decoded as %d", min, got)
		}
	}

	// The outer WrrLocality of nested, accepted at depth 0, is one level
	// too deep at depth 1.
	if _, err := decode(nested); err != nil {
		t.Fatalf("16 levels: %v", err)
	}
	if _, err := decode(lbPolicies(t, wrrLocality(nested))); err == nil || !strings.Contains(err.Error(), "nested more than 16 levels deep") {
		t.Errorf("17 levels after 16: got error %v, want nested more than 16 levels deep", err)
	}
}

// TestCheck_CertificateProviderInstances checks that, given the
// bootstrap's certificate provider instances, a Cluster naming another
// one is invalid, with the instance and the field in the error (R-17.4,
// gRFC A29); without them, names are not checked; and BuiltinTypes gives
// a Cluster type that checks them, which the client's registry holds.
func TestCheck_CertificateProviderInstances(t *testing.T) {
	const tlsField = "transport_socket.typed_config.common_tls_context"
	mtls := mustAny(t, edsCluster("c", "s", withTLS(t, rootVC(nil)))) // root "root", identity "id"
	system := mustAny(t, edsCluster("c", "s", withTLS(t, &v3tlspb.CommonTlsContext{
		ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: &v3tlspb.CertificateValidationContext{
			SystemRootCerts: &v3tlspb.CertificateValidationContext_SystemRootCerts{},
		}},
	})))
	tests := []struct {
		name    string
		give    *anypb.Any
		opts    []DecodeOption
		wantErr string
	}{
		{name: "not checked", give: mtls},
		{name: "both defined", give: mtls, opts: []DecodeOption{WithCertificateProviderInstances("id", "root", "other")}},
		{name: "root missing", give: mtls, opts: []DecodeOption{WithCertificateProviderInstances("id")},
			wantErr: tlsField + `.validation_context.ca_certificate_provider_instance.instance_name: root certificate provider instance "root" is not in the bootstrap's certificate_providers`},
		{name: "identity missing", give: mtls, opts: []DecodeOption{WithCertificateProviderInstances("root")},
			wantErr: tlsField + `.tls_certificate_provider_instance.instance_name: identity certificate provider instance "id" is not in the bootstrap's certificate_providers`},
		{name: "no instances", give: mtls, opts: []DecodeOption{WithCertificateProviderInstances()},
			wantErr: `identity certificate provider instance "id" is not in the bootstrap's certificate_providers`},
		{name: "system roots need no instance", give: system, opts: []DecodeOption{WithCertificateProviderInstances()}},
		{name: "no transport socket", give: mustAny(t, edsCluster("c", "s")), opts: []DecodeOption{WithCertificateProviderInstances()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.give, tc.opts...)
			err := Validate(tc.give, tc.opts...)
			if tc.wantErr == "" {
				if v.Err != nil || err != nil || v.Value == nil {
					t.Fatalf("Check = %+v, Validate = %v; want valid", v, err)
				}
				return
			}
			if v.Err == nil || !strings.Contains(v.Err.Error(), tc.wantErr) || v.Name != "c" || v.Value != nil {
				t.Fatalf("Check = %+v, want invalid Cluster c with %q", v, tc.wantErr)
			}
			if err == nil || !strings.HasPrefix(err.Error(), `Cluster "c": `) {
				t.Fatalf("Validate = %v, want an error naming the Cluster", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("Validate's error does not wrap a *ValidationError: %v", err)
			}
		})
	}

	if got := BuiltinTypes()[2]; got != ResourceType(ClusterType) {
		t.Errorf("BuiltinTypes()[2] = %v, want ClusterType", got)
	}
	checking := BuiltinTypes(WithCertificateProviderInstances("root"))[2]
	if _, ok := checking.(Type[*Cluster]); !ok || checking.TypeURL() != ClusterTypeURL || checking.TypeName() != "Cluster" {
		t.Fatalf("BuiltinTypes(WithCertificateProviderInstances)[2] = %T %s, want a Type[*Cluster] of %s", checking, checking.TypeURL(), ClusterTypeURL)
	}
	if name, _, err := checking.Decode(mtls); name != "c" || err == nil {
		t.Errorf("the checking type's Decode = %q, %v; want an error for Cluster c", name, err)
	}
	if name, ok := checking.Name(mtls); !ok || name != "c" {
		t.Errorf("the checking type's Name = %q, %v; want c", name, ok)
	}
}
