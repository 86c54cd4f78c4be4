// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"

	"github.com/proxyless/xds/bootstrap"
)

// ChannelCredsBuilder builds the credentials of one bootstrap
// `channel_creds` type, for example "google_default" (package
// grpctransport/googledefault) or a type of the application's own. Its
// shape is that of grpc-go's xds/bootstrap.ChannelCredentials, so such
// builders adapt in a line. Register builders with WithChannelCreds, and
// declare the same type names to bootstrap.Parse with
// bootstrap.WithChannelCredsTypes (the built-in names need no declaring).
type ChannelCredsBuilder interface {
	// Name is the `type` string of the bootstrap entry.
	Name() string
	// Build returns the credentials for a server whose selected
	// `channel_creds` entry has this type; config is the entry's raw JSON
	// `config` (nil when absent). The bundle's transport credentials
	// secure the channel, and its per-RPC credentials, if any, apply to
	// every stream. The returned function, which may be nil, is called
	// once when the channel is closed. Build is called at most once per
	// channel, under the Builder's lock: it must not block on the network.
	Build(config json.RawMessage) (credentials.Bundle, func(), error)
}

// CallCredsBuilder builds the call credentials of one bootstrap
// `call_creds` type (gRFC A97, R-3.2). The built-in "jwt_token_file" type
// is always available. Register builders with WithCallCreds, and declare
// the same type names to bootstrap.Parse with bootstrap.WithCallCredsTypes.
type CallCredsBuilder interface {
	// Name is the `type` string of the bootstrap entry.
	Name() string
	// Build returns the per-RPC credentials for a `call_creds` entry of
	// this type; config is the entry's raw JSON `config` (nil when
	// absent). The returned function, which may be nil, is called once
	// when the channel is closed. Build must not block on the network.
	Build(config json.RawMessage) (credentials.PerRPCCredentials, func(), error)
}

// WithChannelCreds adds builders of `channel_creds` types. A builder
// named like a built-in type ("insecure", "tls") replaces it; of several
// builders with one name, the last wins. Without a builder for
// "google_default", Build fails for a server that selected it.
func WithChannelCreds(builders ...ChannelCredsBuilder) Option {
	return func(b *options) {
		for _, cb := range builders {
			b.channelCreds[cb.Name()] = cb
		}
	}
}

// WithCallCreds adds builders of `call_creds` types. A builder named
// "jwt_token_file" replaces the built-in one; of several builders with
// one name, the last wins.
func WithCallCreds(builders ...CallCredsBuilder) Option {
	return func(b *options) {
		for _, cb := range builders {
			b.callCreds[cb.Name()] = cb
		}
	}
}

// dialCredentials returns the dial options that carry the credentials of
// sc (channel credentials, then every call credentials entry, R-3.2) and
// a function that releases them (idempotent).
func (b *Builder) dialCredentials(sc *bootstrap.ServerConfig) ([]grpc.DialOption, func(), error) {
	var closers []func()
	release := sync.OnceFunc(func() {
		for _, f := range closers {
			f()
		}
	})
	fail := func(err error) ([]grpc.DialOption, func(), error) {
		release()
		return nil, nil, err
	}
	var opts []grpc.DialOption
	tc, perRPC, closeChannel, err := b.channelCredentials(sc.ChannelCreds)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, closeChannel)
	opts = append(opts, grpc.WithTransportCredentials(tc))
	if perRPC != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(perRPC))
	}
	for i, c := range sc.CallCreds {
		cb := b.callCreds[c.Type]
		if cb == nil {
			return fail(fmt.Errorf("call_creds[%d]: no builder for type %q (add one with grpctransport.WithCallCreds)", i, c.Type))
		}
		pc, closeCall, err := cb.Build(c.Config)
		if err != nil {
			return fail(fmt.Errorf("call_creds[%d] (type %q): %w", i, c.Type, err))
		}
		if closeCall != nil {
			closers = append(closers, closeCall)
		}
		if pc.RequireTransportSecurity() && tc.Info().SecurityProtocol == "insecure" {
			return fail(fmt.Errorf("call_creds[%d] (type %q) need secure channel_creds (such as %q or %q), got %q",
				i, c.Type, bootstrap.CredsTLS, bootstrap.CredsGoogleDefault, sc.ChannelCreds.Type))
		}
		opts = append(opts, grpc.WithPerRPCCredentials(pc))
	}
	return opts, release, nil
}

// channelCredentials returns the transport credentials for cc, per-RPC
// credentials that come with them (nil for the built-in types), and a
// function that releases them (never nil).
func (b *Builder) channelCredentials(cc bootstrap.ChannelCreds) (credentials.TransportCredentials, credentials.PerRPCCredentials, func(), error) {
	if cb := b.channelCreds[cc.Type]; cb != nil {
		bundle, closeFn, err := cb.Build(cc.Config)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("channel_creds type %q: %w", cc.Type, err)
		}
		if closeFn == nil {
			closeFn = func() {}
		}
		if bundle == nil || bundle.TransportCredentials() == nil {
			closeFn()
			return nil, nil, nil, fmt.Errorf("channel_creds type %q: the builder returned no transport credentials", cc.Type)
		}
		return bundle.TransportCredentials(), bundle.PerRPCCredentials(), closeFn, nil
	}
	switch cc.Type {
	case bootstrap.CredsInsecure:
		return insecure.NewCredentials(), nil, func() {}, nil
	case bootstrap.CredsTLS:
		tc, closeFn, err := tlsCredentials(cc.TLS)
		return tc, nil, closeFn, err
	case bootstrap.CredsGoogleDefault:
		return nil, nil, nil, fmt.Errorf("channel_creds type %q needs its builder: grpctransport.WithChannelCreds(googledefault.Builder{}) of package github.com/proxyless/xds/transport/grpctransport/googledefault", cc.Type)
	default:
		return nil, nil, nil, fmt.Errorf("unsupported channel_creds type %q (add its builder with grpctransport.WithChannelCreds)", cc.Type)
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
