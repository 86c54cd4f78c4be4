// SPDX-License-Identifier: Apache-2.0

package xdscreds

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	// FileWatcherPluginName is the plugin_name of the built-in
	// certificate provider plugin, which reads PEM files (gRFC A29).
	FileWatcherPluginName = "file_watcher"

	// DefaultRefreshInterval is how often a file_watcher instance re-reads
	// its files when its config has no refresh_interval: 10 minutes, as in
	// grpc-go.
	DefaultRefreshInterval = 10 * time.Minute
)

// fileWatcherPlugin is the "file_watcher" certificate provider plugin
// (gRFC A29, A87). Its config:
//
//	{
//	  "certificate_file": "…", "private_key_file": "…", // the identity, both or neither
//	  "ca_certificate_file": "…",                       // the roots
//	  "spiffe_trust_bundle_map_file": "…",              // roots by SPIFFE trust domain (A87); wins over ca_certificate_file
//	  "refresh_interval": "600s"                        // a protobuf JSON duration > 0; default 10 minutes
//	}
//
// Providers are grpc-go's certprovider/pemfile watchers, given only the
// files that what is wanted needs: each reads them at once and then every
// refresh_interval, and keeps the last key material that read and parsed
// when a read fails (a file missing, half written or invalid), logging
// the failure through grpclog (component "pemfile", at WARNING). Until a
// first read succeeds, handshakes wait for one, up to their deadline.
type fileWatcherPlugin struct{}

func (fileWatcherPlugin) Name() string { return FileWatcherPluginName }

// fileWatcherConfig is the parsed config of a file_watcher instance.
type fileWatcherConfig struct {
	certFile, keyFile, caFile, bundleFile string
	refresh                               time.Duration
}

// ParseConfig checks a file_watcher config: strings for the files, at
// least one of certificate_file, ca_certificate_file and
// spiffe_trust_bundle_map_file, certificate_file and private_key_file
// both or neither and in one directory (as every gRPC requires, so that
// both can be replaced at once), and a positive refresh_interval.
func (fileWatcherPlugin) ParseConfig(raw json.RawMessage) (ProviderConfig, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("missing: file_watcher needs certificate_file and private_key_file, ca_certificate_file or spiffe_trust_bundle_map_file")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	c := &fileWatcherConfig{refresh: DefaultRefreshInterval}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"certificate_file", &c.certFile},
		{"private_key_file", &c.keyFile},
		{"ca_certificate_file", &c.caFile},
		{"spiffe_trust_bundle_map_file", &c.bundleFile},
	} {
		name, dst := f.name, f.dst
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return nil, fmt.Errorf("%s: want a string, got %s", name, v)
		}
	}
	switch {
	case c.certFile == "" && c.keyFile == "" && c.caFile == "" && c.bundleFile == "":
		return nil, errors.New("no file: set certificate_file and private_key_file, ca_certificate_file or spiffe_trust_bundle_map_file")
	case c.certFile != "" && c.keyFile == "":
		return nil, errors.New("private_key_file: must be set when certificate_file is set")
	case c.certFile == "" && c.keyFile != "":
		return nil, errors.New("certificate_file: must be set when private_key_file is set")
	case c.certFile != "" && filepath.Dir(c.certFile) != filepath.Dir(c.keyFile):
		return nil, fmt.Errorf("certificate_file %q and private_key_file %q must be in the same directory", c.certFile, c.keyFile)
	}
	if v, ok := fields["refresh_interval"]; ok && string(v) != "null" {
		var d durationpb.Duration
		if err := protojson.Unmarshal(v, &d); err != nil {
			return nil, fmt.Errorf("refresh_interval: want a duration such as \"600s\", got %s: %w", v, err)
		}
		if err := d.CheckValid(); err != nil {
			return nil, fmt.Errorf("refresh_interval: %w", err)
		}
		if c.refresh = d.AsDuration(); c.refresh <= 0 {
			return nil, fmt.Errorf("refresh_interval: must be greater than zero, got %s", v)
		}
	}
	return c, nil
}

// Build starts a pemfile watcher of the files opts need.
func (c *fileWatcherConfig) Build(opts certprovider.BuildOptions) (certprovider.Provider, error) {
	po := pemfile.Options{RefreshDuration: c.refresh}
	if opts.WantIdentity {
		if c.certFile == "" {
			return nil, errors.New("an identity certificate is wanted, but the config has no certificate_file")
		}
		po.CertFile, po.KeyFile = c.certFile, c.keyFile
	}
	if opts.WantRoot {
		if c.caFile == "" && c.bundleFile == "" {
			return nil, errors.New("root certificates are wanted, but the config has no ca_certificate_file or spiffe_trust_bundle_map_file")
		}
		po.RootFile, po.SPIFFEBundleMapFile = c.caFile, c.bundleFile
	}
	p, err := pemfile.NewProvider(po)
	if err != nil {
		return nil, fmt.Errorf("starting the file watcher: %w", err)
	}
	return p, nil
}
