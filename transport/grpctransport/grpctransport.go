// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/recvlimit"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/transport"
)

// Keepalive parameters of every conn, common to the gRPC implementations of
// xDS clients (R-3.3, grpc-go clients/grpctransport).
const (
	// keepaliveTime is how long a conn is idle before the client pings.
	keepaliveTime = 5 * time.Minute
	// keepaliveTimeout is how long the client waits for the ping's ack
	// before it closes the connection.
	keepaliveTimeout = 20 * time.Second
)

// gRPC's own reconnect backoff, made as slow as the client's slowest
// stream backoff step so that it never competes with the caller's schedule:
// NewStream makes a channel in TRANSIENT_FAILURE reconnect at once
// (ResetConnectBackoff), so the caller's backoff between NewStream calls
// decides when connection attempts happen (gRFC A57, R-11.1). Without a
// caller, a failed channel retries on its own every 120 s ± 20 %.
var connectParams = grpc.ConnectParams{
	Backoff: grpcbackoff.Config{
		BaseDelay:  120 * time.Second,
		Multiplier: 1,
		Jitter:     0.2,
		MaxDelay:   120 * time.Second,
	},
	MinConnectTimeout: 20 * time.Second, // gRPC's default
}

// DefaultReconnectTimeout is how long NewStream waits for the connection
// attempt it starts on a channel in TRANSIENT_FAILURE, unless
// WithReconnectTimeout says otherwise.
const DefaultReconnectTimeout = time.Second

// WithReconnectTimeout sets how long NewStream waits, on a channel in
// TRANSIENT_FAILURE, for the connection attempt it starts to make the
// channel READY before it fails with the channel's latest connection error
// (default DefaultReconnectTimeout, 1 s). gRPC keeps a failed channel in
// TRANSIENT_FAILURE until it connects (gRFC A62), so a failed retry is not
// observable and this bounds the wait; an attempt still in progress when it
// expires goes on, and a later NewStream uses the connection if it
// succeeds. Zero or negative means the default.
func WithReconnectTimeout(d time.Duration) Option {
	return func(b *options) {
		if d > 0 {
			b.reconnectTimeout = d
		}
	}
}

// streamDesc describes the bidirectional streaming RPCs of ADS.
var streamDesc = &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}

// Option configures a Builder.
type Option func(*options)

// WithDialOptions adds dial options to every grpc.ClientConn the Builder
// creates. They are applied after the defaults (transport credentials from
// the bootstrap, keepalive of 5 minutes / 20 seconds, a reconnect backoff
// of 120 s that leaves reconnecting to NewStream), so they can override
// them: for example grpc.WithContextDialer for an in-memory listener,
// interceptors, a stats handler or grpc.WithConnectParams. Options given in
// several calls accumulate, in order.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(b *options) {
		b.dialOpts = append(b.dialOpts, opts...)
	}
}

// DefaultMaxRecvMsgSize is the largest response a stream accepts unless
// WithMaxRecvMsgSize or the client (transport.BuildOptions.MaxRecvMsgSize,
// client.WithMaxRecvMsgSize) says otherwise: gRPC's default, 4 MiB.
const DefaultMaxRecvMsgSize = 4 << 20

// WithMaxRecvMsgSize sets the largest message, in bytes, that a stream
// accepts from the management server. Without it, the limit is the
// client's (transport.BuildOptions.MaxRecvMsgSize, which
// client.WithMaxRecvMsgSize sets), else DefaultMaxRecvMsgSize (4 MiB). A
// larger message fails the stream with an error wrapping
// transport.ErrMessageTooLarge that names the limit and the option that
// raises it. Zero or negative means no limit of the Builder's own.
func WithMaxRecvMsgSize(bytes int) Option {
	return func(b *options) {
		if bytes > 0 {
			b.maxRecvMsgSize = bytes
		}
	}
}

// Builder is the transport.Builder of ADS over gRPC, the client's default,
// and the transport.Dialer of gRPC Transports that the per-type streams
// (package transport/pertype) and load reporting (package lrs) use. It
// shares one grpc.ClientConn between all the transports it builds or dials
// for servers with the same bootstrap.ServerConfig.Key (see the package
// doc, Sharing). A Builder is safe for concurrent use and needs no
// closing: its conns are closed with their last transport.
type Builder struct {
	options // initialized at creation time and read-only afterwards

	mu sync.Mutex
	// Guarded by mu.
	conns map[string]*sharedConn // by ServerConfig.Key; every entry has refs > 0
}

var (
	_ transport.Builder = (*Builder)(nil)
	_ transport.Dialer  = (*Builder)(nil)
)

// options are a Builder's settings, from its Options.
type options struct {
	dialOpts         []grpc.DialOption              // appended after the defaults; from WithDialOptions
	channelCreds     map[string]ChannelCredsBuilder // by type name; from WithChannelCreds
	callCreds        map[string]CallCredsBuilder    // by type name; built-ins and WithCallCreds
	maxRecvMsgSize   int                            // bytes; from WithMaxRecvMsgSize; 0: not given
	reconnectTimeout time.Duration                  // from WithReconnectTimeout
}

// NewBuilder returns a Builder configured by opts.
func NewBuilder(opts ...Option) *Builder {
	b := &Builder{
		conns: make(map[string]*sharedConn),
		options: options{
			channelCreds:     make(map[string]ChannelCredsBuilder),
			callCreds:        map[string]CallCredsBuilder{bootstrap.CallCredsJWTTokenFile: jwtTokenFileBuilder{}},
			reconnectTimeout: DefaultReconnectTimeout,
		},
	}
	for _, o := range opts {
		o(&b.options)
	}
	return b
}

// sharedConn is one grpc.ClientConn and the Transports that share it.
type sharedConn struct {
	// Initialized at creation time and read-only afterwards.
	key        string           // sc.Key() of the server; the entry's key in Builder.conns
	cc         *grpc.ClientConn // the channel to the management server
	closeCreds func()           // releases the credentials (stops the certificate file watcher, ...)

	// Guarded by Builder.mu.
	refs int // number of open Transports sharing cc
}

// Build returns the ADS transport (transport.ADS) to the management
// server described by sc, on the Transport Dial returns: the client's
// default. Its errors are Dial's.
func (b *Builder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	tr, err := b.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return transport.ADS(tr), nil
}

// Dial returns a Transport to the management server described by sc,
// sharing the grpc.ClientConn of any open transport of b for a server
// with the same sc.Key(). Its streams accept messages up to the limit of
// WithMaxRecvMsgSize, else o.MaxRecvMsgSize, else DefaultMaxRecvMsgSize,
// and it logs through o.Logger. It does no network I/O; with "tls"
// credentials it reads the certificate files once, to fail early.
//
// Dial returns an error when sc is nil or has no ServerURI, when the
// channel or a call credentials type has no builder (the error names the
// type, and the package for "google_default"), when a builder fails, when
// a "tls" certificate file is missing or invalid (the error names the
// file), when call credentials that need a secure channel are given with
// "insecure" channel credentials, or when grpc.NewClient rejects the
// target or the dial options. sc is not retained.
func (b *Builder) Dial(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.Transport, error) {
	if sc == nil {
		return nil, errors.New("grpctransport: nil ServerConfig")
	}
	if sc.ServerURI == "" {
		return nil, errors.New("grpctransport: empty server URI")
	}
	key := sc.Key()

	b.mu.Lock()
	defer b.mu.Unlock()
	conn := b.conns[key]
	if conn == nil {
		var err error
		if conn, err = b.newSharedConn(key, sc); err != nil {
			return nil, fmt.Errorf("grpctransport: creating transport to %q: %w", sc.ServerURI, err)
		}
		b.conns[key] = conn
	}
	conn.refs++
	logger := o.Logger
	if logger == nil {
		logger = xdslog.Discard()
	}
	limit := recvlimit.Choose(int64(b.maxRecvMsgSize), "grpctransport.WithMaxRecvMsgSize", o.MaxRecvMsgSize, DefaultMaxRecvMsgSize)
	return newGRPCTransport(b, conn, limit, logger), nil
}

// newSharedConn creates the conn for sc with refs 0. The caller holds b.mu
// (so that two Builds of one server create one conn); creating it reads
// only local files.
func (b *Builder) newSharedConn(key string, sc *bootstrap.ServerConfig) (*sharedConn, error) {
	credOpts, closeCreds, err := b.dialCredentials(sc)
	if err != nil {
		return nil, err
	}
	opts := make([]grpc.DialOption, 0, len(credOpts)+3+len(b.dialOpts))
	opts = append(opts, credOpts...)
	opts = append(opts,
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:    keepaliveTime,
			Timeout: keepaliveTimeout,
		}),
		grpc.WithConnectParams(connectParams),
		grpc.WithStatsHandler(statsHandler{}),
	)
	opts = append(opts, b.dialOpts...)
	cc, err := grpc.NewClient(sc.ServerURI, opts...)
	if err != nil {
		closeCreds()
		return nil, fmt.Errorf("creating gRPC channel: %w", err)
	}
	return &sharedConn{key: key, cc: cc, closeCreds: closeCreds}, nil
}

// release drops one reference to conn and closes it with the last one.
func (b *Builder) release(conn *sharedConn) {
	b.mu.Lock()
	conn.refs--
	last := conn.refs == 0
	if last {
		delete(b.conns, conn.key)
	}
	b.mu.Unlock()
	if !last {
		return
	}
	// Closed outside mu: the conn is unreachable from b now, and a Build of
	// the same server meanwhile creates a fresh conn rather than waiting for
	// this one to shut down.
	conn.cc.Close()
	conn.closeCreds()
}

// reconnectNow makes the conn attempt to connect now when it is in
// TRANSIENT_FAILURE, and waits until it leaves that state (READY, or
// another attempt under way), timeout passes or ctx is done. In the other
// states it returns at once: the fail-fast stream creation that follows
// then connects an IDLE conn and waits for the attempt itself.
func (c *sharedConn) reconnectNow(ctx context.Context, timeout time.Duration, logger *slog.Logger) {
	if c.cc.GetState() != connectivity.TransientFailure {
		return
	}
	logger.Debug("gRPC channel in TRANSIENT_FAILURE: reconnecting now")
	c.cc.ResetConnectBackoff()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for s := c.cc.GetState(); s == connectivity.TransientFailure; s = c.cc.GetState() {
		if !c.cc.WaitForStateChange(wctx, s) {
			return // timeout: the stream creation reports the latest error
		}
	}
}

// grpcTransport is one reference to a sharedConn.
type grpcTransport struct {
	// Initialized at creation time and read-only afterwards.
	b      *Builder           // owner of conn's reference count
	conn   *sharedConn        // shared with the other Transports of the same server
	ctx    context.Context    // done once Close is called; cancels this Transport's streams
	cancel context.CancelFunc // cancels ctx
	close  func()             // idempotent Close: cancel, then release conn
	limit  recvlimit.Limit    // the receive limit of its streams
	logger *slog.Logger
}

func newGRPCTransport(b *Builder, conn *sharedConn, limit recvlimit.Limit, logger *slog.Logger) *grpcTransport {
	// Background is right here: ctx only signals Close, it carries no
	// deadline or values into the streams.
	ctx, cancel := context.WithCancel(context.Background())
	t := &grpcTransport{b: b, conn: conn, ctx: ctx, cancel: cancel, limit: limit, logger: logger}
	t.close = sync.OnceFunc(func() {
		t.cancel()
		t.b.release(t.conn)
	})
	return t
}

// NewStream opens a bidirectional stream for method (transport.ADSMethod or
// transport.DeltaADSMethod) on the shared conn.
//
// It is not wait-for-ready, and the caller's schedule of NewStream calls
// is the only backoff (gRFC A57, R-11.1): gRPC's own reconnect backoff is
// not stacked on it. Depending on the channel's connectivity state:
//   - READY: the stream is created at once.
//   - IDLE (never connected, or the connection was lost): the channel
//     connects now, and NewStream waits for that attempt (bounded by gRPC's
//     20 s connect timeout): the stream is created once READY, and a
//     failed attempt fails NewStream at once with codes.Unavailable and the
//     connection error (connection refused, TLS handshake failure, ...).
//   - TRANSIENT_FAILURE (an earlier attempt failed): the channel's
//     reconnect backoff is cut short (ResetConnectBackoff) so that it
//     attempts again now, and NewStream waits for READY for at most the
//     reconnect timeout (WithReconnectTimeout, default 1 s); otherwise it
//     fails with codes.Unavailable and the latest connection error.
//
// So after an outage a stream is back at the caller's next attempt once
// the server is reachable again, and a caller that retries with backoff
// paces the connection attempts too. NewStream does not wait for the
// server's response headers, so a server that rejects the RPC is reported
// by the first Recv.
//
// The stream ends when ctx is cancelled, when the server ends it, or when
// this Transport is closed, even if other Transports still share the conn.
// NewStream returns transport.ErrClosed after Close.
func (t *grpcTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	if t.ctx.Err() != nil {
		return nil, transport.ErrClosed
	}
	sctx, cancel := context.WithCancel(ctx)
	// Close cancels the stream; once the stream's context is done, for
	// whatever reason, unregister from t.ctx so that finished streams do
	// not pile up in it.
	stopOnClose := context.AfterFunc(t.ctx, cancel)
	context.AfterFunc(sctx, func() { stopOnClose() })

	t.conn.reconnectNow(sctx, t.b.reconnectTimeout, t.logger)
	si := &streamInfo{}
	cs, err := t.conn.cc.NewStream(context.WithValue(sctx, streamInfoKey{}, si), streamDesc, method, grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(int(t.limit.Bytes)))
	if err != nil {
		cancel()
		if t.ctx.Err() != nil {
			return nil, transport.ErrClosed
		}
		return nil, err
	}
	return &grpcStream{cs: cs, cancel: cancel, info: si, limit: t.limit}, nil
}

// Close releases this Transport's reference to the shared conn and ends
// the streams opened on it; the conn is closed with its last Transport.
// Close is idempotent and safe for concurrent use.
func (t *grpcTransport) Close() {
	t.close()
}

// grpcStream adapts a grpc.ClientStream to transport.Stream.
type grpcStream struct {
	// Initialized at creation time and read-only afterwards.
	cs     grpc.ClientStream  // created with rawCodec
	cancel context.CancelFunc // cancels the stream's context; safe to call repeatedly
	info   *streamInfo        // trailers seen, largest request; for size errors
	limit  recvlimit.Limit    // the receive limit of cs
}

// Send sends msg as one message. It copies msg into a buffer owned by
// gRPC, so msg may be reused once Send returns. Send may return before the
// server receives the message. When the stream has ended, Send returns
// io.EOF and Recv returns the stream's status.
func (s *grpcStream) Send(msg []byte) error {
	if n := int64(len(msg)); n > s.info.maxSent.Load() {
		s.info.maxSent.Store(n) // only Send writes it, and Sends are not concurrent
	}
	return s.cs.SendMsg(msg)
}

// Recv blocks until the next message arrives and returns it in a new slice
// owned by the caller (nil for an empty message). Otherwise it returns
// io.EOF when the server ended the stream with status OK, or a gRPC status
// error; the stream's resources are released then.
//
// A response larger than the receive limit (see Dial), and a
// request the server refused as larger than its own limit, give an error
// wrapping both transport.ErrMessageTooLarge and the gRPC status (code
// codes.ResourceExhausted), whose text names the limit or the request size
// in bytes. Other ResourceExhausted statuses from the server (quotas) are
// returned unwrapped.
func (s *grpcStream) Recv() ([]byte, error) {
	var msg []byte
	if err := s.cs.RecvMsg(&msg); err != nil {
		// gRPC frees the stream once RecvMsg fails; cancelling also drops
		// the stream's registration with its Transport.
		s.cancel()
		return nil, sizeError(err, s.info, s.limit)
	}
	return msg, nil
}
