// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"net"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3http11proxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
)

// End-to-end tests of HTTP CONNECT from xDS (gRFC A86), the scenarios of
// grpc-go's test/xds/xds_client_http_connect_test.go: a client made with
// client.WithHTTPConnect, channels of DialOptions, a test CONNECT proxy
// that records the targets it is asked for.

func startProxy(t *testing.T) *testutil.ConnectProxy {
	t.Helper()
	p, err := testutil.StartConnectProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// proxyMetadata is metadata naming proxy as the HTTP CONNECT proxy.
func proxyMetadata(t *testing.T, proxy string) *v3corepb.Metadata {
	host, port := splitHostPort(t, proxy)
	return &v3corepb.Metadata{TypedFilterMetadata: map[string]*anypb.Any{
		"envoy.http11_proxy_transport_socket.proxy_address": testutil.MarshalAny(&v3corepb.Address{Address: &v3corepb.Address_SocketAddress{
			SocketAddress: &v3corepb.SocketAddress{Address: host, PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port}},
		}}),
	}}
}

// connectChain is the chain of listener "svc" to port, whose cluster's
// transport socket is the HTTP/1.1 proxy socket around inner (nil: none).
func connectChain(port uint32, inner *v3corepb.TransportSocket) testutil.Resources {
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{port}})
	r.Clusters[0].TransportSocket = &v3corepb.TransportSocket{
		Name:       "envoy.transport_sockets.http_11_proxy",
		ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: testutil.MarshalAny(&v3http11proxypb.Http11ProxyUpstreamTransport{TransportSocket: inner})},
	}
	return r
}

// dialOptions returns a TestService client of target on a channel of
// DialOptions, closed when the test ends.
func dialOptions(t *testing.T, c *client.Client, target string, opts ...xdsresolver.Option) testgrpc.TestServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(target, xdsresolver.DialOptions(c, append([]xdsresolver.Option{xdsresolver.WithLogger(testLogger(t))}, opts...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

// TestHTTPConnect covers the proxy from endpoint metadata, from locality
// metadata, without metadata (a direct connection), and TLS through the
// tunnel (TestXDSHTTPConnect, _LocalityFallback, _NoMetadata,
// _WithInsecureXDSCredentials, _WithUpstreamTLSContext).
func TestHTTPConnect(t *testing.T) {
	e := newSecureEnv(t, 0, client.WithHTTPConnect())
	plain := startBackend(t, "plain")
	secure := e.startMeshBackend(t, "secure")
	tests := []struct {
		name      string
		resources func(proxy string) testutil.Resources
		wantID    string
		proxied   string // the target the proxy must see; "" for none
	}{
		{
			name: "endpoint metadata",
			resources: func(proxy string) testutil.Resources {
				r := connectChain(plain.port, nil)
				r.Endpoints[0].Endpoints[0].LbEndpoints[0].Metadata = proxyMetadata(t, proxy)
				return r
			},
			wantID: "plain", proxied: "127.0.0.1:" + itoa(plain.port),
		},
		{
			name: "locality metadata",
			resources: func(proxy string) testutil.Resources {
				r := connectChain(plain.port, nil)
				r.Endpoints[0].Endpoints[0].Metadata = proxyMetadata(t, proxy)
				return r
			},
			wantID: "plain", proxied: "127.0.0.1:" + itoa(plain.port),
		},
		{
			name: "endpoint metadata wins over locality metadata",
			resources: func(proxy string) testutil.Resources {
				r := connectChain(plain.port, nil)
				r.Endpoints[0].Endpoints[0].Metadata = proxyMetadata(t, "127.0.0.1:1") // nothing listens there
				r.Endpoints[0].Endpoints[0].LbEndpoints[0].Metadata = proxyMetadata(t, proxy)
				return r
			},
			wantID: "plain", proxied: "127.0.0.1:" + itoa(plain.port),
		},
		{
			name:      "no metadata",
			resources: func(string) testutil.Resources { return connectChain(plain.port, nil) },
			wantID:    "plain",
		},
		{
			name: "tls through the tunnel",
			resources: func(proxy string) testutil.Resources {
				r := connectChain(secure.Port, testutil.UpstreamTLS(testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh", SubjectAltNames: nil}))
				r.Endpoints[0].Endpoints[0].LbEndpoints[0].Metadata = proxyMetadata(t, proxy)
				return r
			},
			wantID: "secure", proxied: "127.0.0.1:" + itoa(secure.Port),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t)
			if err := e.ms.Update("", tc.resources(p.Addr)); err != nil {
				t.Fatal(err)
			}
			resp, err := unary(testContext(t), dialOptions(t, e.client, "xds:///svc"))
			if err != nil || resp.GetServerId() != tc.wantID {
				t.Fatalf("RPC = %v, %v; want answered by %s", resp, err, tc.wantID)
			}
			var want []string
			if tc.proxied != "" {
				want = []string{tc.proxied}
			}
			if got := p.Targets(); !slices.Equal(got, want) {
				t.Errorf("the proxy was asked for %q, want %q", got, want)
			}
		})
	}
}

// TestHTTPConnect_NACKedWithoutOption checks that a client made without
// client.WithHTTPConnect NACKs such a Cluster, as grpc-go does without
// GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT: the channel's RPCs fail, naming the
// transport socket.
func TestHTTPConnect_NACKedWithoutOption(t *testing.T) {
	e := newSecureEnv(t, 0)
	plain := startBackend(t, "plain")
	if err := e.ms.Update("", connectChain(plain.port, nil)); err != nil {
		t.Fatal(err)
	}
	_, err := unary(testContext(t), dialOptions(t, e.client, "xds:///svc"))
	if !isUnavailableWith(err, `transport_socket.name: "envoy.transport_sockets.http_11_proxy", want "envoy.transport_sockets.tls"`) {
		t.Fatalf("RPC = %v, want UNAVAILABLE naming the transport socket", err)
	}
}

func splitHostPort(t *testing.T, addr string) (string, uint32) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return host, uint32(n)
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
