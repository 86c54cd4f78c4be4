// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3http11proxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// withUpstreamTLS sets ctx as the Cluster's transport socket.
func withUpstreamTLS(t testing.TB, ctx *v3tlspb.UpstreamTlsContext) func(*v3clusterpb.Cluster) {
	return func(c *v3clusterpb.Cluster) {
		c.TransportSocket = &v3corepb.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, ctx)},
		}
	}
}

// withProxy wraps the Cluster's transport socket (nil for none) in the
// HTTP/1.1 proxy transport socket named name (gRFC A86).
func withProxy(t testing.TB, name string) func(*v3clusterpb.Cluster) {
	return func(c *v3clusterpb.Cluster) {
		c.TransportSocket = &v3corepb.TransportSocket{
			Name: name,
			ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &v3http11proxypb.Http11ProxyUpstreamTransport{
				TransportSocket: c.TransportSocket,
			})},
		}
	}
}

const proxySocketName = "envoy.transport_sockets.http_11_proxy"

// TestCluster_SNI covers the SNI fields of an UpstreamTlsContext (gRFC
// A101): read whatever the options, sni at most 255 bytes.
func TestCluster_SNI(t *testing.T) {
	rr := LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true, HealthyPanicThreshold: 50}
	want := func(sc *SecurityConfig) *Cluster {
		return &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024, MaxRetries: 3, Security: sc}
	}
	root := &SecurityConfig{RootInstanceName: "root", RootCertName: "root-cert", IdentityInstanceName: "id", IdentityCertName: "id-cert"}
	with := func(mod func(*SecurityConfig)) *SecurityConfig {
		sc := *root
		mod(&sc)
		return &sc
	}
	runDecodeCases(t, ClusterType, clusterName, []decodeCase[*Cluster]{
		{
			rule: "R-17.4",
			name: "sni",
			give: edsCluster("c", "s", withUpstreamTLS(t, &v3tlspb.UpstreamTlsContext{CommonTlsContext: rootVC(nil), Sni: "api.example.com"})),
			want: want(with(func(sc *SecurityConfig) { sc.SNI = "api.example.com" })),
		},
		{
			rule: "R-17.4",
			name: "auto host sni and san validation",
			give: edsCluster("c", "s", withUpstreamTLS(t, &v3tlspb.UpstreamTlsContext{
				CommonTlsContext: rootVC(nil), Sni: "fallback.example.com", AutoHostSni: true, AutoSniSanValidation: true,
			})),
			want: want(with(func(sc *SecurityConfig) {
				sc.SNI, sc.AutoHostSNI, sc.AutoSNISANValidation = "fallback.example.com", true, true
			})),
		},
		{
			rule: "R-17.4",
			name: "sni of 255 bytes",
			give: edsCluster("c", "s", withUpstreamTLS(t, &v3tlspb.UpstreamTlsContext{CommonTlsContext: rootVC(nil), Sni: strings.Repeat("a", 255)})),
			want: want(with(func(sc *SecurityConfig) { sc.SNI = strings.Repeat("a", 255) })),
		},
		{
			// gRFC A101 "Validation", as Envoy.
			rule:    "R-17.4",
			name:    "sni of 256 bytes",
			give:    edsCluster("c", "s", withUpstreamTLS(t, &v3tlspb.UpstreamTlsContext{CommonTlsContext: rootVC(nil), Sni: strings.Repeat("a", 256)})),
			wantErr: "transport_socket.typed_config.sni: 256 bytes, at most 255 are allowed",
		},
		{
			// The common TLS context is checked first, as in grpc-go.
			rule:    "R-17.4",
			name:    "long sni and no common tls context",
			give:    edsCluster("c", "s", withUpstreamTLS(t, &v3tlspb.UpstreamTlsContext{Sni: strings.Repeat("a", 256)})),
			wantErr: "transport_socket.typed_config.common_tls_context: missing",
		},
	})
}

// TestCluster_HTTPConnect covers the HTTP/1.1 proxy transport socket
// (gRFC A86) with WithHTTPConnect, and without it, where it is rejected
// as grpc-go rejects it without GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT.
func TestCluster_HTTPConnect(t *testing.T) {
	rr := LBPolicy{Kind: LBPolicyRoundRobin, WeightedByLocality: true, HealthyPanicThreshold: 50}
	want := func(sc *SecurityConfig) *Cluster {
		return &Cluster{Name: "c", Kind: ClusterKindEDS, EDSServiceName: "s", LBPolicy: rr, MaxRequests: 1024, MaxRetries: 3, HTTPConnect: true, Security: sc}
	}
	full := &SecurityConfig{RootInstanceName: "root", RootCertName: "root-cert", IdentityInstanceName: "id", IdentityCertName: "id-cert"}
	const inner = "transport_socket.typed_config.transport_socket"
	withInner := func(ts *v3corepb.TransportSocket) func(*v3clusterpb.Cluster) {
		return func(c *v3clusterpb.Cluster) { c.TransportSocket = ts }
	}
	enabled := []decodeCase[*Cluster]{
		{
			rule: "R-17.4",
			name: "proxy without transport socket",
			give: edsCluster("c", "s", withProxy(t, proxySocketName)),
			want: want(nil),
		},
		{
			rule: "R-17.4",
			name: "proxy around tls",
			give: edsCluster("c", "s", withTLS(t, rootVC(nil)), withProxy(t, proxySocketName)),
			want: want(full),
		},
		{
			// grpc-go looks at the type only.
			rule: "R-17.4",
			name: "proxy of another name",
			give: edsCluster("c", "s", withProxy(t, "any.name")),
			want: want(nil),
		},
		{
			rule: "R-17.4",
			name: "proxy around tls with sni",
			give: edsCluster("c", "s", withUpstreamTLS(t, &v3tlspb.UpstreamTlsContext{CommonTlsContext: rootVC(nil), Sni: "a.example"}), withProxy(t, proxySocketName)),
			want: want(&SecurityConfig{RootInstanceName: "root", RootCertName: "root-cert", IdentityInstanceName: "id", IdentityCertName: "id-cert", SNI: "a.example"}),
		},
		{
			rule:    "R-17.4",
			name:    "proxy around a socket of another name",
			give:    edsCluster("c", "s", withInner(&v3corepb.TransportSocket{Name: "envoy.transport_sockets.raw_buffer"}), withProxy(t, proxySocketName)),
			wantErr: inner + `.name: "envoy.transport_sockets.raw_buffer", want "envoy.transport_sockets.tls"`,
		},
		{
			rule: "R-17.4",
			name: "proxy around a socket of another type",
			give: edsCluster("c", "s", withInner(&v3corepb.TransportSocket{
				Name:       "envoy.transport_sockets.tls",
				ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &v3tlspb.DownstreamTlsContext{})},
			}), withProxy(t, proxySocketName)),
			wantErr: inner + `.typed_config: type URL "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"`,
		},
		{
			rule:    "R-17.4",
			name:    "proxy around invalid tls",
			give:    edsCluster("c", "s", withTLS(t, nil), withProxy(t, proxySocketName)),
			wantErr: inner + ".typed_config.common_tls_context: missing",
		},
		{
			rule:    "R-17.4",
			name:    "proxy around a proxy",
			give:    edsCluster("c", "s", withProxy(t, proxySocketName), withProxy(t, proxySocketName)),
			wantErr: inner + `.name: "envoy.transport_sockets.http_11_proxy", want "envoy.transport_sockets.tls"`,
		},
		{
			rule: "R-17.4",
			name: "undecodable proxy",
			give: edsCluster("c", "s", withInner(&v3corepb.TransportSocket{
				Name:       proxySocketName,
				ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: http11ProxyTypeURL, Value: []byte{1, 2, 3}}},
			})),
			wantErr: "transport_socket.typed_config: decoding Http11ProxyUpstreamTransport",
		},
	}
	t.Run("enabled", func(t *testing.T) {
		runDecodeCases(t, clusterTypeWith(decodeOptions{httpConnect: true}), clusterName, enabled)
	})
	// Without the option, grpc-go's errors: by name, else by type.
	disabled := []decodeCase[*Cluster]{
		{
			rule:    "R-17.4",
			name:    "proxy",
			give:    edsCluster("c", "s", withProxy(t, proxySocketName)),
			wantErr: `transport_socket.name: "envoy.transport_sockets.http_11_proxy", want "envoy.transport_sockets.tls"`,
		},
		{
			rule:    "R-17.4",
			name:    "proxy around tls",
			give:    edsCluster("c", "s", withTLS(t, rootVC(nil)), withProxy(t, proxySocketName)),
			wantErr: `transport_socket.name: "envoy.transport_sockets.http_11_proxy", want "envoy.transport_sockets.tls"`,
		},
		{
			rule:    "R-17.4",
			name:    "proxy named as tls",
			give:    edsCluster("c", "s", withProxy(t, "envoy.transport_sockets.tls")),
			wantErr: `transport_socket.typed_config: type URL "type.googleapis.com/envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport", want`,
		},
	}
	t.Run("disabled", func(t *testing.T) { runDecodeCases(t, ClusterType, clusterName, disabled) })

	// The certificate provider instances of the wrapped socket are
	// checked, with its path.
	mtls := mustAny(t, edsCluster("c", "s", withTLS(t, rootVC(nil)), withProxy(t, proxySocketName)))
	v := Check(mtls, WithHTTPConnect(), WithCertificateProviderInstances("id"))
	const wantErr = inner + `.typed_config.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name: root certificate provider instance "root" is not in the bootstrap's certificate_providers`
	if v.Err == nil || !strings.Contains(v.Err.Error(), wantErr) {
		t.Errorf("Check(WithHTTPConnect, WithCertificateProviderInstances(id)) = %v, want error containing %q", v.Err, wantErr)
	}
	if v := Check(mtls, WithHTTPConnect(), WithCertificateProviderInstances("id", "root")); v.Err != nil {
		t.Errorf("Check(WithHTTPConnect, both instances) = %v, want valid", v.Err)
	}
	if v := Check(mtls); v.Err == nil {
		t.Errorf("Check() without WithHTTPConnect = valid, want invalid")
	}
}

// proxyMeta returns metadata with a typed_filter_metadata entry key of
// msg.
func proxyMeta(t testing.TB, key string, msg proto.Message) *v3corepb.Metadata {
	return &v3corepb.Metadata{TypedFilterMetadata: map[string]*anypb.Any{key: mustAny(t, msg)}}
}

// TestEndpoints_ProxyAddress covers the proxy addresses of endpoints and
// localities (gRFC A86), read with WithHTTPConnect only.
func TestEndpoints_ProxyAddress(t *testing.T) {
	const key = "envoy.http11_proxy_transport_socket.proxy_address"
	withMeta := func(md *v3corepb.Metadata) func(*v3endpointpb.LbEndpoint) {
		return func(e *v3endpointpb.LbEndpoint) { e.Metadata = md }
	}
	locMeta := func(l *v3endpointpb.LocalityLbEndpoints, md *v3corepb.Metadata) *v3endpointpb.LocalityLbEndpoints {
		l.Metadata = md
		return l
	}
	proxyEP := func(proxy string, addrs ...string) Endpoint { e := ep(addrs...); e.ProxyAddress = proxy; return e }
	withProxyLoc := func(l Locality, proxy string) Locality { l.ProxyAddress = proxy; return l }
	cases := []decodeCase[*Endpoints]{
		{
			rule: "R-17.5",
			name: "endpoint proxy",
			give: cla("e", locality("z", 0, 1,
				lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, key, socketAddr("192.168.0.1", 3128)))),
				lbEndpoint("10.0.0.2", 80))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1, proxyEP("192.168.0.1:3128", "10.0.0.1:80"), ep("10.0.0.2:80"))}},
		},
		{
			rule: "R-17.5",
			name: "locality proxy and an endpoint's own",
			give: cla("e", locMeta(locality("z", 0, 1,
				lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, key, socketAddr("::1", 3128)))),
				lbEndpoint("10.0.0.2", 80)), proxyMeta(t, key, socketAddr("192.168.0.2", 8080)))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{withProxyLoc(loc("z", 0, 1, proxyEP("[::1]:3128", "10.0.0.1:80"), ep("10.0.0.2:80")), "192.168.0.2:8080")}},
		},
		{
			// gRFC A86: another type under the key is ignored.
			rule: "R-17.5",
			name: "proxy key of another type",
			give: cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, key, &v3corepb.Locality{Zone: "x"}))))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1, ep("10.0.0.1:80"))}},
		},
		{
			rule: "R-17.5",
			name: "valid address under another key",
			give: cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, "other", socketAddr("10.1.1.1", 1)))))),
			want: &Endpoints{ClusterName: "e", Localities: []Locality{loc("z", 0, 1, ep("10.0.0.1:80"))}},
		},
		{
			rule:    "R-17.5",
			name:    "proxy host name",
			give:    cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, key, socketAddr("proxy.example", 3128)))))),
			wantErr: `endpoints[0].lb_endpoints[0].metadata.typed_filter_metadata["envoy.http11_proxy_transport_socket.proxy_address"].socket_address.address: "proxy.example" is not an IPv4 or IPv6 address`,
		},
		{
			rule:    "R-17.5",
			name:    "proxy without port",
			give:    cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, key, socketAddr("10.1.1.1", 0)))))),
			wantErr: `.socket_address.port_value: missing or zero`,
		},
		{
			rule:    "R-17.5",
			name:    "proxy without socket address",
			give:    cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 80, withMeta(proxyMeta(t, key, &v3corepb.Address{}))))),
			wantErr: `typed_filter_metadata["envoy.http11_proxy_transport_socket.proxy_address"].socket_address: missing`,
		},
		{
			// A registered type is validated under any key (gRFC A86).
			rule:    "R-17.5",
			name:    "invalid address under another key",
			give:    cla("e", locMeta(locality("z", 0, 1, lbEndpoint("10.0.0.1", 80)), proxyMeta(t, "other", socketAddr("h", 1)))),
			wantErr: `endpoints[0].metadata.typed_filter_metadata["other"].socket_address.address: "h" is not an IPv4 or IPv6 address`,
		},
		{
			rule: "R-17.5",
			name: "undecodable address",
			give: cla("e", locality("z", 0, 1, lbEndpoint("10.0.0.1", 80, withMeta(&v3corepb.Metadata{TypedFilterMetadata: map[string]*anypb.Any{
				key: {TypeUrl: addressTypeURL, Value: []byte{0xff}},
			}})))),
			wantErr: `typed_filter_metadata["envoy.http11_proxy_transport_socket.proxy_address"]: decoding Address`,
		},
	}
	t.Run("enabled", func(t *testing.T) {
		runDecodeCases(t, endpointsTypeWith(decodeOptions{httpConnect: true}), endpointsName, cases)
	})
	// Without the option, metadata is not read: every case is valid and
	// has no proxy address.
	t.Run("disabled", func(t *testing.T) {
		for _, tc := range cases {
			_, e, err := EndpointsType.DecodeTyped(mustAny(t, tc.give))
			if err != nil {
				t.Errorf("%s: DecodeTyped() = %v, want valid", tc.name, err)
				continue
			}
			for _, l := range e.Localities {
				for _, ep := range l.Endpoints {
					if l.ProxyAddress != "" || ep.ProxyAddress != "" {
						t.Errorf("%s: proxy addresses %q, %q without WithHTTPConnect", tc.name, l.ProxyAddress, ep.ProxyAddress)
					}
				}
			}
		}
	})
	t.Run("paths agree", func(t *testing.T) {
		for _, tc := range cases {
			checkEndpointsPaths(t, mustAny(t, tc.give))
		}
	})
	if BuiltinTypes()[3] != ResourceType(EndpointsType) {
		t.Errorf("BuiltinTypes()[3] is not EndpointsType")
	}
	if got := BuiltinTypes(WithHTTPConnect())[3]; got == ResourceType(EndpointsType) || got.TypeURL() != EndpointsTypeURL {
		t.Errorf("BuiltinTypes(WithHTTPConnect())[3] = %v, want an Endpoints type of its own", got)
	}
}
