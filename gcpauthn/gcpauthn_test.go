// SPDX-License-Identifier: Apache-2.0

package gcpauthn

import (
	"context"
	"crypto/tls"
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// jwt returns an unsigned JWT for audience that expires in an hour: the
// credentials read only its exp.
func jwt(audience string) string {
	enc := base64.RawURLEncoding.EncodeToString
	payload := fmt.Sprintf(`{"aud":%q,"exp":%d}`, audience, time.Now().Add(time.Hour).Unix())
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sig"))
}

// metadataServer is a fake GCE metadata server: it answers identity
// requests with a JWT for their audience, or with status when set, and
// counts requests by audience. GCE_METADATA_HOST points at it for the
// test.
type metadataServer struct {
	mu      sync.Mutex
	fetches map[string]int
	status  int
}

func startMetadataServer(t *testing.T) *metadataServer {
	ms := &metadataServer{fetches: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/computeMetadata/v1/instance/service-accounts/default/identity" || r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		aud := r.URL.Query().Get("audience")
		ms.mu.Lock()
		ms.fetches[aud]++
		code := ms.status
		ms.mu.Unlock()
		if code != 0 {
			http.Error(w, "metadata server says no", code)
			return
		}
		fmt.Fprint(w, jwt(aud))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(srv.URL, "http://"))
	return ms
}

func (ms *metadataServer) count(aud string) int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.fetches[aud]
}

func (ms *metadataServer) fail(code int) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.status = code
}

// echoAuth is a TLS backend whose UnaryCall answers with the
// authorization header it got (in SimpleResponse.username).
type echoAuth struct {
	testgrpc.UnimplementedTestServiceServer
}

func (echoAuth) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return &testgrpc.SimpleResponse{Username: strings.Join(md.Get("authorization"), ",")}, nil
}

// backend starts a backend, TLS with a certificate of ca unless plain,
// and returns a client of it.
func backend(t *testing.T, plain bool) testgrpc.TestServiceClient {
	t.Helper()
	ca, err := certs.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(certs.Options{DNSNames: []string{"backend.example"}})
	if err != nil {
		t.Fatal(err)
	}
	srvCreds, cliCreds := insecure.NewCredentials(), insecure.NewCredentials()
	if !plain {
		srvCreds = credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{leaf.TLS}})
		cliCreds = credentials.NewTLS(&tls.Config{RootCAs: certs.Pool(ca), ServerName: "backend.example"})
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(srvCreds))
	testgrpc.RegisterTestServiceServer(s, echoAuth{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(cliCreds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call makes an RPC with the credentials of audience and returns the
// authorization header the backend saw.
func call(t *testing.T, c testgrpc.TestServiceClient, a *Authenticator, filter string, size uint64, audience string) (string, error) {
	t.Helper()
	creds, err := a.CallCredentials(filter, size, audience)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.UnaryCall(testContext(t), &testgrpc.SimpleRequest{}, grpc.PerRPCCredentials(creds))
	return resp.GetUsername(), err
}

// TestAuthenticator_Tokens checks that RPCs carry the ID token of their
// audience from the metadata server, fetched once and then cached.
func TestAuthenticator_Tokens(t *testing.T) {
	ms := startMetadataServer(t)
	c := backend(t, false)
	a := New()
	defer a.Close()
	for i := 0; i < 3; i++ {
		got, err := call(t, c, a, "gcp", 10, "https://a.example")
		if err != nil || !strings.HasPrefix(got, "Bearer ") || strings.Count(got, ".") != 2 {
			t.Fatalf("RPC %d: authorization %q, %v; want a bearer JWT", i, got, err)
		}
	}
	if n := ms.count("https://a.example"); n != 1 {
		t.Errorf("%d fetches for the audience, want 1 (cached)", n)
	}
}

// TestAuthenticator_LRU checks the bound of a filter instance's cache
// (gRFC A83 cache_size): the least recently used audience's credentials,
// and so its token, go first; a smaller size applies at once; instances
// have caches of their own.
func TestAuthenticator_LRU(t *testing.T) {
	ms := startMetadataServer(t)
	c := backend(t, false)
	a := New()
	defer a.Close()
	for _, aud := range []string{"A", "B", "A", "C", "A", "B"} { // size 2: B is evicted by C
		if _, err := call(t, c, a, "gcp", 2, aud); err != nil {
			t.Fatal(err)
		}
	}
	if got := [3]int{ms.count("A"), ms.count("B"), ms.count("C")}; got != [3]int{1, 2, 1} {
		t.Errorf("fetches of A, B, C = %v, want [1 2 1]", got)
	}
	// Size 1 keeps B only: A is fetched again.
	if _, err := call(t, c, a, "gcp", 1, "B"); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, c, a, "gcp", 1, "A"); err != nil {
		t.Fatal(err)
	}
	if n := ms.count("A"); n != 2 {
		t.Errorf("fetches of A after shrinking = %d, want 2", n)
	}
	// Another filter instance does not share the cache.
	if _, err := call(t, c, a, "other", 1, "A"); err != nil {
		t.Fatal(err)
	}
	if n := ms.count("A"); n != 3 {
		t.Errorf("fetches of A by another filter instance = %d, want 3", n)
	}
	if _, err := a.CallCredentials("gcp", 0, "A"); err == nil {
		t.Error("CallCredentials with cache size 0: no error")
	}
}

// TestAuthenticator_Errors checks the status of RPCs whose token cannot
// be had (gRFC A83): UNAVAILABLE when the metadata server's status maps
// to it, UNAUTHENTICATED otherwise; and that tokens are not sent without
// transport security.
func TestAuthenticator_Errors(t *testing.T) {
	ms := startMetadataServer(t)
	c := backend(t, false)
	for _, tc := range []struct {
		status int
		want   codes.Code
	}{{http.StatusServiceUnavailable, codes.Unavailable}, {http.StatusForbidden, codes.Unauthenticated}} {
		ms.fail(tc.status)
		a := New()
		if _, err := call(t, c, a, "gcp", 10, "https://a.example"); status.Code(err) != tc.want {
			t.Errorf("metadata server status %d: RPC = %v, want %v", tc.status, err, tc.want)
		}
		a.Close()
	}
	ms.fail(0)
	a := New()
	defer a.Close()
	if _, err := call(t, backend(t, true), a, "gcp", 10, "https://a.example"); err == nil || status.Code(err) != codes.Unauthenticated && status.Code(err) != codes.Unavailable {
		t.Errorf("RPC over plaintext = %v, want it refused", err)
	}
}
