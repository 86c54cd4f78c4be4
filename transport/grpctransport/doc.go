// SPDX-License-Identifier: Apache-2.0

// Package grpctransport reaches management servers over gRPC. Its Builder
// is the transport.Builder the xDS client uses by default, ADS over gRPC
// (Build returns transport.ADS of a Transport), and the transport.Dialer of
// gRPC Transports for the per-type streams (package transport/pertype) and
// load reporting (package lrs). A Transport is backed by a
// grpc.ClientConn to the management server named by a
// bootstrap.ServerConfig, and its streams move serialized protobuf messages
// as []byte through a pass-through codec, so the client's engine never
// depends on gRPC or on generated stubs.
//
// Build and Dial do no network I/O: grpc.NewClient creates the channel
// idle, and it connects when the first stream is opened. A Transport logs
// through transport.BuildOptions.Logger, the client's logger (at
// slog.LevelDebug, when it makes a channel in TRANSIENT_FAILURE reconnect).
//
// # Sharing
//
// A Builder keeps one grpc.ClientConn per distinct server identity,
// bootstrap.ServerConfig.Key (server URI, channel credentials, call
// credentials and known server features; see gRFC A47 "Server Channel
// Map" and R-1.5). Building or dialing a transport for a server that
// already has a conn returns a new one sharing it (so a client's load
// reporting stream, transport.XDS.NewLRSStream, goes on its ADS
// connection); the conn, and the certificate file watcher of "tls"
// credentials, are closed when the last Transport sharing them is closed
// . Conns are not shared across Builders.
//
// # Streams and connectivity
//
// Transport.NewStream does not use gRPC's wait-for-ready: it returns only
// once the channel is connected and the stream created. When the server is
// unreachable (connection refused, TLS handshake failure, ...), NewStream
// fails with a gRPC status error of code codes.Unavailable instead of
// waiting for the server to come up, so the client can report the
// connection error to its watchers and start its does-not-exist
// timers only on a connected stream (gRFC A57, R-9.2). Retrying is the
// caller's job, and the caller's backoff is the only one (gRFC A57,
// NewStream on a channel in TRANSIENT_FAILURE makes it reconnect
// at once and waits up to the reconnect timeout (WithReconnectTimeout,
// default 1 s) for it, and gRPC's own reconnect backoff is set to 120 s so
// that it does not compete. After an outage, a stream is therefore back at
// the caller's first attempt once the server is reachable again. Stream
// errors are gRPC status errors (use status.Code), or io.EOF from Recv when
// the server ended the stream with status OK.
//
// # Message size
//
// A stream accepts responses up to the Builder's WithMaxRecvMsgSize bytes;
// without it, up to the client's limit (transport.BuildOptions.MaxRecvMsgSize,
// set by client.WithMaxRecvMsgSize), else DefaultMaxRecvMsgSize (4 MiB, as
// gRPC's). A larger response, or a request that the server refuses as
// larger than its own limit, fails the stream with an error wrapping
// transport.ErrMessageTooLarge (and the ResourceExhausted status), whose
// text names the limit and the option that raises it, or the request
// size.
//
// # Credentials
//
// The channel credentials come from ServerConfig.ChannelCreds:
//
//   - "insecure": plaintext.
//   - "tls" (gRFC A65): TLS, with the trusted roots read from
//     CACertificateFile (the system roots when it is empty) and, when
//     CertificateFile and PrivateKeyFile are set, a client certificate
//     (mTLS). The files are watched with grpc-go's pemfile certificate
//     provider and re-read every RefreshInterval (default 10 minutes), so
//     rotated certificates are used by the next handshake. Build reads and
//     parses the files once, and returns an error naming the file when one
//     is missing or invalid. As with grpc-go's file watcher, the
//     certificate and key files must be in the same directory. A rotated
//     file that fails to parse is ignored and the previous contents stay in
//     use.
//   - "google_default": with the Builder of package
//     grpctransport/googledefault, given with WithChannelCreds (kept out of
//     this package so that programs without it do not link oauth2);
//     without it Build fails with an error naming that package.
//   - any other type: with a ChannelCredsBuilder of that name given with
//     WithChannelCreds (and the name declared to bootstrap.Parse with
//     bootstrap.WithChannelCredsTypes). There is no global registry and
//     nothing is registered at init: each Builder has the built-ins plus
//     what it is given.
//
// Every ServerConfig.CallCreds entry (gRFC A97, R-3.2) adds per-RPC
// credentials to the channel's streams: "jwt_token_file" is built in (a
// JWT read from the file, sent as "authorization: Bearer <token>", cached
// until shortly before its expiry and read again as soon as the file
// changes); other types need a CallCredsBuilder given with WithCallCreds.
// Call credentials that require transport security with "insecure"
// channel credentials make Build fail.
//
// Options given with WithDialOptions come after the defaults, so a
// grpc.WithTransportCredentials there replaces the bootstrap credentials
// (useful with in-memory listeners in tests).
//
// # Concurrency
//
// Builder.Build, Builder.Dial, Transport.NewStream and Transport.Close are
// safe for concurrent use. On one Stream, Send may be called concurrently with
// Recv, but neither Send nor Recv may be called concurrently with itself,
// as for a gRPC stream. Transport.Close is idempotent and does not wait
// for the network; closing the last Transport of a conn closes the conn
// (which fails its streams) and stops the certificate watcher.
package grpctransport
