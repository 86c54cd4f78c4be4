// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"crypto/tls"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// End-to-end tests of SNI from xDS (gRFC A101), the scenarios of grpc-go's
// test/xds/xds_client_sni_test.go: the mesh's backends present, for an
// SNI in *.test.example.com, a certificate for that wildcard (the SAN of
// grpc-go's test certificates), and otherwise the mesh's server
// certificate (DNS "localhost", its SPIFFE ID); they record the SNIs
// they get.

// validSNI is a name of the wildcard certificate.
const validSNI = "x.test.example.com"

// sniBackend is a mesh backend that chooses its certificate by SNI.
type sniBackend struct {
	*testutil.Backend
	mu   sync.Mutex
	snis []string
}

func (e *secureEnv) startSNIBackend(t *testing.T, id string) *sniBackend {
	t.Helper()
	wildcard, err := e.mesh.CA.Issue(certs.Options{SPIFFEID: e.mesh.ID("backend"), DNSNames: []string{"*.test.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	sb := &sniBackend{}
	cfg := e.mesh.ServerTLS()
	cfg.Certificates = nil
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		sb.mu.Lock()
		sb.snis = append(sb.snis, hello.ServerName)
		sb.mu.Unlock()
		if strings.HasSuffix(hello.ServerName, ".test.example.com") {
			return &wildcard.TLS, nil
		}
		return &e.mesh.Server.TLS, nil
	}
	if sb.Backend, err = testutil.StartBackend(testutil.BackendOptions{ID: id, TLS: cfg}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Stop)
	return sb
}

// lastSNI returns the SNI of the backend's last handshake.
func (sb *sniBackend) lastSNI() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.snis) == 0 {
		return "<no handshake>"
	}
	return sb.snis[len(sb.snis)-1]
}

// sniTLS returns a transport socket for the instance "mesh" with the SNI
// settings of ctx, and the SAN matchers sans.
func sniTLS(t *testing.T, ctx *v3tlspb.UpstreamTlsContext, sans ...*v3matcherpb.StringMatcher) *v3corepb.TransportSocket {
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

// sniChain is the chain of listener name to b, whose cluster has the
// transport socket ts; hostname is the endpoint's.
func sniChain(name string, b *sniBackend, hostname string, ts *v3corepb.TransportSocket) testutil.Resources {
	r := testutil.Chain(testutil.ChainOptions{Listener: name, Ports: []uint32{b.Port}})
	r.Clusters[0].TransportSocket = ts
	r.Endpoints[0].Endpoints[0].LbEndpoints[0].GetEndpoint().Hostname = hostname
	return r
}

func merge(rs ...testutil.Resources) testutil.Resources {
	var out testutil.Resources
	for _, r := range rs {
		out.Listeners = append(out.Listeners, r.Listeners...)
		out.Routes = append(out.Routes, r.Routes...)
		out.Clusters = append(out.Clusters, r.Clusters...)
		out.Endpoints = append(out.Endpoints, r.Endpoints...)
	}
	return out
}

// TestSNI_SANValidation: an SNI valid for the certificate the server
// presents for it succeeds; one that is not fails the handshake, naming
// the SNI (TestClientSideXDS_SNISANValidation). The backends saw the SNIs.
func TestSNI_SANValidation(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1, b2 := e.startSNIBackend(t, "b1"), e.startSNIBackend(t, "b2")
	if err := e.ms.Update("", merge(
		sniChain("valid", b1, "", sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: validSNI, AutoSniSanValidation: true})),
		sniChain("invalid", b2, "", sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: "wrong.sni.domain", AutoSniSanValidation: true})),
	)); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	b := xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t)))
	if resp, err := unary(ctx, e.dialSecure(t, "xds:///valid", b)); err != nil || resp.GetServerId() != "b1" {
		t.Fatalf("RPC with a valid SNI = %v, %v; want answered by b1", resp, err)
	}
	if got := b1.lastSNI(); got != validSNI {
		t.Errorf("b1 got SNI %q, want %q", got, validSNI)
	}
	_, err := unary(ctx, e.dialSecure(t, "xds:///invalid", b))
	if !isUnavailableWith(err, `do not match the SNI "wrong.sni.domain"`) {
		t.Fatalf("RPC with an SNI the certificate lacks = %v, want UNAVAILABLE naming the SNI", err)
	}
	if got := b2.lastSNI(); got != "wrong.sni.domain" {
		t.Errorf("b2 got SNI %q, want wrong.sni.domain", got)
	}
}

// TestSNI_AutoHostSNI: with auto_host_sni, the endpoint's host name is the
// SNI, whatever sni says (TestClientSideXDS_AutoHostSNI).
func TestSNI_AutoHostSNI(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1 := e.startSNIBackend(t, "b1")
	if err := e.ms.Update("", sniChain("svc", b1, validSNI, sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: "wrong.sni.domain", AutoHostSni: true, AutoSniSanValidation: true}))); err != nil {
		t.Fatal(err)
	}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t))))
	if resp, err := unary(testContext(t), tc); err != nil || resp.GetServerId() != "b1" {
		t.Fatalf("RPC = %v, %v; want answered by b1", resp, err)
	}
	if got := b1.lastSNI(); got != validSNI {
		t.Errorf("b1 got SNI %q, want the endpoint's host name %q", got, validSNI)
	}
}

// TestSNI_AutoHostSNI_PerEndpoint: each endpoint's handshake has its own
// host name: priority 0's, which the certificate lacks, fails; once
// priority 1 comes, with a valid host name, RPCs fail over to it
// (TestClientSideXDS_AutoHostSNI_MultipleEndpoints).
func TestSNI_AutoHostSNI_PerEndpoint(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1, b2 := e.startSNIBackend(t, "b1"), e.startSNIBackend(t, "b2")
	ts := sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: "wrong.sni.domain", AutoHostSni: true, AutoSniSanValidation: true})
	r := sniChain("svc", b1, "wrong.sni.domain", ts)
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t))))
	if _, err := unary(ctx, tc); !isUnavailableWith(err, "authentication handshake failed") {
		t.Fatalf("RPC to priority 0 = %v, want a failed handshake", err)
	}
	p1 := proto2Locality(b2, validSNI)
	r.Endpoints[0].Endpoints = append(r.Endpoints[0].Endpoints, p1)
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
	resp, err := tc.UnaryCall(ctx, testgrpcSimple(), grpc.WaitForReady(true))
	if err != nil || resp.GetServerId() != "b2" {
		t.Fatalf("RPC after priority 1 came = %v, %v; want answered by b2", resp, err)
	}
	if got := b2.lastSNI(); got != validSNI {
		t.Errorf("b2 got SNI %q, want %q", got, validSNI)
	}
}

// proto2Locality is a locality of priority 1 with b at hostname.
func proto2Locality(b *sniBackend, hostname string) *v3endpointpb.LocalityLbEndpoints {
	ep := testutil.Endpoints("x", "127.0.0.1", b.Port).Endpoints[0]
	ep.Locality = &v3corepb.Locality{SubZone: "p1"}
	ep.Priority = 1
	ep.LoadBalancingWeight = wrapperspb.UInt32(1)
	ep.LbEndpoints[0].GetEndpoint().Hostname = hostname
	return ep
}

// TestSNI_FallbackSANMatchers: auto_sni_san_validation without an SNI
// checks match_subject_alt_names (TestClientSideXDS_FallbackSANMatchers);
// and sni without auto_sni_san_validation is sent but the matchers decide
// (TestClientSideXDS_SNIEnvVarDisabled's clusters, whose outcomes here
// come from the settings, not from an environment variable).
func TestSNI_FallbackSANMatchers(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1, b2, b3, b4 := e.startSNIBackend(t, "b1"), e.startSNIBackend(t, "b2"), e.startSNIBackend(t, "b3"), e.startSNIBackend(t, "b4")
	if err := e.ms.Update("", merge(
		sniChain("match", b1, "", sniTLS(t, &v3tlspb.UpstreamTlsContext{AutoSniSanValidation: true}, testutil.ExactSAN("localhost"))),
		sniChain("nomatch", b2, "", sniTLS(t, &v3tlspb.UpstreamTlsContext{AutoSniSanValidation: true}, testutil.ExactSAN("wrong.san.domain"))),
		sniChain("sni-match", b3, "", sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: "incorrect.sni"}, testutil.ExactSAN("localhost"))),
		sniChain("sni-nomatch", b4, "", sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: validSNI}, testutil.ExactSAN("wrong.san.domain"))),
	)); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	b := xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t)))
	for _, tc := range []struct {
		target  string
		b       *sniBackend
		wantSNI string
		wantErr string
	}{
		{"match", b1, "", ""},
		{"nomatch", b2, "", "match none of match_subject_alt_names"},
		{"sni-match", b3, "incorrect.sni", ""},
		{"sni-nomatch", b4, validSNI, "match none of match_subject_alt_names"},
	} {
		_, err := unary(ctx, e.dialSecure(t, "xds:///"+tc.target, b))
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && !isUnavailableWith(err, tc.wantErr) {
			t.Errorf("%s: RPC = %v, want error %q", tc.target, err, tc.wantErr)
		}
		if got := tc.b.lastSNI(); got != tc.wantSNI {
			t.Errorf("%s: backend got SNI %q, want %q", tc.target, got, tc.wantSNI)
		}
	}
}

// TestSNI_AutoHostSNI_LogicalDNS: the host name of a LOGICAL_DNS cluster's
// endpoint is its DNS name, without port in the SNI
// (TestClientSideXDS_AutoHostSNI_LogicalDNS).
func TestSNI_AutoHostSNI_LogicalDNS(t *testing.T) {
	e := newSecureEnv(t, 0)
	b1 := e.startSNIBackend(t, "b1")
	dnsCluster := testutil.LogicalDNSCluster("dns", validSNI, b1.Port)
	dnsCluster.TransportSocket = sniTLS(t, &v3tlspb.UpstreamTlsContext{Sni: "wrong.sni.domain", AutoHostSni: true, AutoSniSanValidation: true})
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	if err := e.ms.Update("", testutil.Resources{
		Listeners: r.Listeners,
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "svc", "dns")},
		Clusters:  []*v3clusterpb.Cluster{dnsCluster},
	}); err != nil {
		t.Fatal(err)
	}
	dns := &fakeDNS{addrs: map[string][]string{validSNI: {"127.0.0.1"}}}
	tc := e.dialSecure(t, "xds:///svc", xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t)), xdsresolver.WithDepMgrOptions(depmgr.WithDNSResolver(dns))))
	if resp, err := unary(testContext(t), tc); err != nil || resp.GetServerId() != "b1" {
		t.Fatalf("RPC = %v, %v; want answered by b1", resp, err)
	}
	if got := b1.lastSNI(); got != validSNI {
		t.Errorf("b1 got SNI %q, want the DNS name %q", got, validSNI)
	}
}

func testgrpcSimple() *testgrpc.SimpleRequest { return &testgrpc.SimpleRequest{} }
