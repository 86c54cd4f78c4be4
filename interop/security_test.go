// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcxdscreds "google.golang.org/grpc/credentials/xds"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver"

	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// securityOutcome is what a test compares of an RPC: its code, and the
// client identity the backend saw.
type securityOutcome struct {
	Code     codes.Code
	ServerID string
	Client   string // the client's SPIFFE ID the backend saw; "" for none
}

// TestSecurity_SideBySide_GRPCGo serves one go-control-plane configuration
// to two channels per target, one through this library's resolver and
// credentials (package xdscreds), one through grpc-go's own xDS
// resolver and credentials/xds, both with the same bootstrap (a
// file_watcher instance "mesh" of a certs.Mesh), and checks that they
// have the same outcomes (gRFC A29):
//   - xds:///mtls, a Cluster whose UpstreamTlsContext accepts the
//     backend's SPIFFE ID: the RPC succeeds and the backend (which
//     requires client certificates) sees the client's SPIFFE ID;
//   - xds:///wrong-san, one that wants another identity: UNAVAILABLE;
//   - xds:///plain, a Cluster without transport socket to a plaintext
//     backend: the fallback credentials (plaintext) succeed.
func TestSecurity_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	secure, err := testutil.StartBackend(testutil.BackendOptions{ID: "secure", TLS: mesh.ServerTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secure.Stop)
	plain, err := testutil.StartBackend(testutil.BackendOptions{ID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)

	var res testutil.Resources
	add := func(listener string, port uint32, tls *testutil.UpstreamTLSOptions) {
		r := testutil.Chain(testutil.ChainOptions{Listener: listener, Ports: []uint32{port}})
		if tls != nil {
			testutil.WithUpstreamTLS(r.Clusters[0], *tls)
		}
		res.Listeners, res.Routes = append(res.Listeners, r.Listeners...), append(res.Routes, r.Routes...)
		res.Clusters, res.Endpoints = append(res.Clusters, r.Clusters...), append(res.Endpoints, r.Endpoints...)
	}
	tlsTo := func(san string) *testutil.UpstreamTLSOptions {
		return &testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh", SubjectAltNames: []*v3matcherpb.StringMatcher{testutil.ExactSAN(san)}}
	}
	add("mtls", secure.Port, tlsTo(mesh.ID("backend")))
	add("wrong-san", secure.Port, tlsTo(mesh.ID("other")))
	add("plain", plain.Port, nil)
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	bootstrapJSON, err := testutil.WithCertificateProviders([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)), map[string]testutil.FileWatcher{
		"mesh": {CertificateFile: mesh.ClientCertFile, PrivateKeyFile: mesh.ClientKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}

	// This library: client, resolver and credentials.
	cfg, err := bootstrap.Parse(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ourCreds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	// grpc-go's xDS resolver and credentials.
	theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	theirCreds, err := grpcxdscreds.NewClientCredentials(grpcxdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}

	outcome := func(target string, b grpcresolver.Builder, creds grpccreds.TransportCredentials) securityOutcome {
		t.Helper()
		cc, err := grpc.NewClient(target, grpc.WithResolvers(b), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(rctx, &testgrpc.SimpleRequest{})
		if err != nil {
			t.Logf("%s: %v", target, err)
		}
		return securityOutcome{Code: status.Code(err), ServerID: resp.GetServerId(), Client: resp.GetUsername()}
	}
	for _, tc := range []struct {
		target string
		want   securityOutcome
	}{
		{"xds:///mtls", securityOutcome{Code: codes.OK, ServerID: "secure", Client: mesh.ID("client")}},
		{"xds:///wrong-san", securityOutcome{Code: codes.Unavailable}},
		{"xds:///plain", securityOutcome{Code: codes.OK, ServerID: "plain"}},
	} {
		ours := outcome(tc.target, xdsresolver.NewBuilder(c), ourCreds)
		theirs := outcome(tc.target, theirResolver, theirCreds)
		if ours != tc.want || theirs != tc.want {
			t.Errorf("%s: proxyless/xds %+v, grpc-go %+v; want both %+v", tc.target, ours, theirs, tc.want)
		}
	}
}

// TestSecurity_GRPCGoCredentialsRefused checks that a channel of this
// library's resolver with grpc-go's credentials/xds, which a program
// moving from grpc-go's xDS channel keeps by mistake, fails loudly rather
// than connecting in plaintext: grpc-go's credentials cannot read this
// resolver's TLS configuration of a cluster and use their fallback
// credentials for every cluster. Its RPCs fail with UNAVAILABLE naming
// xdscreds.NewClientCredentials; Build fails with ErrGRPCXDSCredentials.
// The cluster asks for TLS to a plaintext backend, so plaintext would
// succeed.
func TestSecurity_GRPCGoCredentialsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := testutil.StartBackend(testutil.BackendOptions{ID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{plain.Port}})
	testutil.WithUpstreamTLS(res.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh", SubjectAltNames: []*v3matcherpb.StringMatcher{testutil.ExactSAN(mesh.ID("backend"))}})
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)
	bootstrapJSON, err := testutil.WithCertificateProviders([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)), map[string]testutil.FileWatcher{
		"mesh": {CertificateFile: mesh.ClientCertFile, PrivateKeyFile: mesh.ClientKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	theirCreds, err := grpcxdscreds.NewClientCredentials(grpcxdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}

	for name, opts := range map[string][]grpc.DialOption{
		"NewBuilder":  {grpc.WithResolvers(xdsresolver.NewBuilder(c)), grpc.WithTransportCredentials(theirCreds)},
		"DialOptions": append(xdsresolver.DialOptions(c), grpc.WithTransportCredentials(theirCreds)),
	} {
		cc, err := grpc.NewClient("xds:///svc", opts...)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(rctx, &testgrpc.SimpleRequest{})
		rcancel()
		cc.Close()
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "xdscreds.NewClientCredentials") {
			t.Errorf("%s with grpc-go's credentials/xds: server %q, error %v; want UNAVAILABLE naming xdscreds.NewClientCredentials", name, resp.GetServerId(), err)
		}
	}

	u, err := url.Parse("xds:///svc")
	if err != nil {
		t.Fatal(err)
	}
	r, err := xdsresolver.NewBuilder(c).Build(grpcresolver.Target{URL: *u}, nil, grpcresolver.BuildOptions{DialCreds: theirCreds})
	if !errors.Is(err, xdsresolver.ErrGRPCXDSCredentials) {
		if r != nil {
			r.Close()
		}
		t.Errorf("Build with grpc-go's credentials/xds: %v; want ErrGRPCXDSCredentials", err)
	}
}
