// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParse_CredsTypeOptions checks the pluggable credentials types
// a type declared with WithChannelCredsTypes is
// supported (the first supported entry wins, its config kept as written),
// one declared with WithCallCredsTypes is kept; without the options both
// are skipped like any unknown type.
func TestParse_CredsTypeOptions(t *testing.T) {
	const doc = `{"xds_servers": [{"server_uri": "s:1",
		"channel_creds": [{"type": "my_channel", "config": {"k": "v"}}, {"type": "insecure"}],
		"call_creds": [{"type": "my_call", "config": {"a": 1}}, {"type": "other"}]}]}`
	for _, tc := range []struct {
		name string
		opts []ParseOption
		want *ServerConfig
	}{{
		name: "without options",
		want: &ServerConfig{ServerURI: "s:1", ChannelCreds: ChannelCreds{Type: CredsInsecure}},
	}, {
		name: "with options",
		opts: []ParseOption{WithChannelCredsTypes("my_channel"), WithCallCredsTypes("my_call"), WithChannelCredsTypes(CredsTLS)},
		want: &ServerConfig{
			ServerURI:    "s:1",
			ChannelCreds: ChannelCreds{Type: "my_channel", Config: json.RawMessage(`{"k":"v"}`)},
			CallCreds:    []CallCreds{{Type: "my_call", Config: json.RawMessage(`{"a":1}`)}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(doc), tc.opts...)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(c.Servers[0], tc.want); diff != "" {
				t.Fatalf("server (-got, +want):\n%s", diff)
			}
		})
	}
}

// TestServerConfig_Key_CallCreds checks that call credentials are part of
// the server's identity: they apply to the whole channel, so
// entries with different call credentials do not share one.
func TestServerConfig_Key_CallCreds(t *testing.T) {
	key := func(callCreds string) string {
		t.Helper()
		c, err := Parse([]byte(`{"xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "tls"}], "call_creds": ` + callCreds + `}]}`))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		return c.Servers[0].Key()
	}
	none := key(`[]`)
	a := key(`[{"type": "jwt_token_file", "config": {"jwt_token_file": "/a"}}]`)
	aSpaced := key(`[{"type": "jwt_token_file", "config": { "jwt_token_file" : "/a" }}, {"type": "unknown"}]`)
	b := key(`[{"type": "jwt_token_file", "config": {"jwt_token_file": "/b"}}]`)
	if a != aSpaced {
		t.Errorf("keys differ for the same call_creds: %s vs %s", a, aSpaced)
	}
	if a == none || a == b {
		t.Errorf("keys equal for different call_creds: none %s, a %s, b %s", none, a, b)
	}
}
