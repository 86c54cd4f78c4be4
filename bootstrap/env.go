// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"fmt"
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

// FromEnv reads the bootstrap config the gRPC way: from the file
// named by GRPC_XDS_BOOTSTRAP if that is set, else from the JSON in
// GRPC_XDS_BOOTSTRAP_CONFIG. The file wins when both are set; a variable
// set to "" counts as unset. It reads the environment (and the file) on
// each call; nothing happens at package init.
//
// Errors:
//   - neither variable set: an error wrapping ErrNoBootstrap. The xDS
//     client cannot be created without a config, so a caller with a
//     default of its own checks errors.Is(err, ErrNoBootstrap) and uses
//     Parse instead.
//   - the file cannot be read: an error wrapping the *fs.PathError. This
//     does not fall through to GRPC_XDS_BOOTSTRAP_CONFIG.
//   - the content is invalid: the *ParseError of Parse, with Source naming
//     the file or variable.
func FromEnv() (*Config, error) {
	if path := os.Getenv(EnvBootstrapFile); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: reading %s file: %w", EnvBootstrapFile, err)
		}
		return parseFrom(data, fmt.Sprintf("file %q (%s)", path, EnvBootstrapFile))
	}
	if content := os.Getenv(EnvBootstrapConfig); content != "" {
		return parseFrom([]byte(content), EnvBootstrapConfig)
	}
	return nil, fmt.Errorf("%w: neither %s nor %s is set", ErrNoBootstrap, EnvBootstrapFile, EnvBootstrapConfig)
}

// parseFrom is Parse with the error's Source set.
func parseFrom(data []byte, source string) (*Config, error) {
	c, err := Parse(data)
	if pe := (*ParseError)(nil); errors.As(err, &pe) {
		pe.Source = source
	}
	return c, err
}
