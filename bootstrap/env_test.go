// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	fileJSON   = `{"xds_servers": [{"server_uri": "from-file:443", "channel_creds": [{"type": "insecure"}]}]}`
	inlineJSON = `{"xds_servers": [{"server_uri": "from-env:443", "channel_creds": [{"type": "insecure"}]}]}`
)

// writeBootstrap writes content to a fresh file and returns its path.
func writeBootstrap(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFromEnv covers the source order of.
func TestFromEnv(t *testing.T) {
	missing := filepath.Join(os.TempDir(), "does-not-exist", "bootstrap.json")
	tests := []struct {
		name       string
		giveFile   string // content of the file GRPC_XDS_BOOTSTRAP names; "" for no file
		givePath   string // GRPC_XDS_BOOTSTRAP when no file is written
		giveInline string // GRPC_XDS_BOOTSTRAP_CONFIG
		wantURI    string
		wantErr    string // substring of the error
		wantErrIs  error
	}{
		{
			// the file path wins when both are set.
			name:       "file wins over inline",
			giveFile:   fileJSON,
			giveInline: inlineJSON,
			wantURI:    "from-file:443",
		},
		{
			name:     "file only",
			giveFile: fileJSON,
			wantURI:  "from-file:443",
		},
		{
			// inline JSON is used when no path is set.
			name:       "inline only",
			giveInline: inlineJSON,
			wantURI:    "from-env:443",
		},
		{
			// a file read error is an error, not a fall-through to
			// the inline config. The error names the variable, the file
			// and the cause.
			name:       "file missing",
			givePath:   missing,
			giveInline: inlineJSON,
			wantErr:    `bootstrap: file "` + missing + `" (GRPC_XDS_BOOTSTRAP): cannot read it: open ` + missing + `: no such file or directory`,
			wantErrIs:  fs.ErrNotExist,
		},
		{
			// neither set → ErrNoBootstrap; the client cannot be
			// created.
			name:      "neither set",
			wantErr:   "bootstrap: no bootstrap configuration: neither GRPC_XDS_BOOTSTRAP nor GRPC_XDS_BOOTSTRAP_CONFIG is set",
			wantErrIs: ErrNoBootstrap,
		},
		{
			// An invalid file names its source.
			name:     "invalid file",
			giveFile: `{"xds_servers": []}`,
			wantErr:  `(GRPC_XDS_BOOTSTRAP): xds_servers: empty`,
		},
		{
			// An invalid inline config names its source.
			name:       "invalid inline",
			giveInline: `{"xds_servers": [{"server_uri": ""}]}`,
			wantErr:    "bootstrap: GRPC_XDS_BOOTSTRAP_CONFIG: xds_servers[0].server_uri: empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.givePath
			if tt.giveFile != "" {
				path = writeBootstrap(t, tt.giveFile)
			}
			t.Setenv(EnvBootstrapFile, path)
			t.Setenv(EnvBootstrapConfig, tt.giveInline)

			got, err := FromEnv()
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("FromEnv() = %+v, want error containing %q", got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv() error = %q, want it to contain %q", err, tt.wantErr)
				}
				if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
					t.Fatalf("FromEnv() error = %v, want errors.Is(err, %v)", err, tt.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv() error = %v", err)
			}
			want := withServers(insecureServer(tt.wantURI))
			if diff := cmp.Diff(got, want); diff != "" {
				t.Fatalf("FromEnv() (-got, +want):\n%s", diff)
			}
		})
	}
}

// TestFromEnv_ParseErrorSource checks that an invalid file gives a
// *ParseError whose Source names the file.
func TestFromEnv_ParseErrorSource(t *testing.T) {
	path := writeBootstrap(t, `{"xds_servers": 1}`)
	t.Setenv(EnvBootstrapFile, path)
	t.Setenv(EnvBootstrapConfig, "")

	_, err := FromEnv()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("FromEnv() error = %v, want a *ParseError", err)
	}
	wantSource := `file "` + path + `" (GRPC_XDS_BOOTSTRAP)`
	if pe.Source != wantSource || pe.Field != "xds_servers" {
		t.Fatalf("ParseError{Source: %q, Field: %q}, want {%q, %q}", pe.Source, pe.Field, wantSource, "xds_servers")
	}
	if want := "bootstrap: " + wantSource + ": xds_servers: want an array, got number"; err.Error() != want {
		t.Fatalf("FromEnv() error:\n got %s\nwant %s", err, want)
	}
}

// TestFromEnv_RereadsEachCall checks nothing is cached: FromEnv reads the
// environment on every call, not at init.
func TestFromEnv_RereadsEachCall(t *testing.T) {
	t.Setenv(EnvBootstrapFile, "")
	t.Setenv(EnvBootstrapConfig, "")
	if _, err := FromEnv(); !errors.Is(err, ErrNoBootstrap) {
		t.Fatalf("FromEnv() error = %v, want ErrNoBootstrap", err)
	}
	t.Setenv(EnvBootstrapConfig, inlineJSON)
	c, err := FromEnv()
	if err != nil {
		t.Fatalf("FromEnv() error = %v", err)
	}
	if got := c.Servers[0].ServerURI; got != "from-env:443" {
		t.Fatalf("ServerURI = %q, want %q", got, "from-env:443")
	}
}
