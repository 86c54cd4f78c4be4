// SPDX-License-Identifier: Apache-2.0

// Package rest implements REST-JSON polling subscriptions (xDS protocol,
// "REST-JSON polling subscriptions"): each resource type is fetched with
// HTTP POST {base}/v3/discovery:{listeners|routes|clusters|endpoints}, the
// body a DiscoveryRequest in proto3 JSON, the answer a DiscoveryResponse
// in proto3 JSON. No gRPC stream is opened.
//
//	b := rest.NewBuilder(rest.WithInterval(10 * time.Second))
//	c, err := client.New(cfg, client.WithTransportBuilder(b)) // server_uri "http://xds.example.com:8080"
//
// It is a transport.Transport: the client's engine (validation, cache,
// ACK/NACK, does-not-exist timers, watchers) is the same as for ADS.
// Only the SotW variant exists over REST (and no ADS): the delta stream
// fails with ErrDeltaUnsupported.
//
// # Polling
//
// Per type, at most one request is outstanding at a time (the server may
// hold it: long polling). The first request of a type is posted at once;
// the next one when the client has answered the previous response (its
// ACK or NACK, which the client sends as for a stream) and the interval
// has passed (WithInterval, default DefaultInterval 30 s, ±20 % jitter so
// that many clients spread out), or at once when the type's subscription
// (resource_names) changes. Each request carries the node, the
// type's resource_names and the version_info the client last accepted;
// after a NACK, the next poll carries the client's error_detail. A poll
// that adds names to those of the last answered poll carries no
// version_info: a stateless server cannot tell that the client lacks them,
// and go-control-plane v0.14's gateway answers 304 to a current version
// whatever the names. A poll held by the server for 1 s or more is
// cancelled and posted again when the names change; one answered sooner
// is let finish (keeping its connection), the new names going at once
// after it. HTTP 304
// Not Modified (an empty body, as go-control-plane's HTTP gateway answers
// when the version is current) changes nothing. A response is given a
// nonce by the transport, so the client's bookkeeping is that of a stream.
// Nothing is polled for a type with no names subscribed (an empty list
// would be a wildcard, R-11.5).
//
// # Errors
//
// An HTTP error (no response, or a status other than 200 and 304), a body
// that is not a DiscoveryResponse of the requested type, a body larger
// than WithMaxResponseBytes, a poll not over within WithPollTimeout
// (default DefaultPollTimeout, 60 s, the body included; the error wraps
// context.DeadlineExceeded), or a redirect to another origin than the
// server URI's (scheme, host and port; ErrCrossOriginRedirect, never
// followed, so that neither the node nor the subscription goes there)
// ends the stream with the error. Redirects within the origin are
// followed. The client handles the error as a failed stream: when
// the stream had given responses it starts a new one at once without
// reporting anything (after its backoff for a body over the limit), which
// polls every type; when a stream fails before any response, its watchers
// get the error as a connection error (AmbientError with a cached value,
// ResourceError otherwise, R-11.3) and the client retries with its
// backoff (1 s × 1.6ⁿ ± 20 %, at most 120 s; ).
package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"

	// The built-in resource types, which responses carry as Any.
	_ "github.com/proxyless/xds/resources"
)

// DefaultInterval is the default time between two polls of a type: 30 s.
const DefaultInterval = 30 * time.Second

// DefaultPollTimeout is the default time a poll may take, from the request
// to the end of the response body: 60 s. It leaves a long-polling server
// (one that holds a poll until something changes) up to a minute, which is
// also where common proxies and load balancers cut an idle HTTP request
// (nginx's proxy_read_timeout, the idle timeout of AWS's load balancers),
// while a stalled server or body is noticed within a minute. Envoy's
// REST subscriptions, which do not long-poll, use 1 s
// (ApiConfigSource.request_timeout).
const DefaultPollTimeout = 60 * time.Second

// DefaultMaxResponseBytes is the default limit on a response body: 4 MiB,
// as gRPC's default receive limit.
const DefaultMaxResponseBytes = 4 << 20

// ErrDeltaUnsupported is returned by NewStream for the incremental (delta)
// stream: REST-JSON polling is SotW only.
var ErrDeltaUnsupported = errors.New("rest: incremental (delta) xDS is not available over REST-JSON polling")

// ErrClosed is returned by NewStream after Close.
var ErrClosed = errors.New("rest: transport closed")

// Resolver finds the message types of the Any values in responses.
type Resolver interface {
	protoregistry.ExtensionTypeResolver
	protoregistry.MessageTypeResolver
}

// Option configures a Builder.
type Option func(*options)

type options struct {
	interval    time.Duration
	pollTimeout time.Duration
	httpClient  *http.Client
	maxBytes    int64
	resolver    Resolver
	paths       map[string]string // type URL → path suffix after "/v3/discovery:"
}

// WithInterval sets the time between two polls of a type (default
// DefaultInterval, 30 s; each wait is randomised by ±20 %). Zero or
// negative means the default.
func WithInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.interval = d
		}
	}
}

// WithPollTimeout sets how long a poll may take, from the request to the
// end of the response body (default DefaultPollTimeout, 60 s): make it
// longer than a long-polling server holds a request. A poll that takes
// longer fails the stream with an error wrapping context.DeadlineExceeded
// and naming the timeout, which the client handles as any stream failure
// (see Errors in the package doc). Zero or negative means the default.
func WithPollTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.pollTimeout = d
		}
	}
}

// WithHTTPClient sets the HTTP client (default: a new http.Client with
// http.DefaultTransport's settings). Its Timeout, if set, bounds every
// poll besides WithPollTimeout. Configure TLS for https servers there.
// The transport polls through a copy of c whose CheckRedirect refuses a
// redirect to another origin (ErrCrossOriginRedirect) before c's own
// CheckRedirect, if any, sees it; c itself is not modified.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.httpClient = c
		}
	}
}

// WithMaxResponseBytes sets the largest response body accepted, in bytes
// (default DefaultMaxResponseBytes, 4 MiB); a larger one ends the stream
// with an error wrapping transport.ErrMessageTooLarge. Zero or negative
// means the default.
func WithMaxResponseBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// WithResolver sets how the Any values of responses are resolved (default
// protoregistry.GlobalTypes, which holds the built-in resource types).
func WithResolver(r Resolver) Option {
	return func(o *options) {
		if r != nil {
			o.resolver = r
		}
	}
}

// WithPath sets the path of a resource type's endpoint, the part after
// "/v3/discovery:" (for custom resource types, R-23; the built-in types
// use listeners, routes, clusters and endpoints).
func WithPath(typeURL, path string) Option {
	return func(o *options) { o.paths[typeURL] = path }
}

// Builder is a transport.Builder for REST-JSON polling. The ServerConfig's
// ServerURI is the base URL, "http://host:port" or "https://host:port",
// optionally with a path prefix. Safe for concurrent use.
type Builder struct {
	opts options
}

var _ transport.Builder = (*Builder)(nil)

// NewBuilder returns a Builder configured by opts.
func NewBuilder(opts ...Option) *Builder {
	o := options{
		interval:    DefaultInterval,
		pollTimeout: DefaultPollTimeout,
		maxBytes:    DefaultMaxResponseBytes,
		resolver:    protoregistry.GlobalTypes,
		paths: map[string]string{
			"type.googleapis.com/envoy.config.listener.v3.Listener":              "listeners",
			"type.googleapis.com/envoy.config.route.v3.RouteConfiguration":       "routes",
			"type.googleapis.com/envoy.config.cluster.v3.Cluster":                "clusters",
			"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": "endpoints",
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	return &Builder{opts: o}
}

// Build returns a Transport to the server at sc.ServerURI. It does no I/O.
// It returns an error when the URI is not an http or https URL.
func (b *Builder) Build(sc *bootstrap.ServerConfig) (transport.Transport, error) {
	if sc == nil {
		return nil, errors.New("rest: nil ServerConfig")
	}
	base, err := parseBase(sc.ServerURI)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{opts: b.opts, base: base, ctx: ctx, cancel: cancel}
	t.hc, t.ownHC = pollClient(b.opts.httpClient)
	return t, nil
}

// Bootstrap returns a bootstrap config whose only management server is the
// REST-JSON server at baseURL ("http://host:port"), and the Builder that
// polls it, so that no bootstrap file is needed:
//
//	cfg, b, err := rest.Bootstrap("http://xds.example.com:8080", rest.WithInterval(10*time.Second))
//	cfg.Node.ID = "my-node"
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
// The node is empty (set cfg.Node before client.New) and the listener name
// template is "%s". It returns an error when baseURL is not an http or
// https URL with a host.
func Bootstrap(baseURL string, opts ...Option) (*bootstrap.Config, *Builder, error) {
	sc := &bootstrap.ServerConfig{ServerURI: baseURL, ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}}
	if _, err := parseBase(baseURL); err != nil {
		return nil, nil, err
	}
	cfg := &bootstrap.Config{
		Servers: []*bootstrap.ServerConfig{sc},
		ClientDefaultListenerResourceNameTemplate: "%s",
	}
	return cfg, NewBuilder(opts...), nil
}

// parseBase returns the base URL of a server URI, without a trailing
// slash.
func parseBase(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("rest: server URI %q: want http://host[:port] or https://host[:port]", uri)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Transport polls one REST-JSON server. Safe for concurrent use.
type Transport struct {
	// Initialized at creation time and read-only afterwards.
	opts   options
	base   string             // server URI without a trailing slash
	hc     *http.Client       // a copy of WithHTTPClient's (pollClient), or owned
	ownHC  bool               // hc is the Transport's: Close closes its idle connections
	ctx    context.Context    // cancelled by Close
	cancel context.CancelFunc // cancels ctx
}

var _ transport.Transport = (*Transport)(nil)

// NewStream returns a polling stream for transport.ADSMethod, without I/O:
// each type is polled from its first request. It returns
// ErrDeltaUnsupported for transport.DeltaADSMethod, an error for other
// methods, and ErrClosed after Close.
func (t *Transport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	switch method {
	case transport.ADSMethod:
	case transport.DeltaADSMethod:
		return nil, ErrDeltaUnsupported
	default:
		return nil, fmt.Errorf("rest: unsupported method %q", method)
	}
	if t.ctx.Err() != nil {
		return nil, ErrClosed
	}
	return newStream(ctx, t), nil
}

// Close ends every stream and, unless the HTTP client came from
// WithHTTPClient, closes its idle connections. Idempotent.
func (t *Transport) Close() {
	t.cancel()
	if t.ownHC {
		t.hc.CloseIdleConnections()
	}
}
