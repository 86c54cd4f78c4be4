// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/recvlimit"
	"github.com/proxyless/xds/internal/xdslog"
	// The built-in resource types, which responses carry as Any, are
	// linked with it.
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
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

// DefaultMaxResponseBytes is the limit on a response body unless
// WithMaxResponseBytes or the client (transport.BuildOptions.MaxRecvMsgSize,
// client.WithMaxRecvMsgSize) says otherwise: 4 MiB, as gRPC's default
// receive limit.
const DefaultMaxResponseBytes = 4 << 20

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
	maxBytes    int64 // 0: not given
	resolver    Resolver
	paths       map[string]string // type URL → path suffix after "/v3/discovery:"
	logger      *slog.Logger      // nil: the client's
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

// WithMaxResponseBytes sets the largest response body accepted, in bytes.
// Without it, the limit is the client's (transport.BuildOptions.MaxRecvMsgSize,
// which client.WithMaxRecvMsgSize sets), else DefaultMaxResponseBytes
// (4 MiB). A larger body ends the stream with an error wrapping
// transport.ErrMessageTooLarge that names the limit and the option that
// raises it. Zero or negative means no limit of the Builder's own.
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

// WithLogger sets where the transport logs (nil keeps the default: the
// client's logger, transport.BuildOptions.Logger). It logs at
// slog.LevelDebug the polls the server answers with HTTP 304 Not Modified,
// which give the client nothing to log; the client logs every response
// and every failure.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
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
		resolver:    protoregistry.GlobalTypes,
		paths: map[string]string{
			resources.ListenerTypeURL:    "listeners",
			resources.RouteConfigTypeURL: "routes",
			resources.ClusterTypeURL:     "clusters",
			resources.EndpointsTypeURL:   "endpoints",
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	return &Builder{opts: o}
}

// Build returns a Transport to the server at sc.ServerURI, with the
// client's logger and size limit unless the Builder has its own. It does
// no I/O. It returns an error when the URI is not an http or https URL.
func (b *Builder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	if sc == nil {
		return nil, errors.New("rest: nil ServerConfig")
	}
	base, err := parseBase(sc.ServerURI)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	logger := b.opts.logger
	if logger == nil {
		logger = o.Logger
	}
	if logger == nil {
		logger = xdslog.Discard()
	}
	t := &Transport{
		opts:   b.opts,
		base:   base,
		limit:  recvlimit.Choose(b.opts.maxBytes, "rest.WithMaxResponseBytes", o.MaxRecvMsgSize, DefaultMaxResponseBytes),
		logger: logger,
		ctx:    ctx,
		cancel: cancel,
	}
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
	base   string          // server URI without a trailing slash
	limit  recvlimit.Limit // of a response body
	logger *slog.Logger
	hc     *http.Client       // a copy of WithHTTPClient's (pollClient), or owned
	ownHC  bool               // hc is the Transport's: Close closes its idle connections
	ctx    context.Context    // cancelled by Close
	cancel context.CancelFunc // cancels ctx
	wg     sync.WaitGroup     // the poll goroutines of every stream

	mu     sync.Mutex
	closed bool // guarded by mu: Close was called; no poll starts after it
}

// goPoll runs poll on a goroutine Close waits for, unless Close was
// called; it reports whether it did.
func (t *Transport) goPoll(poll func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		poll()
	}()
	return true
}

var _ transport.XDS = (*Transport)(nil)

// PerType reports true: each resource type is polled on its own.
func (t *Transport) PerType() bool { return true }

// NewXDSStream returns the polling stream of spec.TypeURL, without I/O:
// the type is polled from the stream's first request. It returns an error
// wrapping transport.ErrDeltaUnsupported for a delta stream, one naming
// the type when it has no endpoint (WithPath), and transport.ErrClosed
// after Close.
func (t *Transport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	if spec.Delta {
		return nil, fmt.Errorf("rest: %w: REST-JSON polling is state of the world only", transport.ErrDeltaUnsupported)
	}
	path, ok := t.opts.paths[spec.TypeURL]
	if !ok {
		return nil, fmt.Errorf("rest: no endpoint for type %q (set one with rest.WithPath)", spec.TypeURL)
	}
	if t.ctx.Err() != nil {
		return nil, transport.ErrClosed
	}
	return newStream(ctx, t, path, spec), nil
}

// StreamName returns "REST-JSON polling of /v3/discovery:" and the type's
// path: "REST-JSON polling of /v3/discovery:clusters".
func (t *Transport) StreamName(spec transport.StreamSpec) string {
	if path, ok := t.opts.paths[spec.TypeURL]; ok {
		return "REST-JSON polling of /v3/discovery:" + path
	}
	return "REST-JSON polling of " + spec.TypeURL
}

// NewLRSStream returns an error wrapping transport.ErrLRSUnsupported: a
// REST-JSON server has no load reporting service.
func (t *Transport) NewLRSStream(context.Context) (transport.Stream, error) {
	return nil, fmt.Errorf("rest: %w: REST-JSON polling has no load reporting stream", transport.ErrLRSUnsupported)
}

// Close ends every stream, waits for their polls to end and, unless the
// HTTP client came from WithHTTPClient, closes its idle connections.
// Idempotent.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	if t.ownHC {
		t.hc.CloseIdleConnections()
	}
}
