// SPDX-License-Identifier: Apache-2.0

package client

import (
	"testing"
	"unsafe"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// aliases reports whether s shares memory with b.
func aliases(s string, b []byte) bool {
	if len(s) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p < lo+uintptr(len(b)) && lo < p+uintptr(len(s))
}

// TestLookup_KeepsNoViewOfTheResponse checks that looking up the resources
// of a response, which the pipeline does with views of the response's
// bytes (pipeline.go, view), keeps none of them: an xdstp name of a
// bootstrap authority that no watch named yet, received through the
// wildcard of the top-level servers (which serve that authority too),
// must not leave a key in the client's maps that shares the response's
// memory: it would pin the bytes for the client's life and change if they
// did. The bytes are overwritten after the lookup, as a reused buffer
// would be, and the authority must still be found by its name. On
// c70070a, Client.xdstp's key was a substring of the view.
func TestLookup_KeepsNoViewOfTheResponse(t *testing.T) {
	sc := &bootstrap.ServerConfig{ServerURI: "s", ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}}
	cfg := &bootstrap.Config{Servers: []*bootstrap.ServerConfig{sc}, Authorities: map[string]*bootstrap.Authority{"auth": {}}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const name = "xdstp://auth/envoy.config.cluster.v3.Cluster/c1"

	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.authorityOfLocked(cfg.Servers)
	ch, err := c.channelLocked(sc, sc.Key())
	if err != nil {
		t.Fatal(err)
	}
	// Attached by hand, without starting a stream: a WatchAll of the
	// top-level servers.
	a.chans, ch.auths = append(a.chans, ch), append(ch.auths, a)
	tc := a.typeLocked(resources.ClusterType)
	tc.wildcard = []*watchEntry{newWatchEntry[*resources.Cluster](watcher.Funcs[*resources.Cluster]{})}

	buf := []byte(name) // the response's bytes
	u := &update{typ: resources.ClusterType, items: []item{{nameBytes: buf}}}
	ch.lookupLocked(u)
	if got := u.items[0].name; got != name || aliases(got, buf) {
		t.Errorf("item name %q (sharing the response's memory: %v), want an owned %q", got, aliases(got, buf), name)
	}
	for k := range c.xdstp {
		if aliases(k, buf) {
			t.Errorf("Client.xdstp key %q shares the response's memory", k)
		}
	}
	for i := range buf {
		buf[i] = 'x'
	}
	if got := c.knownAuthorityLocked(name); got != a {
		t.Errorf("authority of %q after the response's bytes were reused: %p, want %p (the top-level servers')", name, got, a)
	}
}
