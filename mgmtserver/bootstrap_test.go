// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"slices"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
)

// TestBootstrap_Parses checks that Bootstrap's output parses and points at
// the server, with the node ID, server features and authorities asked for.
func TestBootstrap_Parses(t *testing.T) {
	for _, inMemory := range []bool{false, true} {
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: inMemory})

		cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
		if err != nil {
			t.Fatalf("bootstrap.Parse() = %v", err)
		}
		if len(cfg.Servers) != 1 || cfg.Servers[0].ServerURI != ms.Address() || cfg.Servers[0].ChannelCreds.Type != "insecure" {
			t.Fatalf("servers = %+v, want one insecure server at %s", cfg.Servers, ms.Address())
		}
		if cfg.Node.ID != "test-node" || cfg.Authorities != nil {
			t.Fatalf("node = %+v, authorities %v; want test-node and none", cfg.Node, cfg.Authorities)
		}

		features := []string{bootstrap.FeatureIgnoreResourceDeletion}
		cfg, err = bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{
			NodeID:         "n",
			ServerFeatures: features,
			Authorities:    map[string]string{"a1": "", "a2": "other:1"},
		}))
		if err != nil {
			t.Fatalf("bootstrap.Parse() = %v", err)
		}
		if cfg.Node.ID != "n" || !slices.Equal(cfg.Servers[0].ServerFeatures, features) {
			t.Fatalf("node %q, features %v; want n and %v", cfg.Node.ID, cfg.Servers[0].ServerFeatures, features)
		}
		a1, a2 := cfg.Authorities["a1"], cfg.Authorities["a2"]
		if a1 == nil || a2 == nil || len(a1.Servers) != 1 || len(a2.Servers) != 1 {
			t.Fatalf("authorities = %+v, want a1 and a2 with one server each", cfg.Authorities)
		}
		if a1.Servers[0].ServerURI != ms.Address() || a1.Servers[0].Key() != cfg.Servers[0].Key() {
			t.Errorf("a1 server = %+v, want the top-level server (same key)", a1.Servers[0])
		}
		if a2.Servers[0].ServerURI != "other:1" || !slices.Equal(a2.Servers[0].ServerFeatures, features) {
			t.Errorf("a2 server = %+v, want other:1 with the features", a2.Servers[0])
		}
	}
}
