// SPDX-License-Identifier: Apache-2.0

// Package file implements filesystem subscriptions (xDS protocol,
// "Filesystem subscriptions"): resources come from files holding one
// envoy.service.discovery.v3.DiscoveryResponse each, re-read when they are
// replaced, instead of from a management server. No bootstrap file and no
// server are needed:
//
//	cfg, b, err := file.Bootstrap("/etc/xds/listeners.yaml")
//	c, err := client.New(cfg, client.WithTransportBuilder(b))
//
// Its Builder is a transport.Builder whose transport.XDS has one stream
// per type (named "filesystem subscription of <type URL>" in the client's
// logs and errors), so the client's engine is unchanged: subscriptions,
// validation, the cache, NACK semantics (an invalid resource keeps the
// last good value and shows NACKED in Dump), does-not-exist timers and
// watchers behave as with a management server. A type's stream answers
// the client's SotW requests with the source's current DiscoveryResponse
// of the type (of the built-in types, only the resources the request
// names, unless it asks for the wildcard: an empty list or "*"), again
// when a request changes the names, and sends a new response when the
// source changes. Responses carry no nonce. Incremental (delta) xDS is not
// supported (transport.ErrDeltaUnsupported), nor is load reporting
// (transport.ErrLRSUnsupported). The transport logs through the client's
// logger unless given one (WithLogger).
//
// # Source
//
// The server URI is "file:///path" (PathFromURI). The path is a file, or a
// directory whose files are all read: one or more files per type, whose
// resources are merged by type URL (files in name order). Hidden files
// (".name", as Kubernetes ConfigMap volumes use internally) and files of
// other extensions are skipped, so write temporary files under a hidden
// name. The format follows the extension: .json (proto3 JSON), .yaml or
// .yml (YAML converted to JSON with sigs.k8s.io/yaml), .textpb or .txtpb
// (protobuf text format) and .pb (binary). Any values name their message
// by type URL; the messages are resolved with protoregistry.GlobalTypes
// (WithResolver), which holds the client's built-in resource types.
//
// Only regular files are read (symbolic links are followed): a FIFO,
// device or socket in the directory is skipped with a warning, once per
// file, and a source path that is one is an error. Files are opened
// without blocking and checked after the open, so that a FIFO put in the
// place of a file is never waited on. A file larger than the limit
// (WithMaxFileBytes, else the client's receive limit,
// client.WithMaxRecvMsgSize, else DefaultMaxFileBytes, 4 MiB) is refused
// unread, with an error wrapping ErrFileTooLarge that names the file, the
// limit and the option that raises it. Loading never holds up Close:
// Transport.Close, and Close of a client using the transport, return
// within one file read, whatever the files are.
//
// The version_info of a type's response is the file's version_info when
// one file holds the type and sets it, otherwise a digest of the
// resources ("sha256:…"), so unchanged content is not sent again.
//
// # Replacing files
//
// Replace a file atomically, the way Envoy expects: write a temporary file
// in the same directory, then rename it over the old one. The directory is
// watched with file-system notifications (github.com/fsnotify/fsnotify),
// which see renames; where notifications are not available the source is
// polled every DefaultPollInterval (1 s; WithPolling forces polling). A
// replacement is picked up within about a second.
//
// # Errors
//
// A load is all of the source or nothing: a file that cannot be read or
// parsed, is larger than the limit, has no type_url, or changed its
// type_url since it was first loaded (a Listener file replaced by a
// Cluster file) fails the whole load, and nothing of it is sent: the
// client keeps its last good values. The error reaches watchers through
// the client's connectivity handling: each type's stream ends; the
// client opens a new one (at once when the stream had accepted
// responses), without reporting anything; the new stream fails
// with the load error before any response, which the client reports as a
// connection error: an AmbientError to watchers of cached resources of
// the type, a
// ResourceError to the others. The client then retries with its
// backoff (R-11.1: 1 s × 1.6ⁿ ± 20 %). Once an error was reported on a
// type's stream, a stream of that type that meets it again does not fail
// but waits for the next change of the source: a fixed file is picked up
// as soon as it is written, and watchers get one error per distinct
// failure. The source is read by one goroutine of the Transport, which
// holds no lock while it reads: Close does not wait for a stream. Close
// waits for that goroutine and for the watch of the source (the
// notifications released, the polling stopped).
package file
