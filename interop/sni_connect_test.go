// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcxdscreds "google.golang.org/grpc/credentials/xds"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	grpcxds "google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdsresolver"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3http11proxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// sniBackend is a mesh backend that presents, for an SNI in
// *.test.example.com, a certificate for that wildcard, else the mesh's
// server certificate (DNS localhost), and records the SNIs it gets.
type sniBackend struct {
	*testutil.Backend
	mu   sync.Mutex
	snis []string
}

func startSNIBackend(t *testing.T, mesh *certs.Mesh, id string) *sniBackend {
	t.Helper()
	wildcard, err := mesh.CA.Issue(certs.Options{SPIFFEID: mesh.ID("backend"), DNSNames: []string{"*.test.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	sb := &sniBackend{}
	cfg := mesh.ServerTLS()
	cfg.Certificates = nil
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		sb.mu.Lock()
		sb.snis = append(sb.snis, hello.ServerName)
		sb.mu.Unlock()
		if strings.HasSuffix(hello.ServerName, ".test.example.com") {
			return &wildcard.TLS, nil
		}
		return &mesh.Server.TLS, nil
	}
	if sb.Backend, err = testutil.StartBackend(testutil.BackendOptions{ID: id, TLS: cfg}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Stop)
	return sb
}

// takeSNIs returns the SNIs seen since the last call.
func (sb *sniBackend) takeSNIs() []string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	out := slices.Compact(sb.snis)
	sb.snis = nil
	return out
}

// sniTransportSocket is a TLS transport socket of the instance "mesh" with
// the SNI settings of ctx and the SAN matchers sans.
func sniTransportSocket(ctx *v3tlspb.UpstreamTlsContext, sans ...*v3matcherpb.StringMatcher) *v3corepb.TransportSocket {
	ctx.CommonTlsContext = &v3tlspb.CommonTlsContext{
		TlsCertificateProviderInstance: &v3tlspb.CertificateProviderPluginInstance{InstanceName: "mesh"},
		ValidationContextType: &v3tlspb.CommonTlsContext_ValidationContext{ValidationContext: &v3tlspb.CertificateValidationContext{
			CaCertificateProviderInstance: &v3tlspb.CertificateProviderPluginInstance{InstanceName: "mesh"},
			//lint:ignore SA1019 gRFC A29: gRPC reads match_subject_alt_names
			MatchSubjectAltNames: sans,
		}},
	}
	return &v3corepb.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: testutil.MarshalAny(ctx)},
	}
}

// meshBootstrap is a bootstrap of s with the file_watcher instance "mesh".
func meshBootstrap(t *testing.T, s *gcpServer, mesh *certs.Mesh) []byte {
	t.Helper()
	js, err := testutil.WithCertificateProviders([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)), map[string]testutil.FileWatcher{
		"mesh": {CertificateFile: mesh.ClientCertFile, PrivateKeyFile: mesh.ClientKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// addChain adds the chain of listener name to port to res, changed by mod.
func addChain(res *testutil.Resources, name string, port uint32, mod func(r testutil.Resources)) {
	r := testutil.Chain(testutil.ChainOptions{Listener: name, Ports: []uint32{port}})
	if mod != nil {
		mod(r)
	}
	res.Listeners, res.Routes = append(res.Listeners, r.Listeners...), append(res.Routes, r.Routes...)
	res.Clusters, res.Endpoints = append(res.Clusters, r.Clusters...), append(res.Endpoints, r.Endpoints...)
}

// rpcOutcome is what the side-by-side tests compare of an RPC.
type rpcOutcome struct {
	Code     codes.Code
	ServerID string
	Seen     string // what the backend saw (SNIs) or the proxy was asked for, joined with ","
}

// oneRPC makes one UnaryCall on a new channel of target with opts.
func oneRPC(ctx context.Context, t *testing.T, target string, opts ...grpc.DialOption) (*testgrpc.SimpleResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(rctx, &testgrpc.SimpleRequest{})
	if err != nil {
		t.Logf("%s: %v", target, err)
	}
	return resp, err
}

// TestSNI_SideBySide_GRPCGo serves one go-control-plane configuration of
// Clusters with SNI settings (gRFC A101) to this library's channel and to
// grpc-go's (GRPC_EXPERIMENTAL_XDS_SNI=true, in a child process), with the
// same bootstrap, and checks that they have the same outcomes: RPC code,
// backend, and the SNI the backend got. The scenarios are those of
// grpc-go's test/xds/xds_client_sni_test.go; the one with the variable
// off has no counterpart here (this library always reads SNI).
func TestSNI_SideBySide_GRPCGo(t *testing.T) {
	if !inChildWithGRPCEnv(t, "GRPC_EXPERIMENTAL_XDS_SNI=true") {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	const valid = "x.test.example.com"
	type scenario struct {
		target   string
		tls      *v3tlspb.UpstreamTlsContext
		sans     []*v3matcherpb.StringMatcher
		hostname string
		want     rpcOutcome
	}
	scenarios := []scenario{
		{target: "sni-valid", tls: &v3tlspb.UpstreamTlsContext{Sni: valid, AutoSniSanValidation: true}, want: rpcOutcome{Code: codes.OK, Seen: valid}},
		{target: "sni-invalid", tls: &v3tlspb.UpstreamTlsContext{Sni: "wrong.sni.domain", AutoSniSanValidation: true}, want: rpcOutcome{Code: codes.Unavailable, Seen: "wrong.sni.domain"}},
		{target: "auto-host", tls: &v3tlspb.UpstreamTlsContext{Sni: "wrong.sni.domain", AutoHostSni: true, AutoSniSanValidation: true}, hostname: valid, want: rpcOutcome{Code: codes.OK, Seen: valid}},
		{target: "auto-host-without-hostname", tls: &v3tlspb.UpstreamTlsContext{Sni: valid, AutoHostSni: true, AutoSniSanValidation: true}, want: rpcOutcome{Code: codes.OK, Seen: valid}},
		{target: "fallback-match", tls: &v3tlspb.UpstreamTlsContext{AutoSniSanValidation: true}, sans: []*v3matcherpb.StringMatcher{testutil.ExactSAN("localhost")}, want: rpcOutcome{Code: codes.OK}},
		{target: "fallback-nomatch", tls: &v3tlspb.UpstreamTlsContext{AutoSniSanValidation: true}, sans: []*v3matcherpb.StringMatcher{testutil.ExactSAN("wrong.san.domain")}, want: rpcOutcome{Code: codes.Unavailable}},
		{target: "sni-without-validation", tls: &v3tlspb.UpstreamTlsContext{Sni: "incorrect.sni"}, sans: []*v3matcherpb.StringMatcher{testutil.ExactSAN("localhost")}, want: rpcOutcome{Code: codes.OK, Seen: "incorrect.sni"}},
	}
	var res testutil.Resources
	backends := map[string]*sniBackend{}
	for _, sc := range scenarios {
		b := startSNIBackend(t, mesh, sc.target)
		backends[sc.target] = b
		addChain(&res, sc.target, b.Port, func(r testutil.Resources) {
			r.Clusters[0].TransportSocket = sniTransportSocket(sc.tls, sc.sans...)
			r.Endpoints[0].Endpoints[0].LbEndpoints[0].GetEndpoint().Hostname = sc.hostname
		})
	}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)
	bootstrapJSON := meshBootstrap(t, s, mesh)
	cfg, err := bootstrap.Parse(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	theirCreds, err := grpcxdscreds.NewClientCredentials(grpcxdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		b := backends[sc.target]
		outcome := func(opts ...grpc.DialOption) rpcOutcome {
			resp, err := oneRPC(ctx, t, "xds:///"+sc.target, opts...)
			return rpcOutcome{Code: status.Code(err), ServerID: resp.GetServerId(), Seen: strings.Join(b.takeSNIs(), ",")}
		}
		want := sc.want
		if want.Code == codes.OK {
			want.ServerID = sc.target
		}
		ours := outcome(xdsresolver.DialOptions(c)...)
		theirs := outcome(grpc.WithResolvers(theirResolver), grpc.WithTransportCredentials(theirCreds))
		if ours != want || theirs != want {
			t.Errorf("%s: proxyless/xds %+v, grpc-go %+v; want both %+v", sc.target, ours, theirs, want)
		}
	}
}

// proxyAddressMetadata is metadata naming proxy as the HTTP CONNECT proxy
// (gRFC A86).
func proxyAddressMetadata(t *testing.T, proxy string) *v3corepb.Metadata {
	host, port, err := net.SplitHostPort(proxy)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.ParseUint(port, 10, 32)
	return &v3corepb.Metadata{TypedFilterMetadata: map[string]*anypb.Any{
		"envoy.http11_proxy_transport_socket.proxy_address": testutil.MarshalAny(&v3corepb.Address{Address: &v3corepb.Address_SocketAddress{
			SocketAddress: &v3corepb.SocketAddress{Address: host, PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: uint32(p)}},
		}}),
	}}
}

// proxySocket is the HTTP/1.1 proxy transport socket around inner (nil:
// none).
func proxySocket(inner *v3corepb.TransportSocket) *v3corepb.TransportSocket {
	return &v3corepb.TransportSocket{
		Name:       "envoy.transport_sockets.http_11_proxy",
		ConfigType: &v3corepb.TransportSocket_TypedConfig{TypedConfig: testutil.MarshalAny(&v3http11proxypb.Http11ProxyUpstreamTransport{TransportSocket: inner})},
	}
}

// connectScenarios serves the HTTP CONNECT scenarios of grpc-go's
// test/xds/xds_client_http_connect_test.go and returns them, each with
// the proxy it uses.
type connectScenario struct {
	target string
	proxy  *testutil.ConnectProxy
	want   rpcOutcome
}

func serveConnectScenarios(ctx context.Context, t *testing.T, s *gcpServer, mesh *certs.Mesh) []connectScenario {
	t.Helper()
	plain, err := testutil.StartBackend(testutil.BackendOptions{ID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)
	secure, err := testutil.StartBackend(testutil.BackendOptions{ID: "secure", TLS: mesh.ServerTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secure.Stop)
	newProxy := func() *testutil.ConnectProxy {
		p, err := testutil.StartConnectProxy()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	var res testutil.Resources
	var out []connectScenario
	add := func(target string, port uint32, id string, mod func(r testutil.Resources, proxy string), proxied bool) {
		p := newProxy()
		addChain(&res, target, port, func(r testutil.Resources) { mod(r, p.Addr) })
		want := rpcOutcome{Code: codes.OK, ServerID: id}
		if proxied {
			want.Seen = "127.0.0.1:" + strconv.FormatUint(uint64(port), 10)
		}
		out = append(out, connectScenario{target: target, proxy: p, want: want})
	}
	add("endpoint-metadata", plain.Port, "plain", func(r testutil.Resources, proxy string) {
		r.Clusters[0].TransportSocket = proxySocket(nil)
		r.Endpoints[0].Endpoints[0].LbEndpoints[0].Metadata = proxyAddressMetadata(t, proxy)
	}, true)
	add("locality-metadata", plain.Port, "plain", func(r testutil.Resources, proxy string) {
		r.Clusters[0].TransportSocket = proxySocket(nil)
		r.Endpoints[0].Endpoints[0].Metadata = proxyAddressMetadata(t, proxy)
	}, true)
	add("no-metadata", plain.Port, "plain", func(r testutil.Resources, _ string) {
		r.Clusters[0].TransportSocket = proxySocket(nil)
	}, false)
	add("tls-through-tunnel", secure.Port, "secure", func(r testutil.Resources, proxy string) {
		r.Clusters[0].TransportSocket = proxySocket(testutil.UpstreamTLS(testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh"}))
		r.Endpoints[0].Endpoints[0].LbEndpoints[0].Metadata = proxyAddressMetadata(t, proxy)
	}, true)
	s.setSnapshot(ctx, t, "1", res)
	return out
}

// connectOutcomes runs each scenario on this library's channel (a client
// with copts) and grpc-go's, and returns their outcomes.
func connectOutcomes(ctx context.Context, t *testing.T, s *gcpServer, mesh *certs.Mesh, scenarios []connectScenario, copts ...client.Option) (ours, theirs []rpcOutcome) {
	t.Helper()
	bootstrapJSON := meshBootstrap(t, s, mesh)
	cfg, err := bootstrap.Parse(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	theirCreds, err := grpcxdscreds.NewClientCredentials(grpcxdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		outcome := func(opts ...grpc.DialOption) rpcOutcome {
			before := len(sc.proxy.Targets())
			resp, err := oneRPC(ctx, t, "xds:///"+sc.target, opts...)
			return rpcOutcome{Code: status.Code(err), ServerID: resp.GetServerId(), Seen: strings.Join(slices.Compact(sc.proxy.Targets()[before:]), ",")}
		}
		ours = append(ours, outcome(xdsresolver.DialOptions(c)...))
		theirs = append(theirs, outcome(grpc.WithResolvers(theirResolver), grpc.WithTransportCredentials(grpccreds.TransportCredentials(theirCreds))))
	}
	return ours, theirs
}

// TestHTTPConnect_SideBySide_GRPCGo: HTTP CONNECT (gRFC A86) enabled on
// both sides (client.WithHTTPConnect; GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT=true
// in a child process): the same backends, reached through the same
// proxies, with TLS through the tunnel (xDS credentials on both sides).
func TestHTTPConnect_SideBySide_GRPCGo(t *testing.T) {
	if !inChildWithGRPCEnv(t, "GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT=true") {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	s := startGCPServer(t)
	scenarios := serveConnectScenarios(ctx, t, s, mesh)
	ours, theirs := connectOutcomes(ctx, t, s, mesh, scenarios, client.WithHTTPConnect())
	for i, sc := range scenarios {
		if ours[i] != sc.want || theirs[i] != sc.want {
			t.Errorf("%s: proxyless/xds %+v, grpc-go %+v; want both %+v", sc.target, ours[i], theirs[i], sc.want)
		}
	}
}

// TestHTTPConnect_Off_SideBySide_GRPCGo: with HTTP CONNECT off on both
// sides (the defaults), both NACK the Clusters: every RPC fails
// UNAVAILABLE, and no proxy is asked.
func TestHTTPConnect_Off_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	s := startGCPServer(t)
	scenarios := serveConnectScenarios(ctx, t, s, mesh)
	ours, theirs := connectOutcomes(ctx, t, s, mesh, scenarios)
	want := rpcOutcome{Code: codes.Unavailable}
	for i, sc := range scenarios {
		if ours[i] != want || theirs[i] != want {
			t.Errorf("%s: proxyless/xds %+v, grpc-go %+v; want both %+v", sc.target, ours[i], theirs[i], want)
		}
	}
}
