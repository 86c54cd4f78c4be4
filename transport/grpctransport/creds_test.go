// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// headerRecorder is a stream interceptor that records a header of every
// stream, and rejects streams without it with Unauthenticated.
type headerRecorder struct {
	header string
	mu     sync.Mutex
	seen   []string
}

func (r *headerRecorder) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	v := md.Get(r.header)
	if len(v) == 0 {
		return status.Errorf(codes.Unauthenticated, "no %s header", r.header)
	}
	r.mu.Lock()
	r.seen = append(r.seen, v[0])
	r.mu.Unlock()
	return h(srv, ss)
}

func (r *headerRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return ""
	}
	return r.seen[len(r.seen)-1]
}

// testJWT returns an unsigned JWT with the given subject, valid for an
// hour (A97 clients only read `exp`).
func testJWT(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()})
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "." + enc([]byte("sig"))
}

// TestCallCreds_JWTTokenFile checks `call_creds` "jwt_token_file"
// (gRFC A97, R-1.3, R-3.2) against a TLS server that checks the token:
//  1. Each stream carries "authorization: Bearer <token>" from the file.
//  2. A rewritten file is read again: the next stream carries the new
//     token, although the old one is still valid.
//  3. A missing file fails the stream with Unavailable.
func TestCallCreds_JWTTokenFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	p := newPKI(t)
	rec := &headerRecorder{header: "authorization"}
	lis := startServer(t, nil, serverTLSOption(t, p.serverCA, nil), grpc.StreamInterceptor(rec.intercept))

	tokenFile := filepath.Join(t.TempDir(), "token.jwt")
	tokenA, tokenB := testJWT("a"), testJWT("b-is-longer")
	if err := os.WriteFile(tokenFile, []byte(tokenA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{"xds_servers": [{"server_uri": %q,
		"channel_creds": [{"type": "tls", "config": {"ca_certificate_file": %q}}],
		"call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": %q}}]}]}`,
		lis.Addr().String(), p.caFile, tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	tr := build(t, grpctransport.NewBuilder(), cfg.Servers[0])

	// Step 1.
	if err := verifyNewStreamEcho(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.last(), "Bearer "+tokenA; got != want {
		t.Fatalf("authorization = %q, want %q", got, want)
	}

	// Step 2.
	if err := os.WriteFile(tokenFile, []byte(tokenB), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := verifyNewStreamEcho(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.last(), "Bearer "+tokenB; got != want {
		t.Fatalf("authorization after the token file changed = %q, want %q", got, want)
	}

	// Step 3.
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	st, err := tr.NewStream(sctx, transport.ADSMethod)
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "token.jwt") {
		t.Fatalf("stream with a missing token file: error %v, want Unavailable naming the file", err)
	}
}

// TestCallCreds_NeedSecureChannel checks that call credentials that
// require transport security with "insecure" channel credentials fail
// Build with an error naming both, instead of sending a token in
// plaintext (gRFC A97).
func TestCallCreds_NeedSecureChannel(t *testing.T) {
	sc := insecureConfig("127.0.0.1:1")
	sc.CallCreds = []bootstrap.CallCreds{{Type: bootstrap.CallCredsJWTTokenFile, Config: json.RawMessage(`{"jwt_token_file":"/t"}`), JWTTokenFile: "/t"}}
	_, err := grpctransport.NewBuilder().Dial(sc, transport.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), `call_creds[0] (type "jwt_token_file") need secure channel_creds`) {
		t.Fatalf("Build error = %v, want one about call_creds[0] needing secure channel_creds", err)
	}
}

// userCreds is a user-defined channel credentials type: plaintext, with a
// per-RPC header from its config.
type userCreds struct{ name string }

func (u userCreds) Name() string { return u.name }

func (u userCreds) Build(config json.RawMessage) (credentials.Bundle, func(), error) {
	var cfg struct {
		Team string `json:"team"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, nil, err
	}
	return teamBundle{team: cfg.Team}, nil, nil
}

type teamBundle struct{ team string }

func (b teamBundle) TransportCredentials() credentials.TransportCredentials {
	return insecure.NewCredentials()
}
func (b teamBundle) PerRPCCredentials() credentials.PerRPCCredentials { return b }
func (b teamBundle) NewWithMode(string) (credentials.Bundle, error)   { return b, nil }
func (b teamBundle) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"x-team": b.team}, nil
}
func (b teamBundle) RequireTransportSecurity() bool { return false }

// TestChannelCreds_UserDefined checks pluggable channel credentials
// without a global registry: a type declared to bootstrap.Parse
// and built by a builder given to the Builder is selected before
// "insecure", gets its config, and its per-RPC credentials reach the
// server. Without the builder, Build fails naming the type.
func TestChannelCreds_UserDefined(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	rec := &headerRecorder{header: "x-team"}
	lis := startServer(t, nil, grpc.StreamInterceptor(rec.intercept))
	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{"xds_servers": [{"server_uri": %q,
		"channel_creds": [{"type": "team_creds", "config": {"team": "blue"}}, {"type": "insecure"}]}]}`, lis.Addr().String()),
		bootstrap.WithChannelCredsTypes("team_creds"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := grpctransport.NewBuilder().Dial(cfg.Servers[0], transport.BuildOptions{}); err == nil || !strings.Contains(err.Error(), `"team_creds"`) {
		t.Fatalf("Build without the builder: error %v, want one naming \"team_creds\"", err)
	}
	tr := build(t, grpctransport.NewBuilder(grpctransport.WithChannelCreds(userCreds{name: "team_creds"})), cfg.Servers[0])
	if err := verifyNewStreamEcho(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(); got != "blue" {
		t.Fatalf("x-team = %q, want %q", got, "blue")
	}
}

// TestChannelCreds_GoogleDefaultNeedsBuilder checks that "google_default"
// without its builder fails Build with an error that says which package
// provides it.
func TestChannelCreds_GoogleDefaultNeedsBuilder(t *testing.T) {
	sc := &bootstrap.ServerConfig{ServerURI: "trafficdirector.googleapis.com:443", ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsGoogleDefault}}
	_, err := grpctransport.NewBuilder().Dial(sc, transport.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "grpctransport/googledefault") {
		t.Fatalf("Build error = %v, want one naming package grpctransport/googledefault", err)
	}
}
