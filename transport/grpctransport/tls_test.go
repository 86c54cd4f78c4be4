// SPDX-License-Identifier: Apache-2.0

package grpctransport_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// pki is a set of certificate files in a temporary directory.
type pki struct {
	dir                   string
	serverCA, clientCA    *testCA
	caFile, otherCAFile   string // serverCA's certificate; an unrelated CA's
	clientCert, clientKey string // signed by clientCA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), serverCA: newTestCA(t, "server-ca"), clientCA: newTestCA(t, "client-ca")}
	p.caFile = writeFile(t, p.dir, "ca.pem", p.serverCA.pem)
	p.otherCAFile = writeFile(t, p.dir, "other-ca.pem", newTestCA(t, "other-ca").pem)
	certPEM, keyPEM := p.clientCA.issue(t, "client", false)
	p.clientCert = writeFile(t, p.dir, "client.pem", certPEM)
	p.clientKey = writeFile(t, p.dir, "client.key", keyPEM)
	return p
}

func tlsConfig(addr string, cfg *bootstrap.TLSConfig) *bootstrap.ServerConfig {
	return &bootstrap.ServerConfig{
		ServerURI:    addr,
		ChannelCreds: bootstrap.ChannelCreds{Type: "tls", TLS: cfg},
	}
}

// verifyStreamFails checks that a stream on tr fails (at NewStream or the
// first Recv) with Unavailable and a message containing wantMsg ("" for
// any message).
func verifyStreamFails(ctx context.Context, t *testing.T, tr transport.Transport, wantMsg string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err == nil {
		// With TLS 1.3 the server checks the client certificate after the
		// client's handshake completed.
		if err = st.Send([]byte("x")); err == nil {
			_, err = st.Recv()
		}
	}
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("stream error = %v, want code Unavailable and %q", err, wantMsg)
	}
}

// TestTLS_ServerAuth checks "tls" credentials with only a CA file: the
// client verifies the server's certificate and the stream works.
func TestTLS_ServerAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	p := newPKI(t)
	lis := startServer(t, nil, serverTLSOption(t, p.serverCA, nil))
	tr := build(t, grpctransport.NewBuilder(), tlsConfig(lis.Addr().String(), &bootstrap.TLSConfig{CACertificateFile: p.caFile}))
	if err := verifyNewStreamEcho(ctx, tr); err != nil {
		t.Fatal(err)
	}
}

// TestTLS_MutualAuth checks mTLS against a server that requires and
// verifies a client certificate:
//  1. With certificate_file and private_key_file, the stream works.
//  2. With the CA file only, the server rejects the handshake.
func TestTLS_MutualAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	p := newPKI(t)
	lis := startServer(t, nil, serverTLSOption(t, p.serverCA, p.clientCA))
	addr := lis.Addr().String()
	b := grpctransport.NewBuilder()

	tr := build(t, b, tlsConfig(addr, &bootstrap.TLSConfig{
		CACertificateFile: p.caFile,
		CertificateFile:   p.clientCert,
		PrivateKeyFile:    p.clientKey,
	}))
	if err := verifyNewStreamEcho(ctx, tr); err != nil {
		t.Fatal(err)
	}

	// The client sees the server's alert or, depending on timing, a reset
	// connection, so only the code is checked.
	noCert := build(t, b, tlsConfig(addr, &bootstrap.TLSConfig{CACertificateFile: p.caFile}))
	verifyStreamFails(ctx, t, noCert, "")
}

// TestTLS_WrongCA checks that a server certificate not signed by the
// configured CA fails the handshake, and that with no CA file the system
// roots are used (which do not trust the test CA either).
func TestTLS_WrongCA(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	p := newPKI(t)
	lis := startServer(t, nil, serverTLSOption(t, p.serverCA, nil))
	addr := lis.Addr().String()
	b := grpctransport.NewBuilder()

	t.Run("other CA", func(t *testing.T) {
		tr := build(t, b, tlsConfig(addr, &bootstrap.TLSConfig{CACertificateFile: p.otherCAFile}))
		verifyStreamFails(ctx, t, tr, "certificate signed by unknown authority")
	})
	t.Run("system roots", func(t *testing.T) {
		tr := build(t, b, tlsConfig(addr, nil))
		verifyStreamFails(ctx, t, tr, "certificate signed by unknown authority")
	})
}

// TestTLS_RotatedCAFileIsUsed checks that the certificate files are
// watched:
//  1. Build with a CA file holding the wrong CA and a 10ms refresh
//     interval: the handshake fails.
//  2. Replace the file with the right CA: a later handshake succeeds
//     without building a new Transport.
func TestTLS_RotatedCAFileIsUsed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	p := newPKI(t)
	lis := startServer(t, nil, serverTLSOption(t, p.serverCA, nil))
	caFile := writeFile(t, p.dir, "rotating-ca.pem", newTestCA(t, "old-ca").pem)
	b := grpctransport.NewBuilder(grpctransport.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: 10 * time.Millisecond},
		MinConnectTimeout: time.Second,
	})))
	tr := build(t, b, tlsConfig(lis.Addr().String(), &bootstrap.TLSConfig{
		CACertificateFile: caFile,
		RefreshInterval:   10 * time.Millisecond,
	}))
	verifyStreamFails(ctx, t, tr, "certificate signed by unknown authority")

	writeFile(t, p.dir, "rotating-ca.pem", p.serverCA.pem)
	var err error
	for ctx.Err() == nil {
		if err = verifyNewStreamEcho(ctx, tr); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no working stream after rotating the CA file; last error: %v", err)
}

// TestTLS_BadFiles checks that Build fails, naming the file, when a
// certificate file is missing or invalid, and starts no file watcher
// (TestMain's leak check).
func TestTLS_BadFiles(t *testing.T) {
	p := newPKI(t)
	missing := filepath.Join(p.dir, "missing.pem")
	garbage := writeFile(t, p.dir, "garbage.pem", []byte("not a certificate"))
	otherDir := t.TempDir()
	keyElsewhere := writeFile(t, otherDir, "client.key", mustRead(t, p.clientKey))

	tests := []struct {
		name     string
		cfg      *bootstrap.TLSConfig
		wantErrs []string
	}{
		{
			name:     "missing CA",
			cfg:      &bootstrap.TLSConfig{CACertificateFile: missing},
			wantErrs: []string{"ca_certificate_file", missing},
		},
		{
			name:     "CA not PEM",
			cfg:      &bootstrap.TLSConfig{CACertificateFile: garbage},
			wantErrs: []string{"ca_certificate_file", garbage, "no PEM certificate"},
		},
		{
			name:     "missing certificate",
			cfg:      &bootstrap.TLSConfig{CertificateFile: missing, PrivateKeyFile: p.clientKey},
			wantErrs: []string{"certificate_file", missing},
		},
		{
			name:     "missing key",
			cfg:      &bootstrap.TLSConfig{CACertificateFile: p.caFile, CertificateFile: p.clientCert, PrivateKeyFile: missing},
			wantErrs: []string{"private_key_file", missing},
		},
		{
			name:     "key does not match",
			cfg:      &bootstrap.TLSConfig{CertificateFile: p.clientCert, PrivateKeyFile: p.caFile},
			wantErrs: []string{p.clientCert, p.caFile},
		},
		{
			name:     "certificate without key",
			cfg:      &bootstrap.TLSConfig{CertificateFile: p.clientCert},
			wantErrs: []string{"both set or both empty"},
		},
		{
			name:     "key in another directory",
			cfg:      &bootstrap.TLSConfig{CertificateFile: p.clientCert, PrivateKeyFile: keyElsewhere},
			wantErrs: []string{"same directory"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := grpctransport.NewBuilder().Dial(tlsConfig("127.0.0.1:1", tc.cfg), transport.BuildOptions{})
			if err == nil {
				tr.Close()
				t.Fatalf("Build succeeded, want an error containing %q", tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Build error = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
