// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/gcpauthn"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3gcpauthnpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// End-to-end tests of the GCP authentication filter (gRFC A83): a fake
// GCE metadata server (GCE_METADATA_HOST) gives ID tokens; mesh backends
// (TLS: the tokens are only sent with transport security) answer with the
// authorization header they got.

// fakeMetadata serves ID tokens: a JWT whose payload names the audience
// asked for, and records the audiences.
type fakeMetadata struct {
	mu        sync.Mutex
	audiences []string
}

func startFakeMetadata(t *testing.T) *fakeMetadata {
	f := &fakeMetadata{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "no Metadata-Flavor", http.StatusForbidden)
			return
		}
		aud := r.URL.Query().Get("audience")
		f.mu.Lock()
		f.audiences = append(f.audiences, aud)
		f.mu.Unlock()
		enc := base64.RawURLEncoding.EncodeToString
		fmt.Fprint(w, enc([]byte(`{"alg":"RS256"}`))+"."+enc([]byte(fmt.Sprintf(`{"aud":%q,"exp":%d}`, aud, time.Now().Add(time.Hour).Unix())))+".sig")
	}))
	t.Cleanup(srv.Close)
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(srv.URL, "http://"))
	return f
}

// authBackend answers UnaryCall with the authorization header it got.
type authBackend struct {
	testgrpc.UnimplementedTestServiceServer
	port uint32
}

func (authBackend) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return &testgrpc.SimpleResponse{Username: strings.Join(md.Get("authorization"), ",")}, nil
}

func (e *secureEnv) startAuthBackend(t *testing.T) *authBackend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &authBackend{port: uint32(lis.Addr().(*net.TCPAddr).Port)}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(e.mesh.ServerTLS())))
	testgrpc.RegisterTestServiceServer(s, b)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return b
}

// withGCPAuthn returns l with a GCP authentication filter "gcp" before the
// router.
func withGCPAuthn(t *testing.T, l *v3listenerpb.Listener) *v3listenerpb.Listener {
	t.Helper()
	hcm := &v3httppb.HttpConnectionManager{}
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.HttpFilters = append([]*v3httppb.HttpFilter{{
		Name:       "gcp",
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: testutil.MarshalAny(&v3gcpauthnpb.GcpAuthnFilterConfig{})},
	}}, hcm.HttpFilters...)
	l.ApiListener.ApiListener = testutil.MarshalAny(hcm)
	return l
}

// gcpChain is the chain of listener name, with the GCP authentication
// filter, to the TLS backend b, whose cluster has audience for the filter
// ("" for none).
func (e *secureEnv) gcpChain(t *testing.T, name string, b *authBackend, audience string) testutil.Resources {
	r := testutil.Chain(testutil.ChainOptions{Listener: name, Ports: []uint32{b.port}})
	r.Listeners[0] = withGCPAuthn(t, r.Listeners[0])
	testutil.WithUpstreamTLS(r.Clusters[0], testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh"})
	if audience != "" {
		r.Clusters[0].Metadata = &v3corepb.Metadata{TypedFilterMetadata: map[string]*anypb.Any{
			"gcp": testutil.MarshalAny(&v3gcpauthnpb.Audience{Url: audience}),
		}}
	}
	return r
}

// TestGCPAuthentication checks the filter with DialOptions and
// WithGCPAuthentication: an RPC to a cluster with an audience carries
// "authorization: Bearer <ID token of that audience>", fetched once; one
// to a cluster without carries none; without WithGCPAuthentication, the
// RPC fails, naming the option.
func TestGCPAuthentication(t *testing.T) {
	md := startFakeMetadata(t)
	e := newSecureEnv(t, 0)
	b := e.startAuthBackend(t)
	if err := e.ms.Update("", merge(
		e.gcpChain(t, "with-audience", b, "https://backend.example"),
		e.gcpChain(t, "without-audience", b, ""),
	)); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	auth := gcpauthn.New()
	defer auth.Close()
	authorization := func(target string, opts ...xdsresolver.Option) (string, error) {
		cc, err := grpc.NewClient("xds:///"+target, xdsresolver.DialOptions(e.client, append(opts, xdsresolver.WithLogger(testLogger(t)))...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
		return resp.GetUsername(), err
	}
	for range 2 {
		got, err := authorization("with-audience", xdsresolver.WithGCPAuthentication(auth))
		if err != nil || !strings.HasPrefix(got, "Bearer ") || !strings.Contains(got, base64.RawURLEncoding.EncodeToString([]byte(`{"aud":"https://backend.example"`))[:20]) {
			t.Fatalf("RPC to the cluster with an audience: authorization %q, %v; want a bearer token for https://backend.example", got, err)
		}
	}
	md.mu.Lock()
	if len(md.audiences) != 1 || md.audiences[0] != "https://backend.example" {
		t.Errorf("the metadata server was asked for %q, want one token of https://backend.example", md.audiences)
	}
	md.mu.Unlock()
	if got, err := authorization("without-audience", xdsresolver.WithGCPAuthentication(auth)); err != nil || got != "" {
		t.Errorf("RPC to the cluster without an audience: authorization %q, %v; want none", got, err)
	}
	if _, err := authorization("with-audience"); !isUnavailableWith(err, "xdsresolver.WithGCPAuthentication") {
		t.Errorf("RPC without WithGCPAuthentication: %v; want UNAVAILABLE naming it", err)
	}
}
