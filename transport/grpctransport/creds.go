// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"

	"github.com/proxyless/xds/bootstrap"
)

// transportCredentials returns the transport credentials for cc and a
// function that releases them (idempotent; a no-op unless a certificate
// file watcher was started).
func transportCredentials(cc bootstrap.ChannelCreds) (credentials.TransportCredentials, func(), error) {
	switch cc.Type {
	case bootstrap.CredsInsecure:
		return insecure.NewCredentials(), func() {}, nil
	case bootstrap.CredsTLS:
		return tlsCredentials(cc.TLS)
	default:
		return nil, nil, fmt.Errorf("unsupported channel credentials type %q", cc.Type)
	}
}

// tlsCredentials returns TLS credentials for "tls" channel credentials
// (gRFC A65); a nil cfg is an empty config. With no files, they are plain
// TLS with the system roots. Otherwise they read the key material from a
// pemfile provider on every handshake, so rotated files are picked up.
func tlsCredentials(cfg *bootstrap.TLSConfig) (credentials.TransportCredentials, func(), error) {
	if cfg == nil {
		cfg = &bootstrap.TLSConfig{}
	}
	if cfg.CACertificateFile == "" && cfg.CertificateFile == "" && cfg.PrivateKeyFile == "" {
		// The file watcher requires at least one file; A65 allows none.
		return credentials.NewTLS(&tls.Config{}), func() {}, nil
	}
	if err := checkTLSFiles(cfg); err != nil {
		return nil, nil, err
	}
	refresh := cfg.RefreshInterval
	switch {
	case refresh == 0:
		// Only hand-built configs: Parse always sets it.
		refresh = bootstrap.DefaultRefreshInterval
	case refresh < 0:
		return nil, nil, fmt.Errorf("negative tls refresh_interval %v", refresh)
	}
	// The provider's goroutine reads the files at once, then every refresh.
	prov, err := pemfile.NewProvider(pemfile.Options{
		RootFile:        cfg.CACertificateFile,
		CertFile:        cfg.CertificateFile,
		KeyFile:         cfg.PrivateKeyFile,
		RefreshDuration: refresh,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watching tls certificate files: %w", err)
	}
	return &reloadingCreds{provider: prov, cfg: *cfg}, sync.OnceFunc(prov.Close), nil
}

// checkTLSFiles reads and parses the files of cfg once, so that a missing
// or malformed file fails Build with an error naming it, instead of every
// handshake timing out while the watcher waits for valid contents.
func checkTLSFiles(cfg *bootstrap.TLSConfig) error {
	if ca := cfg.CACertificateFile; ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("reading tls ca_certificate_file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls ca_certificate_file %q: no PEM certificate found", ca)
		}
	}
	certFile, keyFile := cfg.CertificateFile, cfg.PrivateKeyFile
	if (certFile == "") != (keyFile == "") {
		return fmt.Errorf("tls certificate_file (%q) and private_key_file (%q) must be both set or both empty", certFile, keyFile)
	}
	if certFile != "" {
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return fmt.Errorf("loading tls certificate_file %q and private_key_file %q: %w", certFile, keyFile, err)
		}
	}
	return nil
}

// reloadingCreds are client-side TLS credentials that build a tls.Config
// from the provider's current key material on every handshake. The
// standard TLS credentials fix their roots at creation, so they would miss
// a rotated CA file. Modelled on grpc-go's
// internal/xds/bootstrap/tlscreds (without SPIFFE bundle maps).
type reloadingCreds struct {
	// Initialized at creation time and read-only afterwards.
	provider certprovider.Provider // owned by the sharedConn, closed with it
	cfg      bootstrap.TLSConfig   // the file names, for errors
}

// ClientHandshake does a TLS handshake on rawConn with the current roots
// (the system roots when the config has no CA file) and client
// certificate (none when the config has no certificate file).
func (c *reloadingCreds) ClientHandshake(ctx context.Context, authority string, rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	km, err := c.provider.KeyMaterial(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("grpctransport: tls key material from ca_certificate_file %q, certificate_file %q: %w",
			c.cfg.CACertificateFile, c.cfg.CertificateFile, err)
	}
	// A nil RootCAs means the system roots; no Certificates means no client
	// certificate. NewTLS adds the gRPC defaults (ALPN h2, TLS 1.2 minimum)
	// and the server name from authority.
	cfg := &tls.Config{RootCAs: km.Roots, Certificates: km.Certs}
	return credentials.NewTLS(cfg).ClientHandshake(ctx, authority, rawConn)
}

// ServerHandshake is not supported: these credentials are client-only.
func (c *reloadingCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("grpctransport: server handshake not supported by xDS client tls credentials")
}

// Info reports the TLS protocol.
func (c *reloadingCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

// Clone returns a copy sharing the provider; the copy needs no closing.
func (c *reloadingCreds) Clone() credentials.TransportCredentials {
	cp := *c
	return &cp
}

// OverrideServerName is not supported (and deprecated in gRPC).
func (c *reloadingCreds) OverrideServerName(string) error {
	return errors.New("grpctransport: overriding the server name is not supported by xDS client tls credentials")
}
