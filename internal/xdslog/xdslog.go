// SPDX-License-Identifier: Apache-2.0

// Package xdslog holds the fixed slog attribute keys and levels the module
// logs with, so that logs can be queried by field. Users see the levels as
// slog.Level values documented in the public packages (client.LevelTrace).
package xdslog

import "log/slog"

// Attribute keys, one spelling per concept across the module.
const (
	KeyNodeID      = "node_id"
	KeyServerURI   = "server_uri"
	KeyAuthority   = "authority"
	KeyTypeURL     = "type_url"
	KeyResource    = "resource"
	KeyVersionInfo = "version_info"
	KeyNonce       = "nonce"
	KeyStreamID    = "stream_id"
	KeyStream      = "stream" // what the transport calls a stream: "ADS stream", "REST-JSON polling of /v3/discovery:clusters"
	KeyError       = "error"

	// Protocol messages and their parts.
	KeyRequest           = "request"
	KeyResponse          = "response"
	KeyResources         = "resources"
	KeyRemoved           = "removed"
	KeySystemVersionInfo = "system_version_info"
	KeyDelta             = "delta"
	KeyTTL               = "ttl"
	KeyCachedValueKept   = "cached_value_kept"

	// Servers, streams and their timing.
	KeyFallbackServerURI = "fallback_server_uri"
	KeyLRSServer         = "lrs_server"
	KeySendAllClusters   = "send_all_clusters"
	KeyBackoff           = "backoff"
	KeyInterval          = "interval"
	KeyGrace             = "grace"

	// The data path.
	KeyTarget             = "target"
	KeyListener           = "listener"
	KeyDataPlaneAuthority = "data_plane_authority"
	KeyRoute              = "route"
	KeyRoutes             = "routes"
	KeyPlugin             = "plugin"
	KeyHTTPFilter         = "http_filter"
	KeyCluster            = "cluster"
	KeyClusters           = "clusters"
	KeyServiceConfig      = "service_config"
	KeyHeader             = "header"

	// Connections, servers and certificates.
	KeyAddress         = "address"
	KeyLocalAddress    = "local"
	KeyRemoteAddress   = "remote"
	KeyFilterChain     = "chain"
	KeyMode            = "mode"
	KeyInstance        = "instance"
	KeyCertificateName = "certificate_name"
	KeyRoot            = "root"
	KeyIdentity        = "identity"

	// Requests of the servers.
	KeyPath   = "path"
	KeyStatus = "status"
	KeyPolicy = "policy"

	// Files.
	KeyFile = "file"
	KeyDir  = "dir"
)

// LevelTrace is below slog.LevelDebug; full protocol messages are logged at
// this level. client.LevelTrace is its public name and is defined as it.
const LevelTrace = slog.LevelDebug - 4

// Discard returns a logger that drops everything: the default of a library
// that should be silent until asked.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
