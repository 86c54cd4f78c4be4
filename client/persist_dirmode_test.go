// SPDX-License-Identifier: Apache-2.0

//go:build unix

package client_test

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
)

// TestDirStore_WritableByOthers checks that DirStore's Load warns, naming
// the directory, when the directory is writable by its group or by
// everyone: whoever can write there can plant resources that the client
// would serve. A directory only its owner writes gets no warning.
func TestDirStore_WritableByOthers(t *testing.T) {
	for _, tc := range []struct {
		mode     os.FileMode
		wantWarn bool
	}{
		{0o700, false},
		{0o755, false},
		{0o770, true},
		{0o707, true},
		{os.ModeSticky | 0o777, true}, // like /tmp
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			var logs testutil.LogBuffer
			s := client.DirStore(dir, client.WithDirStoreLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if _, err := s.Load(); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(), "writable by") && strings.Contains(logs.String(), dir)
			if warned != tc.wantWarn {
				t.Errorf("directory of mode %v: warned %v, want %v; logs:\n%s", tc.mode, warned, tc.wantWarn, logs.String())
			}
		})
	}
}

// TestPersistence_WarnsThroughClientLogger checks that WithPersistence's
// store logs through the client's logger (WithLogger): its warnings, such
// as a directory writable by others, are not lost.
func TestPersistence_WarnsThroughClientLogger(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var logs testutil.LogBuffer
	cfg, err := bootstrap.Parse([]byte(`{"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithPersistence(dir), client.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !strings.Contains(logs.String(), "writable by") {
		t.Fatalf("logs %q do not warn about the directory", logs.String())
	}
}
