// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Environment variables FromEnv reads (R-1.1, gRFC A27).
const (
	// EnvBootstrapFile names the environment variable holding the path of
	// the bootstrap file.
	EnvBootstrapFile = "GRPC_XDS_BOOTSTRAP"
	// EnvBootstrapConfig names the environment variable holding the
	// bootstrap JSON itself.
	EnvBootstrapConfig = "GRPC_XDS_BOOTSTRAP_CONFIG"
)

// FromEnv reads the bootstrap config the gRPC way and parses it
// with Parse and opts: from the file named by GRPC_XDS_BOOTSTRAP if that is
// set, else from the JSON in GRPC_XDS_BOOTSTRAP_CONFIG. The file wins when both are set; a variable
// set to "" counts as unset. It reads the environment (and the file) on
// each call; nothing happens at package init.
//
// Errors:
//   - neither variable set: an error wrapping ErrNoBootstrap. The xDS
//     client cannot be created without a config, so a caller with a
//     default of its own checks errors.Is(err, ErrNoBootstrap) and uses
//     Parse instead.
//   - the file cannot be read: an error wrapping the *fs.PathError, whose
//     text names the file and the variable, as a *ParseError's Source
//     does: `bootstrap: file "/etc/xds.json" (GRPC_XDS_BOOTSTRAP): cannot
//     read it: open /etc/xds.json: no such file or directory`. This does
//     not fall through to GRPC_XDS_BOOTSTRAP_CONFIG.
//   - the file or the variable holds more than MaxSize bytes: a
//     *ParseError wrapping ErrTooLarge, returned before parsing; of a
//     file, at most MaxSize+1 bytes are read.
//   - the content is invalid: the *ParseError of Parse, with Source naming
//     the file or variable.
func FromEnv(opts ...ParseOption) (*Config, error) {
	if path := os.Getenv(EnvBootstrapFile); path != "" {
		source := fmt.Sprintf("file %q (%s)", path, EnvBootstrapFile)
		data, err := readLimited(path)
		if err != nil {
			if pe := (*ParseError)(nil); errors.As(err, &pe) {
				pe.Source = source
				return nil, pe
			}
			return nil, fmt.Errorf("bootstrap: %s: cannot read it: %w", source, err)
		}
		return parseFrom(data, source, opts)
	}
	if content := os.Getenv(EnvBootstrapConfig); content != "" {
		if len(content) > MaxSize {
			// Refused before the copy to []byte.
			pe := tooLarge(int64(len(content)))
			pe.Source = EnvBootstrapConfig
			return nil, pe
		}
		return parseFrom([]byte(content), EnvBootstrapConfig, opts)
	}
	return nil, fmt.Errorf("%w: neither %s nor %s is set", ErrNoBootstrap, EnvBootstrapFile, EnvBootstrapConfig)
}

// readLimited reads the file at path, refusing one larger than MaxSize:
// by its size before reading when it is a regular file, and by reading at
// most MaxSize+1 bytes otherwise (a pipe, a file that grows meanwhile).
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxSize {
		return nil, tooLarge(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err // an *fs.PathError
	}
	if len(data) > MaxSize {
		return nil, tooLarge(-1)
	}
	return data, nil
}

// parseFrom is Parse with the error's Source set.
func parseFrom(data []byte, source string, opts []ParseOption) (*Config, error) {
	c, err := Parse(data, opts...)
	if pe := (*ParseError)(nil); errors.As(err, &pe) {
		pe.Source = source
	}
	return c, err
}
