// SPDX-License-Identifier: Apache-2.0

package xdscreds_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdscreds"
)

var _ xdscreds.Client = (*client.Client)(nil)

// TestNewClientProviderStore_ClientLogger checks that the store made from
// a client holds the certificate_providers of the client's bootstrap and
// logs with the client's logger by default (as depmgr, xdsresolver and
// server do), and with the one WithStoreLogger gives otherwise.
func TestNewClientProviderStore_ClientLogger(t *testing.T) {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "localhost:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "n"},
		"certificate_providers": {"bad": {"plugin_name": "no-such-plugin"}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	var clientLog, storeLog testutil.LogBuffer
	c, err := client.New(cfg, client.WithLogger(slog.New(slog.NewTextHandler(&clientLog, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	s := xdscreds.NewClientProviderStore(c)
	if got := s.InstanceNames(); len(got) != 1 || got[0] != "bad" {
		t.Fatalf("InstanceNames() = %q, want [bad], the client's bootstrap's", got)
	}
	if got := clientLog.String(); !strings.Contains(got, "certificate provider instance unusable") || !strings.Contains(got, "bad") {
		t.Errorf("the client's log = %q, want the unusable instance bad", got)
	}

	before := clientLog.String()
	xdscreds.NewClientProviderStore(c, xdscreds.WithStoreLogger(slog.New(slog.NewTextHandler(&storeLog, nil))))
	if !strings.Contains(storeLog.String(), "certificate provider instance unusable") {
		t.Errorf("WithStoreLogger's log = %q, want the unusable instance", storeLog.String())
	}
	if clientLog.String() != before {
		t.Errorf("the client's log grew with WithStoreLogger: %q", strings.TrimPrefix(clientLog.String(), before))
	}
}
