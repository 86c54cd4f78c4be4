// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3http11proxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// TestWithHTTPConnect checks that a Cluster with the HTTP/1.1 proxy
// transport socket (gRFC A86) is accepted by a client made with
// WithHTTPConnect, with the proxy addresses of its endpoints, and NACKed
// by one made without, as grpc-go does without
// GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT.
func TestWithHTTPConnect(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	r.Clusters[0].TransportSocket = &v3corepb.TransportSocket{
		Name:       "envoy.transport_sockets.http_11_proxy",
		ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: testutil.MarshalAny(&v3http11proxypb.Http11ProxyUpstreamTransport{})},
	}
	r.Endpoints[0].Endpoints[0].LbEndpoints[0].Metadata = &v3corepb.Metadata{TypedFilterMetadata: map[string]*anypb.Any{
		"envoy.http11_proxy_transport_socket.proxy_address": testutil.MarshalAny(&v3corepb.Address{Address: &v3corepb.Address_SocketAddress{
			SocketAddress: &v3corepb.SocketAddress{Address: "10.9.9.9", PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: 3128}},
		}}),
	}}
	if err := ms.Update("", r); err != nil {
		t.Fatal(err)
	}

	on := newClient(t, ms, testutil.BootstrapOptions{}, client.WithHTTPConnect())
	if !on.HTTPConnect() {
		t.Error("HTTPConnect() = false with WithHTTPConnect")
	}
	cw := newRecorder[*resources.Cluster]()
	defer client.Watch(on, resources.ClusterType, "cluster-svc", cw)()
	if c := cw.wantKind(ctx, t, changed, nil).value; !c.HTTPConnect {
		t.Errorf("Cluster.HTTPConnect = false, want true")
	}
	ew := newRecorder[*resources.Endpoints]()
	defer client.Watch(on, resources.EndpointsType, "eds-svc", ew)()
	if e := ew.wantKind(ctx, t, changed, nil).value; e.Localities[0].Endpoints[0].ProxyAddress != "10.9.9.9:3128" {
		t.Errorf("ProxyAddress = %q, want 10.9.9.9:3128", e.Localities[0].Endpoints[0].ProxyAddress)
	}

	off := newClient(t, ms, testutil.BootstrapOptions{})
	if off.HTTPConnect() {
		t.Error("HTTPConnect() = true without WithHTTPConnect")
	}
	cw2 := newRecorder[*resources.Cluster]()
	defer client.Watch(off, resources.ClusterType, "cluster-svc", cw2)()
	e := cw2.wantKind(ctx, t, resourceError, client.ErrResourceInvalid)
	if !strings.Contains(e.err.Error(), `transport_socket.name: "envoy.transport_sockets.http_11_proxy", want "envoy.transport_sockets.tls"`) {
		t.Errorf("error = %v, want it to name the transport socket", e.err)
	}
}
