// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxyless/xds/bootstrap"
)

// TestRun_Help checks that help, -h and --help print the usage, listing
// every command, on stdout and exit 0, and that "help COMMAND" and
// "COMMAND -h" print the command's flags.
func TestRun_Help(t *testing.T) {
	ctx := testContext(t)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, stdout, stderr := runSync(ctx, args...)
		if code != exitOK || stderr != "" {
			t.Errorf("xdsctl %v = %d, stderr %q; want 0 and no stderr", args, code, stderr)
		}
		for _, want := range []string{"xdsctl demo", "xdsctl watch", "xdsctl status", "xdsctl help", "TYPE/NAME"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("xdsctl %v printed:\n%s\nwant it to contain %q", args, stdout, want)
			}
		}
	}
	for _, args := range [][]string{{"help", "watch"}, {"watch", "-h"}, {"watch", "--help"}} {
		code, stdout, _ := runSync(ctx, args...)
		if code != exitOK || !strings.Contains(stdout, "Usage: xdsctl watch") || !strings.Contains(stdout, "-resource-timeout") {
			t.Errorf("xdsctl %v = %d, printed:\n%s\nwant 0 and the watch flags", args, code, stdout)
		}
	}
	for _, name := range []string{"demo", "status"} {
		code, stdout, _ := runSync(ctx, "help", name)
		if code != exitOK || !strings.Contains(stdout, "Usage: xdsctl "+name) {
			t.Errorf("xdsctl help %s = %d, printed:\n%s", name, code, stdout)
		}
	}
}

// TestRun_UsageErrors checks that usage errors print one line on stderr
// and exit 2.
func TestRun_UsageErrors(t *testing.T) {
	ctx := testContext(t)
	bootstrapFile := filepath.Join(t.TempDir(), "never-read.json")
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"help of unknown command", []string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{"bad flag", []string{"watch", "--nope", "cluster/c"}, "flag provided but not defined: --nope"},
		{"bad flag after argument", []string{"status", "cluster/c", "--nope"}, "flag provided but not defined: --nope"},
		{"bad output", []string{"watch", "--output", "xml", "cluster/c"}, `invalid value "xml" for flag --output: want text, json or yaml`},
		{"bad short output", []string{"status", "-o", "xml", "cluster/c"}, `invalid value "xml" for flag -o: want text, json or yaml`},
		{"bad duration", []string{"status", "--wait", "soon", "cluster/c"}, "invalid value"},
		{"negative wait", []string{"status", "--bootstrap", bootstrapFile, "--wait", "-1s", "cluster/c"}, "--wait must not be negative"},
		{"negative resource timeout", []string{"watch", "--bootstrap", bootstrapFile, "--resource-timeout", "-1s", "cluster/c"}, "--resource-timeout must not be negative"},
		{"bad log level", []string{"watch", "--bootstrap", bootstrapFile, "--log-level", "loud", "cluster/c"}, "--log-level"},
		{"unknown type", []string{"watch", "--bootstrap", bootstrapFile, "secret/s"}, `unknown type "secret"`},
		{"no slash", []string{"status", "--bootstrap", bootstrapFile, "cluster"}, "want TYPE/NAME"},
		{"empty name", []string{"status", "--bootstrap", bootstrapFile, "cluster/"}, "want TYPE/NAME"},
		{"no resources", []string{"watch", "--bootstrap", bootstrapFile}, "no resources given"},
		{"demo arguments", []string{"demo", "extra"}, "unexpected arguments"},
		{"demo interval", []string{"demo", "--interval", "0s"}, "--interval must be positive"},
		{"demo base port", []string{"demo", "--base-port", "65530"}, "--base-port must be 0 or a port up to 65525"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runSync(ctx, tt.args...)
			if code != exitUsage {
				t.Errorf("xdsctl %v = %d, want %d", tt.args, code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			checkOneLineError(t, stderr, tt.want)
		})
	}
}

// TestRun_NoArguments checks that xdsctl without arguments prints the
// usage on stderr and exits 2.
func TestRun_NoArguments(t *testing.T) {
	code, stdout, stderr := runSync(testContext(t))
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "xdsctl watch") {
		t.Fatalf("xdsctl = %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, stdout, stderr)
	}
}

// TestRun_BootstrapErrors checks that an unreadable, invalid or absent
// bootstrap is a runtime failure: one line on stderr, exit 1.
func TestRun_BootstrapErrors(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"xds_servers": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	noServers := filepath.Join(dir, "no-servers.json")
	if err := os.WriteFile(noServers, []byte(`{"xds_servers": [], "node": {"id": "n"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GRPC_XDS_BOOTSTRAP", "")
	t.Setenv("GRPC_XDS_BOOTSTRAP_CONFIG", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"status", "--bootstrap", filepath.Join(dir, "missing.json"), "cluster/c"}, "reading the bootstrap"},
		{"invalid JSON", []string{"watch", "--bootstrap", invalid, "cluster/c"}, "bootstrap " + invalid},
		{"no servers", []string{"status", "--bootstrap", noServers, "cluster/c"}, "bootstrap " + noServers},
		{"no bootstrap anywhere", []string{"status", "cluster/c"}, "no --bootstrap or --server given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runSync(ctx, tt.args...)
			if code != exitFailure {
				t.Errorf("xdsctl %v = %d, want %d", tt.args, code, exitFailure)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			checkOneLineError(t, stderr, tt.want)
		})
	}
}

// TestParseFlags checks that flags may follow positional arguments and
// that "--" ends the flags.
func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos []string
		wantOut string
	}{
		{[]string{"--output", "json", "a/b", "c/d"}, []string{"a/b", "c/d"}, "json"},
		{[]string{"a/b", "--output=json", "c/d"}, []string{"a/b", "c/d"}, "json"},
		{[]string{"a/b", "--", "--output=json"}, []string{"a/b", "--output=json"}, "text"},
		{nil, nil, "text"},
	}
	for _, tt := range tests {
		fs := newFlagSet("test")
		out := outputText
		fs.Var(&out, "output", "")
		pos, err := parseFlags(fs, tt.args)
		if err != nil {
			t.Errorf("parseFlags(%q) = %v", tt.args, err)
			continue
		}
		if !slices.Equal(pos, tt.wantPos) || string(out) != tt.wantOut {
			t.Errorf("parseFlags(%q) = %q, --output %q; want %q, %q", tt.args, pos, out, tt.wantPos, tt.wantOut)
		}
	}
}

// TestLoadBootstrap_FromEnv checks that without --bootstrap or --server,
// a bootstrap the environment names but that cannot be used is reported
// with the variable, the file and the real error, and that no bootstrap
// at all names both variables.
func TestLoadBootstrap_FromEnv(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"xds_servers": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.json")
	if err := os.WriteFile(large, bytes.Repeat([]byte(" "), bootstrap.MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		file, config string // GRPC_XDS_BOOTSTRAP, GRPC_XDS_BOOTSTRAP_CONFIG
		want         []string
	}{
		{name: "missing file", file: missing, want: []string{"GRPC_XDS_BOOTSTRAP", `"` + missing + `"`, "no such file or directory"}},
		{name: "invalid file", file: invalid, want: []string{"GRPC_XDS_BOOTSTRAP", `"` + invalid + `"`, "xds_servers: empty"}},
		{name: "too large file", file: large, want: []string{"GRPC_XDS_BOOTSTRAP", `"` + large + `"`, "larger than the limit of 1048576 bytes"}},
		{name: "invalid config", config: `{"xds_servers": 1}`, want: []string{"GRPC_XDS_BOOTSTRAP_CONFIG", "xds_servers: want an array, got number"}},
		{name: "neither", want: []string{"no --bootstrap or --server given, and neither GRPC_XDS_BOOTSTRAP nor GRPC_XDS_BOOTSTRAP_CONFIG is set"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(bootstrap.EnvBootstrapFile, tc.file)
			t.Setenv(bootstrap.EnvBootstrapConfig, tc.config)
			code, _, stderr := runSync(testContext(t), "status", "listener/svc")
			if code != exitFailure {
				t.Errorf("status = %d, want %d", code, exitFailure)
			}
			for _, w := range tc.want {
				checkOneLineError(t, stderr, w)
			}
			if strings.Contains(stderr, "has no bootstrap") {
				t.Errorf("stderr = %q: it says the environment has no bootstrap", stderr)
			}
		})
	}
}
