// SPDX-License-Identifier: Apache-2.0

package googledefault_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/grpctransport/googledefault"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// trafficDirectorBootstrap is the shape of the bootstrap Traffic Director
// generates (td-grpc-bootstrap).
const trafficDirectorBootstrap = `{
  "xds_servers": [{
    "server_uri": "trafficdirector.googleapis.com:443",
    "channel_creds": [{"type": "google_default"}],
    "server_features": ["xds_v3", "ignore_resource_deletion"]
  }],
  "node": {
    "id": "projects/123456789012/networks/default/nodes/5ab3c1c4",
    "cluster": "cluster",
    "metadata": {"TRAFFICDIRECTOR_GCP_PROJECT_NUMBER": "123456789012", "TRAFFICDIRECTOR_NETWORK_NAME": "default"},
    "locality": {"zone": "us-central1-a"}
  }
}`

// fakeServiceAccount writes a service account key file with a fresh RSA
// key, for application default credentials that need no network to load
// (GOOGLE_APPLICATION_CREDENTIALS is looked at before the GCE metadata
// server).
func fakeServiceAccount(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(key))})
	sa, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "test-project",
		"private_key_id": "0123456789abcdef",
		"private_key":    string(keyPEM),
		"client_email":   "xds-test@test-project.iam.gserviceaccount.com",
		"client_id":      "123456789",
		"token_uri":      "https://oauth2.googleapis.com/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestTrafficDirectorBootstrap checks, offline, that a Traffic Director
// style bootstrap (google_default, server features xds_v3 and
// ignore_resource_deletion) parses and that the gRPC
// transport builds its credentials with this package's Builder: TLS
// transport credentials and OAuth2 per-RPC credentials that require
// transport security. Building does no network I/O: the channel connects
// only when a stream is opened, and none is.
func TestTrafficDirectorBootstrap(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", fakeServiceAccount(t))
	cfg, err := bootstrap.Parse([]byte(trafficDirectorBootstrap))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	sc := cfg.Servers[0]
	if sc.ChannelCreds.Type != bootstrap.CredsGoogleDefault || !sc.IgnoreResourceDeletion() {
		t.Fatalf("server = %+v, want google_default creds and ignore_resource_deletion", sc)
	}

	bundle, release, err := googledefault.Builder{}.Build(sc.ChannelCreds.Config)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if release != nil {
		release()
	}
	if tc := bundle.TransportCredentials(); tc == nil || tc.Info().SecurityProtocol != "tls" {
		t.Fatalf("transport credentials = %v, want TLS", tc)
	}
	if pc := bundle.PerRPCCredentials(); pc == nil || !pc.RequireTransportSecurity() {
		t.Fatalf("per-RPC credentials = %v, want OAuth2 credentials that require transport security", pc)
	}

	tr, err := grpctransport.NewBuilder(grpctransport.WithChannelCreds(googledefault.Builder{})).Dial(sc, transport.BuildOptions{})
	if err != nil {
		t.Fatalf("grpctransport Build: %v", err)
	}
	tr.Close()
}
