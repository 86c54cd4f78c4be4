// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/xdscreds"
)

// DefaultHostIdleTimeout is how long a host (a URL host and Host pair)
// that no request used keeps its configuration and watches: 10 minutes.
const DefaultHostIdleTimeout = 10 * time.Minute

// Option configures NewTransport.
type Option func(*options)

type options struct {
	base        *http.Transport
	tlsConfig   *tls.Config
	idleTimeout time.Duration
	providers   *xdscreds.ProviderStore
	logger      *slog.Logger
	lrsBuilder  transport.Builder
	depmgrOpts  []depmgr.Option
}

func defaultOptions() options {
	return options{idleTimeout: DefaultHostIdleTimeout}
}

// WithBaseTransport sets the settings of the *http.Transport of each
// endpoint, cloned from base when a connection to the endpoint is first
// needed: its DialContext (the dialer of TCP connections), its timeouts
// (TLSHandshakeTimeout, ResponseHeaderTimeout, ExpectContinueTimeout,
// IdleConnTimeout), its idle connection limits (MaxIdleConns,
// MaxIdleConnsPerHost, MaxConnsPerHost), DisableKeepAlives,
// DisableCompression, MaxResponseHeaderBytes, the buffer sizes and
// HTTP2. What xDS decides is replaced: Proxy (none: requests go to the
// endpoints the configuration names), DialTLSContext and TLSClientConfig
// (the cluster's TLS; see WithTLSClientConfig for https:// URLs of
// clusters without one), ForceAttemptHTTP2 and Protocols (the cluster's
// upstream protocol). base is not modified. The default is a clone of
// http.DefaultTransport (30 s dial timeout and keep-alive, 10 s TLS
// handshake timeout, 90 s idle connection timeout, 100 idle connections).
func WithBaseTransport(base *http.Transport) Option {
	return func(o *options) { o.base = base }
}

// WithTLSClientConfig sets the TLS configuration of the https:// requests
// routed to a cluster that has no UpstreamTlsContext: the roots that
// verify the server (the system's when nil) and the client certificate.
// Its ServerName is replaced by the URL's host name. Requests to a
// cluster with an UpstreamTlsContext use the cluster's TLS, never this.
// The default is the zero tls.Config: the system roots, no client
// certificate.
func WithTLSClientConfig(c *tls.Config) Option {
	return func(o *options) { o.tlsConfig = c }
}

// WithHostIdleTimeout sets how long a host (a URL host and, when it
// selects another virtual host, the request's Host) that no request used
// keeps its configuration, its watches and its endpoints' idle
// connections: after that time the Transport drops them (the client
// unsubscribes from what no one else watches), and the next request to
// the host starts again, waiting for a configuration. Zero or negative
// means DefaultHostIdleTimeout (10 minutes).
func WithHostIdleTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.idleTimeout = d
		}
	}
}

// WithCertificateProviders sets the certificate provider instances that
// the clusters' UpstreamTlsContexts name (gRFC A29). The default is a
// store of the client's bootstrap certificate_providers, made for the
// Transport; give the store an xdsresolver.Builder or a server uses to
// share the instances (and their files and goroutines) with them.
func WithCertificateProviders(s *xdscreds.ProviderStore) Option {
	return func(o *options) { o.providers = s }
}

// WithLogger sets the logger of the Transport and of its dependency
// managers. The default is the client's (client.Client.Logger).
// Configuration errors of a host are logged at Warn, a host started or
// dropped at Debug; requests are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithLoadReportTransport sets the builder of the load reporting streams
// of clusters with lrs_server "self". The default is the client's
// (client.Client.TransportBuilder): the load goes over a connection of
// the client's kind to the management server the cluster came from.
func WithLoadReportTransport(b transport.Builder) Option {
	return func(o *options) { o.lrsBuilder = b }
}

// WithDepmgrOptions adds options to the dependency manager of each host
// (depmgr.WithDNSResolver, depmgr.WithDNSRefreshInterval for
// LOGICAL_DNS clusters). The Transport sets the data-plane authority,
// the HTTP routes and the logger itself.
func WithDepmgrOptions(opts ...depmgr.Option) Option {
	return func(o *options) { o.depmgrOpts = append(o.depmgrOpts, opts...) }
}
