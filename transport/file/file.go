// SPDX-License-Identifier: Apache-2.0

package file

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
)

// Scheme is the server URI scheme of filesystem sources: "file:///abs/path".
const Scheme = "file"

// DefaultPollInterval is how often a source is re-read when it cannot be
// watched with file-system notifications: 1 s.
const DefaultPollInterval = time.Second

// DefaultMaxFileBytes is the default limit on the size of a file of the
// source: 4 MiB, as gRPC's default receive limit (the grpctransport
// default).
const DefaultMaxFileBytes = 4 << 20

// ErrDeltaUnsupported is returned by NewStream for the incremental (delta)
// stream: a filesystem subscription holds DiscoveryResponses, the
// state-of-the-world form.
var ErrDeltaUnsupported = errors.New("file: incremental (delta) xDS is not supported by filesystem subscriptions")

// ErrClosed is returned by NewStream after Close.
var ErrClosed = errors.New("file: transport closed")

// Option configures a Builder.
type Option func(*options)

type options struct {
	resolver Resolver
	poll     time.Duration // > 0: poll at this interval instead of using notifications
	maxBytes int64         // the largest file read, in bytes
	logger   *slog.Logger
}

// WithResolver sets how the Any values of JSON, YAML and text files are
// resolved (default protoregistry.GlobalTypes).
func WithResolver(r Resolver) Option {
	return func(o *options) { o.resolver = r }
}

// WithPolling makes the source be re-read every d instead of watched with
// file-system notifications (useful on file systems without them, such as
// some network mounts). Zero or negative keeps the default: notifications,
// with polling every DefaultPollInterval when they are not available.
func WithPolling(d time.Duration) Option {
	return func(o *options) { o.poll = d }
}

// WithMaxFileBytes sets the largest file of the source that is read, in
// bytes (default DefaultMaxFileBytes, 4 MiB). A larger file fails the load
// with an error wrapping ErrFileTooLarge that names the file and the
// limit, without being read. Zero or negative means the default.
func WithMaxFileBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// WithLogger sets where the transport logs (default: nowhere). It warns,
// once per file, about a file of a watched directory that it skips because
// it is not a regular file (a FIFO, a device or a socket).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Builder is a transport.Builder for filesystem sources: the
// ServerConfig's ServerURI is "file:///path/to/file-or-directory" (or a
// plain path). Safe for concurrent use.
type Builder struct {
	opts options
}

var _ transport.Builder = (*Builder)(nil)

// NewBuilder returns a Builder configured by opts.
func NewBuilder(opts ...Option) *Builder {
	o := options{resolver: protoregistry.GlobalTypes, maxBytes: DefaultMaxFileBytes, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.resolver == nil {
		o.resolver = protoregistry.GlobalTypes
	}
	return &Builder{opts: o}
}

// PathFromURI returns the path of a filesystem server URI:
// "file:///etc/xds/lds.yaml" → "/etc/xds/lds.yaml", "file://./x.json" →
// "./x.json", "file:x.json" → "x.json"; a URI without scheme is a path
// already. It returns an error
// for another scheme, or an empty path.
func PathFromURI(uri string) (string, error) {
	path := uri
	if strings.Contains(uri, "://") {
		u, err := url.Parse(uri)
		if err != nil {
			return "", fmt.Errorf("file: server URI %q: %w", uri, err)
		}
		if u.Scheme != Scheme {
			return "", fmt.Errorf("file: server URI %q: scheme %q, want %q", uri, u.Scheme, Scheme)
		}
		path = u.Host + u.Path
	} else if p, ok := strings.CutPrefix(uri, Scheme+":"); ok {
		path = p // "file:relative/path"
	}
	if path == "" {
		return "", fmt.Errorf("file: server URI %q: empty path", uri)
	}
	return path, nil
}

// Build returns a Transport reading the file or directory named by
// sc.ServerURI (see PathFromURI). It does no I/O: the source is read when
// a stream is opened. It returns an error for a URI that is not a path.
func (b *Builder) Build(sc *bootstrap.ServerConfig) (transport.Transport, error) {
	if sc == nil {
		return nil, errors.New("file: nil ServerConfig")
	}
	path, err := PathFromURI(sc.ServerURI)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{
		opts:   b.opts,
		ctx:    ctx,
		cancel: cancel,
		loader: &loader{path: path, resolver: b.opts.resolver, maxBytes: b.opts.maxBytes, logger: b.opts.logger, typeOf: make(map[string]string)},
	}, nil
}

// Bootstrap returns a bootstrap config whose only management server is the
// filesystem source at path (a file or a directory; see the package doc),
// and the Builder that reads it:
//
//	cfg, b, err := file.Bootstrap("/etc/xds/config.yaml")
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
// No bootstrap file is needed. The node is empty and the listener name
// template is "%s". Bootstrap returns an error when path cannot be made
// absolute.
func Bootstrap(path string, opts ...Option) (*bootstrap.Config, *Builder, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("file: %w", err)
	}
	cfg := &bootstrap.Config{
		Servers: []*bootstrap.ServerConfig{{
			ServerURI:    (&url.URL{Scheme: Scheme, Path: filepath.ToSlash(abs)}).String(),
			ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure},
		}},
		ClientDefaultListenerResourceNameTemplate: "%s",
	}
	return cfg, NewBuilder(opts...), nil
}

// Transport is a filesystem source. Its streams share the type of every
// file (see the package doc) and the last error reported. Safe for
// concurrent use.
type Transport struct {
	// Initialized at creation time and read-only afterwards.
	opts   options
	ctx    context.Context    // cancelled by Close
	cancel context.CancelFunc // cancels ctx

	mu sync.Mutex
	// Guarded by mu.
	loader   *loader
	reported string // the load error last reported by failing a stream; "" after a good load
}

var _ transport.Transport = (*Transport)(nil)

// NewStream opens a SotW stream (transport.ADSMethod) on the source: it
// starts watching the source and reads it. It returns ErrDeltaUnsupported
// for transport.DeltaADSMethod and an error for any other method. It does
// not fail when the source cannot be read: the stream's Recv does (see the
// package doc, Errors).
func (t *Transport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	switch method {
	case transport.ADSMethod:
	case transport.DeltaADSMethod:
		return nil, ErrDeltaUnsupported
	default:
		return nil, fmt.Errorf("file: unsupported method %q", method)
	}
	if t.ctx.Err() != nil {
		return nil, ErrClosed
	}
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel)
	context.AfterFunc(sctx, func() { stop() })
	s := &stream{
		t:         t,
		ctx:       sctx,
		cancel:    cancel,
		requested: make(chan struct{}, 1),
		names:     make(map[string][]string),
		force:     make(map[string]bool),
		sent:      make(map[string]string),
		everSent:  make(map[string]bool),
	}
	// Watch first, then read: a change between the two is not missed.
	s.changes = watch(sctx, t.loader.path, t.opts.poll)
	s.reload()
	return s, nil
}

// Close ends every stream of the Transport. Idempotent.
func (t *Transport) Close() { t.cancel() }
