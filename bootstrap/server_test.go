// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServerConfig_Key_SharedAcrossAuthorities checks that two authorities
// listing the same server, and the top level listing it, give equal keys
// (R-1.5, A47 "Server Channel Map").
func TestServerConfig_Key_SharedAcrossAuthorities(t *testing.T) {
	c := mustParse(t, []byte(`{
		"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}],
			"server_features": ["ignore_resource_deletion"]}],
		"authorities": {
			"a": {"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}],
				"server_features": ["ignore_resource_deletion"]}]},
			"b": {"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "foo"}, {"type": "insecure", "config": {"x": 1}}],
				"server_features": ["xds_v3", "ignore_resource_deletion", "unknown"]}]},
			"c": {"xds_servers": [{"server_uri": "other.example.com:443", "channel_creds": [{"type": "insecure"}],
				"server_features": ["ignore_resource_deletion"]}]}
		}
	}`))
	top := c.Servers[0]
	a, b, other := c.Authorities["a"].Servers[0], c.Authorities["b"].Servers[0], c.Authorities["c"].Servers[0]
	if top == a || a == b {
		t.Fatal("test setup: servers are the same pointer")
	}
	if a.Key() != b.Key() {
		t.Errorf("Key() of authorities a and b differ:\n a: %s\n b: %s", a.Key(), b.Key())
	}
	if top.Key() != a.Key() {
		t.Errorf("Key() of top-level and authority a differ:\n top: %s\n a: %s", top.Key(), a.Key())
	}
	if other.Key() == a.Key() {
		t.Errorf("Key() of servers with different URIs are equal: %s", a.Key())
	}
}

// TestServerConfig_Key checks what Key includes and what it leaves out
//
func TestServerConfig_Key(t *testing.T) {
	const base = `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}]}`
	tests := []struct {
		name      string
		give      string // a server entry, compared with base
		wantEqual bool
	}{
		{name: "same", give: base, wantEqual: true},
		{name: "different uri", give: `{"server_uri": "t:443", "channel_creds": [{"type": "insecure"}]}`},
		{name: "different creds type", give: `{"server_uri": "s:443", "channel_creds": [{"type": "tls"}]}`},
		{
			// Only the selected creds matter.
			name:      "unsupported creds before",
			give:      `{"server_uri": "s:443", "channel_creds": [{"type": "alts"}, {"type": "insecure"}, {"type": "tls"}]}`,
			wantEqual: true,
		},
		{
			// unknown features are dropped from the key.
			name:      "unknown features ignored",
			give:      `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["future_feature"]}`,
			wantEqual: true,
		},
		{
			// xds_v3 is accepted and ignored.
			name:      "xds_v3 ignored",
			give:      `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}`,
			wantEqual: true,
		},
		{
			name: "known feature",
			give: `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["ignore_resource_deletion"]}`,
		},
		{
			// trusted_xds_server changes nothing about the
			// connection.
			name:      "trusted_xds_server not part of the key",
			give:      `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server"]}`,
			wantEqual: true,
		},
		{name: "fail_on_data_errors", give: `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["fail_on_data_errors"]}`},
		{
			// the protocol variant is part of the identity, so a
			// SotW and a delta entry of one server get two streams.
			name: "delta_ads",
			give: `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["delta_ads"]}`,
		},
		{name: "resource_timer_is_transient_error", give: `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["resource_timer_is_transient_error"]}`},
	}
	baseKey := parseServerEntry(t, base).Key()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseServerEntry(t, tt.give).Key()
			if gotEqual := got == baseKey; gotEqual != tt.wantEqual {
				t.Fatalf("Key() equal to base = %t, want %t\n key: %s\nbase: %s", gotEqual, tt.wantEqual, got, baseKey)
			}
		})
	}
}

// TestServerConfig_Key_CanonicalCreds checks that Key compares creds
// configs by meaning, not by spelling, and that TLS files matter.
func TestServerConfig_Key_CanonicalCreds(t *testing.T) {
	tls := func(config string) string {
		return `{"server_uri": "s:443", "channel_creds": [{"type": "tls", "config": ` + config + `}]}`
	}
	tests := []struct {
		name      string
		a, b      string
		wantEqual bool
	}{
		{
			name:      "default refresh spelled out",
			a:         tls(`{}`),
			b:         tls(`{"refresh_interval": "600s"}`),
			wantEqual: true,
		},
		{
			name:      "field order and unknown fields",
			a:         tls(`{"ca_certificate_file": "/ca", "refresh_interval": "60s"}`),
			b:         tls(`{"refresh_interval": "60.000s", "unknown": 1, "ca_certificate_file": "/ca"}`),
			wantEqual: true,
		},
		{name: "different ca", a: tls(`{"ca_certificate_file": "/ca1"}`), b: tls(`{"ca_certificate_file": "/ca2"}`)},
		{name: "mtls vs not", a: tls(`{}`), b: tls(`{"certificate_file": "/c", "private_key_file": "/k"}`)},
		{name: "different refresh", a: tls(`{}`), b: tls(`{"refresh_interval": "60s"}`)},
		{
			// The config of insecure creds is ignored.
			name:      "insecure config ignored",
			a:         `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}]}`,
			b:         `{"server_uri": "s:443", "channel_creds": [{"type": "insecure", "config": {"x": 1}}]}`,
			wantEqual: true,
		},
		{
			name:      "feature order and duplicates",
			a:         `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server", "ignore_resource_deletion"]}`,
			b:         `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["ignore_resource_deletion", "x", "trusted_xds_server", "ignore_resource_deletion"]}`,
			wantEqual: true,
		},
		{
			// both spellings of the A88 feature are one feature.
			name:      "transient error alias",
			a:         `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["resource_timer_is_transient_error"]}`,
			b:         `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["resource_timer_is_transient_failure"]}`,
			wantEqual: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := parseServerEntry(t, tt.a).Key(), parseServerEntry(t, tt.b).Key()
			if gotEqual := a == b; gotEqual != tt.wantEqual {
				t.Fatalf("keys equal = %t, want %t\na: %s\nb: %s", gotEqual, tt.wantEqual, a, b)
			}
		})
	}
}

// TestServerConfig_Key_HandBuilt checks Key on ServerConfigs that did not
// come from Parse: other creds types with raw configs.
func TestServerConfig_Key_HandBuilt(t *testing.T) {
	a := &ServerConfig{ServerURI: "s", ChannelCreds: ChannelCreds{Type: "custom", Config: []byte(`{"a": 1}`)}}
	b := &ServerConfig{ServerURI: "s", ChannelCreds: ChannelCreds{Type: "custom", Config: []byte(`{"a":1}`)}}
	c := &ServerConfig{ServerURI: "s", ChannelCreds: ChannelCreds{Type: "custom", Config: []byte(`{"a":2}`)}}
	d := &ServerConfig{ServerURI: "s", ChannelCreds: ChannelCreds{Type: "custom", Config: []byte(`not json`)}}
	if a.Key() != b.Key() {
		t.Errorf("Key() differs for white space only:\n%s\n%s", a.Key(), b.Key())
	}
	if a.Key() == c.Key() || a.Key() == d.Key() {
		t.Errorf("Key() equal for different configs: %s", a.Key())
	}
}

// TestServerConfig_Features checks IgnoreResourceDeletion and HasFeature
//
func TestServerConfig_Features(t *testing.T) {
	sc := parseServerEntry(t, `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}],
		"server_features": ["ignore_resource_deletion", "resource_timer_is_transient_failure"]}`)
	if !sc.IgnoreResourceDeletion() {
		t.Error("IgnoreResourceDeletion() = false, want true")
	}
	if !sc.HasFeature(FeatureResourceTimerIsTransientError) {
		t.Error("HasFeature(resource_timer_is_transient_error) = false with the _failure spelling, want true")
	}
	if sc.DeltaADS() {
		t.Error("DeltaADS() = true without the feature, want false")
	}
	if !parseServerEntry(t, `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["delta_ads"]}`).DeltaADS() {
		t.Error("DeltaADS() = false with delta_ads, want true")
	}
	for _, f := range []string{"trusted_xds_server", FeatureFailOnDataErrors, "xds_v3", FeatureDeltaADS} {
		if sc.HasFeature(f) {
			t.Errorf("HasFeature(%q) = true, want false", f)
		}
	}
	if parseServerEntry(t, `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}]}`).IgnoreResourceDeletion() {
		t.Error("IgnoreResourceDeletion() = true without the feature, want false")
	}
	if sc.TrustedXDSServer() {
		t.Error("TrustedXDSServer() = true without the feature, want false")
	}
	if !parseServerEntry(t, `{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server"]}`).TrustedXDSServer() {
		t.Error("TrustedXDSServer() = false with trusted_xds_server, want true")
	}
}

// TestConfig_ServersForAuthority checks the authority → servers mapping of
//
func TestConfig_ServersForAuthority(t *testing.T) {
	c := mustParse(t, readTestdata(t, "valid", "authorities"))
	tests := []struct {
		name    string
		give    string
		want    []*ServerConfig
		wantErr string
	}{
		{name: "no servers uses top level", give: "xds.example.com", want: c.Servers},
		{name: "empty servers uses top level", give: "a b", want: c.Servers},
		{name: "empty authority", give: "", want: c.Servers},
		{name: "own servers", give: "own.example.net", want: c.Authorities["own.example.net"].Servers},
		{name: "unknown", give: "nowhere", wantErr: `bootstrap: authority "nowhere" is not in the bootstrap's authorities`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ServersForAuthority(tt.give)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ServersForAuthority(%q) error = %v, want %q", tt.give, err, tt.wantErr)
				}
				if !errors.Is(err, ErrUnknownAuthority) {
					t.Fatalf("ServersForAuthority(%q) error = %v, want errors.Is ErrUnknownAuthority", tt.give, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ServersForAuthority(%q) error = %v", tt.give, err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Fatalf("ServersForAuthority(%q) (-got, +want):\n%s", tt.give, diff)
			}
		})
	}

	// A config without authorities knows none, not even "".
	if _, err := withServers(insecureServer("s")).ServersForAuthority(""); !errors.Is(err, ErrUnknownAuthority) {
		t.Fatalf("ServersForAuthority(\"\") without authorities: error = %v, want ErrUnknownAuthority", err)
	}
}

// parseServerEntry parses a config with entry as its only server.
func parseServerEntry(t *testing.T, entry string) *ServerConfig {
	t.Helper()
	return mustParse(t, []byte(`{"xds_servers": [`+entry+`]}`)).Servers[0]
}
