// SPDX-License-Identifier: Apache-2.0

// Package xdslog holds the fixed slog attribute keys and levels the module
// logs with, so that logs can be queried by field. Users see the levels as
// slog.Level values documented in the public packages (client.LevelTrace).
package xdslog

import "log/slog"

// Attribute keys.
const (
	KeyNodeID      = "node_id"
	KeyServerURI   = "server_uri"
	KeyAuthority   = "authority"
	KeyTypeURL     = "type_url"
	KeyResource    = "resource"
	KeyVersionInfo = "version_info"
	KeyNonce       = "nonce"
	KeyStreamID    = "stream_id"
	KeyError       = "error"
)

// LevelTrace is below slog.LevelDebug; full protocol messages are logged at
// this level. client.LevelTrace is its public name and is defined as it.
const LevelTrace = slog.LevelDebug - 4

// Discard returns a logger that drops everything: the default of a library
// that should be silent until asked.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
