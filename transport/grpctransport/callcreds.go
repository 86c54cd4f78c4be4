// SPDX-License-Identifier: Apache-2.0

package grpctransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/jwt"

	"github.com/proxyless/xds/bootstrap"
)

// jwtTokenFileBuilder builds the "jwt_token_file" call credentials of
// gRFC A97.
type jwtTokenFileBuilder struct{}

func (jwtTokenFileBuilder) Name() string { return bootstrap.CallCredsJWTTokenFile }

// Build reads `jwt_token_file` from config; bootstrap.Parse has already
// checked it, this repeats the check for hand-built configs.
func (jwtTokenFileBuilder) Build(config json.RawMessage) (credentials.PerRPCCredentials, func(), error) {
	var cfg struct {
		Path string `json:"jwt_token_file"`
	}
	if len(config) > 0 {
		if err := json.Unmarshal(config, &cfg); err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
	}
	if cfg.Path == "" {
		return nil, nil, errors.New("config.jwt_token_file: empty")
	}
	return newJWTFileCreds(cfg.Path)
}

// jwtFileCreds are grpc-go's JWT token file call credentials (gRFC A97:
// the token is cached until 30 s before its `exp`, re-read within a minute
// of that, sent as "authorization: Bearer <token>", and only on secure
// connections), made to re-read the file as soon as it changes: before
// each stream it looks at the file's identity, size and modification
// time, and starts from a fresh copy of the credentials when they
// changed, so a rotated token is used by the next stream even while the
// old one is still valid. A stream needs the token once, when it starts.
type jwtFileCreds struct {
	// Initialized at creation time and read-only afterwards.
	path string

	mu sync.Mutex
	// Guarded by mu.
	stat  os.FileInfo                   // the file when creds was made; nil if it could not be read
	creds credentials.PerRPCCredentials // grpc-go's jwt credentials for the file
}

func newJWTFileCreds(path string) (credentials.PerRPCCredentials, func(), error) {
	c := &jwtFileCreds{path: path}
	if err := c.refreshLocked(); err != nil {
		return nil, nil, err
	}
	return c, nil, nil
}

// refreshLocked replaces c.creds if the file changed since it was made.
func (c *jwtFileCreds) refreshLocked() error {
	fi, err := os.Stat(c.path)
	if err != nil {
		fi = nil // grpc-go's credentials report the read error with UNAVAILABLE
	}
	if c.creds != nil && sameFile(c.stat, fi) {
		return nil
	}
	creds, err := jwt.NewTokenFileCallCredentials(c.path)
	if err != nil {
		return err
	}
	c.creds, c.stat = creds, fi
	return nil
}

// sameFile reports whether a and b describe the same, unchanged file.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// GetRequestMetadata returns the "authorization" header, reading the token
// file again if it changed. Errors are gRPC status errors: UNAVAILABLE when
// the file cannot be read, UNAUTHENTICATED when it holds no valid JWT.
func (c *jwtFileCreds) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	c.mu.Lock()
	err := c.refreshLocked()
	creds := c.creds
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return creds.GetRequestMetadata(ctx, uri...)
}

// RequireTransportSecurity returns true: a token is never sent in
// plaintext (gRFC A97).
func (c *jwtFileCreds) RequireTransportSecurity() bool { return true }
