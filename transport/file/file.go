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
	"github.com/proxyless/xds/internal/recvlimit"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/transport"
)

// Scheme is the server URI scheme of filesystem sources: "file:///abs/path".
const Scheme = "file"

// DefaultPollInterval is how often a source is re-read when it cannot be
// watched with file-system notifications: 1 s.
const DefaultPollInterval = time.Second

// DefaultMaxFileBytes is the limit on the size of a file of the source
// unless WithMaxFileBytes or the client (transport.BuildOptions.MaxRecvMsgSize,
// client.WithMaxRecvMsgSize) says otherwise: 4 MiB, as gRPC's default
// receive limit (the grpctransport default).
const DefaultMaxFileBytes = 4 << 20

// Option configures a Builder.
type Option func(*options)

type options struct {
	resolver Resolver
	poll     time.Duration // > 0: poll at this interval instead of using notifications
	maxBytes int64         // the largest file read, in bytes; 0: not given
	logger   *slog.Logger  // nil: the client's
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
// bytes. Without it, the limit is the client's
// (transport.BuildOptions.MaxRecvMsgSize, which client.WithMaxRecvMsgSize
// sets), else DefaultMaxFileBytes (4 MiB). A larger file fails the load
// with an error wrapping ErrFileTooLarge that names the file, the limit
// and the option that raises it, without being read. Zero or negative
// means no limit of the Builder's own.
func WithMaxFileBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// WithLogger sets where the transport logs (nil keeps the default: the
// client's logger, transport.BuildOptions.Logger). It warns, once per
// file, about a file of a watched directory that it skips because it is
// not a regular file (a FIFO, a device or a socket).
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
	o := options{resolver: protoregistry.GlobalTypes}
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
// sc.ServerURI (see PathFromURI), with the client's logger and size limit
// unless the Builder has its own. It does no I/O: the source is read when
// a stream is opened. It returns an error for a URI that is not a path.
func (b *Builder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	if sc == nil {
		return nil, errors.New("file: nil ServerConfig")
	}
	path, err := PathFromURI(sc.ServerURI)
	if err != nil {
		return nil, err
	}
	logger := b.opts.logger
	if logger == nil {
		logger = o.Logger
	}
	if logger == nil {
		logger = xdslog.Discard()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{
		opts:   b.opts,
		ctx:    ctx,
		cancel: cancel,
		loader: &loader{
			path:     path,
			resolver: b.opts.resolver,
			limit:    recvlimit.Choose(b.opts.maxBytes, "file.WithMaxFileBytes", o.MaxRecvMsgSize, DefaultMaxFileBytes),
			logger:   logger,
			typeOf:   make(map[string]string),
		},
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

var _ transport.XDS = (*Transport)(nil)

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

// StreamName returns "filesystem subscription of " and the stream's type
// URL.
func (t *Transport) StreamName(spec transport.StreamSpec) string {
	return "filesystem subscription of " + spec.TypeURL
}

// NewLRSStream returns an error wrapping transport.ErrLRSUnsupported: a
// filesystem source has no load reporting service.
func (t *Transport) NewLRSStream(context.Context) (transport.Stream, error) {
	return nil, fmt.Errorf("file: %w: a filesystem source has no load reporting stream", transport.ErrLRSUnsupported)
}

// watchAndLoad loads the source, then again each time it may have
// changed, until Close. The watch starts first, so that a change between
// the two is not missed; its goroutine is in t.wg too, so that Close
// returns once the file-system notifications are released.
func (t *Transport) watchAndLoad() {
	defer t.wg.Done()
	changes := watch(t.ctx, &t.wg, t.loader.path, t.opts.poll)
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
// progress, if any, and for the watch of the source to end (the
// file-system notifications released, the polling timer stopped).
// Idempotent.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}
