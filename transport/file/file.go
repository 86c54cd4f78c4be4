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

// WithLogger sets where the transport logs (nil keeps the default:
// nowhere). It warns,
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
		opts:     b.opts,
		ctx:      ctx,
		cancel:   cancel,
		loader:   &loader{path: path, resolver: b.opts.resolver, maxBytes: b.opts.maxBytes, logger: b.opts.logger, typeOf: make(map[string]string)},
		reported: make(map[string]string),
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

// Transport is a filesystem source. One goroutine of its own watches and
// loads the source (watch.go, load.go), from the first stream until Close,
// holding no lock while it reads; its streams, one per resource type,
// answer from the last load. Safe for concurrent use.
type Transport struct {
	// Initialized at creation time and read-only afterwards.
	opts   options
	ctx    context.Context    // cancelled by Close
	cancel context.CancelFunc // cancels ctx
	loader *loader            // used by the load goroutine only
	wg     sync.WaitGroup     // the load goroutine

	mu sync.Mutex
	// Guarded by mu.
	closed   bool
	started  bool              // the load goroutine was started
	loaded   bool              // a load finished (good or not)
	snap     *snapshot         // the last good load; nil before one
	loadErr  error             // the error of the last load; nil after a good one
	changed  chan struct{}     // closed, and replaced, when a load finishes
	reported map[string]string // type URL → the load error last reported by failing a stream of the type
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.XDS       = (*Transport)(nil)
)

// errNoGRPC is returned by NewStream: a filesystem source has no gRPC
// services.
var errNoGRPC = errors.New("file: a filesystem source has no gRPC streams (ADS, LRS)")

// NewStream returns an error: a filesystem source is read through
// NewXDSStream only; it has no gRPC services such as load reporting.
func (t *Transport) NewStream(_ context.Context, method string) (transport.Stream, error) {
	return nil, fmt.Errorf("%w: %s", errNoGRPC, method)
}

// PerType reports true: each resource type has its own stream.
func (t *Transport) PerType() bool { return true }

// NewXDSStream opens the SotW stream of spec.TypeURL on the source,
// starting the watch of the source on the first stream. It returns an
// error wrapping transport.ErrDeltaUnsupported for a delta stream and
// transport.ErrClosed after Close. It does not fail when the source cannot
// be read: the stream's Recv does (see the package doc, Errors).
func (t *Transport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	if spec.Delta {
		return nil, fmt.Errorf("file: %w: a filesystem subscription holds DiscoveryResponses, the state-of-the-world form", transport.ErrDeltaUnsupported)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transport.ErrClosed
	}
	if !t.started {
		t.started = true
		t.changed = make(chan struct{})
		t.wg.Add(1)
		go t.watchAndLoad()
	}
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel)
	context.AfterFunc(sctx, func() { stop() })
	return &stream{t: t, typeURL: spec.TypeURL, ctx: sctx, requested: make(chan struct{}, 1)}, nil
}

// watchAndLoad loads the source, then again each time it may have
// changed, until Close. The watch starts first, so that a change between
// the two is not missed.
func (t *Transport) watchAndLoad() {
	defer t.wg.Done()
	changes := watch(t.ctx, t.loader.path, t.opts.poll)
	for {
		snap, err := t.loader.load(t.ctx)
		t.mu.Lock()
		if err == nil {
			clear(t.reported)
			if t.snap == nil || t.snap.digest != snap.digest {
				t.snap = snap
			}
		}
		t.loadErr, t.loaded = err, true
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
		select {
		case <-t.ctx.Done():
			return
		case <-changes:
		}
	}
}

// Close ends every stream of the Transport and waits for the load in
// progress, if any. Idempotent.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}
