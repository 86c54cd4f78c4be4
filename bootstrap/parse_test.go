// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// insecureServer is the server most testdata files list.
func insecureServer(uri string, features ...string) *ServerConfig {
	return &ServerConfig{ServerURI: uri, ChannelCreds: ChannelCreds{Type: CredsInsecure}, ServerFeatures: features}
}

// withServers returns the Config a file with only these `xds_servers` parses
// to: the defaults filled in.
func withServers(servers ...*ServerConfig) *Config {
	return &Config{Servers: servers, ClientDefaultListenerResourceNameTemplate: "%s"}
}

// readTestdata returns the content of testdata/<dir>/<name>.json.
func readTestdata(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", dir, name+".json"))
	if err != nil {
		t.Fatalf("reading testdata: %v", err)
	}
	return data
}

// TestParse_Valid parses every file of testdata/valid and compares the
// Config with the expected one.
func TestParse_Valid(t *testing.T) {
	defaultServer := insecureServer("xds.example.com:443")
	tests := []struct {
		name string // also the file testdata/valid/<name>.json
		want *Config
	}{
		{
			// only xds_servers is required; the default client
			// listener template is "%s".
			name: "insecure",
			want: withServers(defaultServer),
		},
		{
			// servers keep their file order.
			name: "multiple_servers",
			want: withServers(
				insecureServer("primary.example.com:443"),
				&ServerConfig{ServerURI: "fallback.example.com:443", ChannelCreds: ChannelCreds{
					Type: CredsTLS, TLS: &TLSConfig{RefreshInterval: 10 * time.Minute},
				}},
			),
		},
		{
			// A65: all TLS fields, refresh_interval parsed.
			name: "tls_full",
			want: withServers(&ServerConfig{ServerURI: "xds.example.com:443", ChannelCreds: ChannelCreds{
				Type:   CredsTLS,
				Config: json.RawMessage(`{"ca_certificate_file":"/etc/xds/ca.pem","certificate_file":"/etc/xds/cert.pem","private_key_file":"/etc/xds/key.pem","refresh_interval":"300s"}`),
				TLS: &TLSConfig{
					CACertificateFile: "/etc/xds/ca.pem",
					CertificateFile:   "/etc/xds/cert.pem",
					PrivateKeyFile:    "/etc/xds/key.pem",
					RefreshInterval:   300 * time.Second,
				},
			}}),
		},
		{
			// A65: no config means system roots, no client
			// certificate and refresh_interval 10 min.
			name: "tls_no_config",
			want: withServers(&ServerConfig{ServerURI: "xds.example.com:443", ChannelCreds: ChannelCreds{
				Type: CredsTLS, TLS: &TLSConfig{RefreshInterval: 10 * time.Minute},
			}}),
		},
		{
			// a CA alone is valid; refresh_interval is a protobuf
			// JSON duration, fractions included.
			name: "tls_ca_only_fractional_refresh",
			want: withServers(&ServerConfig{ServerURI: "xds.example.com:443", ChannelCreds: ChannelCreds{
				Type:   CredsTLS,
				Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem","refresh_interval":"90.5s"}`),
				TLS:    &TLSConfig{CACertificateFile: "/ca.pem", RefreshInterval: 90500 * time.Millisecond},
			}}),
		},
		{
			// first supported type wins; unsupported entries before
			// it and any entry after it are ignored.
			name: "first_supported_wins",
			want: withServers(&ServerConfig{ServerURI: "xds.example.com:443", ChannelCreds: ChannelCreds{
				Type:   CredsTLS,
				Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem"}`),
				TLS:    &TLSConfig{CACertificateFile: "/ca.pem", RefreshInterval: 10 * time.Minute},
			}}),
		},
		{
			// entries after the selected one are not validated
			// (the tls entry here has half a key pair and a bad interval).
			name: "first_supported_insecure_then_bad_tls",
			want: withServers(&ServerConfig{ServerURI: "xds.example.com:443", ChannelCreds: ChannelCreds{
				Type: CredsInsecure, Config: json.RawMessage(`{"ignored":true}`),
			}}),
		},
		{
			// server features are kept as written, in file
			// order, unknown ones and duplicates included.
			name: "server_features",
			want: withServers(insecureServer("xds.example.com:443",
				"xds_v3", "some_future_feature", "ignore_resource_deletion", "trusted_xds_server", "ignore_resource_deletion")),
		},
		{
			// A27: id, cluster, locality and metadata are read;
			// user_agent_*, client_features and build_version are ignored
			// even when their JSON types are wrong.
			name: "node",
			want: &Config{
				Servers: []*ServerConfig{defaultServer},
				Node: Node{
					ID:       "projects/42/nodes/n1",
					Cluster:  "frontend",
					Locality: Locality{Region: "eu-west1", Zone: "eu-west1-b", SubZone: "rack7"},
					Metadata: map[string]any{
						"network": "default",
						"count":   3.0,
						"on":      true,
						"nested":  map[string]any{"list": []any{"a", 1.5, nil}},
					},
				},
				ClientDefaultListenerResourceNameTemplate: "%s",
			},
		},
		{
			// A47: templates default to
			// xdstp://<escaped authority>/envoy.config.listener.v3.Listener/%s;
			// an authority with empty, null or absent xds_servers gets nil
			// Servers; a null authority is an empty one.
			name: "authorities",
			want: &Config{
				Servers: []*ServerConfig{defaultServer},
				Authorities: map[string]*Authority{
					"": {ClientListenerResourceNameTemplate: "xdstp:///envoy.config.listener.v3.Listener/%s"},
					"xds.example.com": {
						ClientListenerResourceNameTemplate: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/client/%s",
					},
					"a b":            {ClientListenerResourceNameTemplate: "xdstp://a%20b/envoy.config.listener.v3.Listener/%s"},
					"nulls":          {ClientListenerResourceNameTemplate: "xdstp://nulls/envoy.config.listener.v3.Listener/%s"},
					"null-authority": {ClientListenerResourceNameTemplate: "xdstp://null-authority/envoy.config.listener.v3.Listener/%s"},
					"own.example.net": {
						ClientListenerResourceNameTemplate: "xdstp://own.example.net/envoy.config.listener.v3.Listener/%s?x=y",
						Servers:                            []*ServerConfig{insecureServer("own.example.net:443", FeatureIgnoreResourceDeletion)},
					},
				},
				ClientDefaultListenerResourceNameTemplate: "%s",
			},
		},
		{
			// An empty authorities object is the same as none.
			name: "authorities_empty",
			want: withServers(defaultServer),
		},
		{
			// the templates and certificate_providers are kept as
			// written; unknown plugins are kept too.
			name: "templates_and_providers",
			want: &Config{
				Servers: []*ServerConfig{defaultServer},
				ClientDefaultListenerResourceNameTemplate: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/%s",
				ServerListenerResourceNameTemplate:        "grpc/server?xds.resource.listening_address=%s",
				CertificateProviders: map[string]CertificateProvider{
					"default": {PluginName: "file_watcher", Config: json.RawMessage(`{"certificate_file":"/c.pem","refresh_interval":"60s"}`)},
					"bare":    {PluginName: "unknown_plugin"},
				},
			},
		},
		{
			// A27: unknown fields are ignored at every level;
			// call_creds of unknown types are ignored.
			name: "unknown_fields",
			want: &Config{
				Servers: []*ServerConfig{{ServerURI: "xds.example.com:443", ChannelCreds: ChannelCreds{
					Type:   CredsTLS,
					Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem","spiffe_trust_bundle_map_file":"/x","future":1}`),
					TLS:    &TLSConfig{CACertificateFile: "/ca.pem", RefreshInterval: 10 * time.Minute},
				}, CallCreds: []CallCreds{{
					Type: CallCredsJWTTokenFile, Config: json.RawMessage(`{"jwt_token_file":"/tok"}`), JWTTokenFile: "/tok",
				}}}},
				Node: Node{ID: "n", Locality: Locality{Region: "r"}},
				Authorities: map[string]*Authority{
					"a": {ClientListenerResourceNameTemplate: "xdstp://a/envoy.config.listener.v3.Listener/%s"},
				},
				ClientDefaultListenerResourceNameTemplate: "%s",
			},
		},
		{
			// A Traffic Director style bootstrap: google_default creds
			// xds_v3 and ignore_resource_deletion.
			name: "traffic_director",
			want: &Config{
				Servers: []*ServerConfig{{
					ServerURI:      "trafficdirector.googleapis.com:443",
					ChannelCreds:   ChannelCreds{Type: CredsGoogleDefault},
					ServerFeatures: []string{"xds_v3", FeatureIgnoreResourceDeletion},
				}},
				Node: Node{
					ID:       "projects/123456789012/networks/default/nodes/5ab3c1c4-0f2e-4f1e-9b3d-2a8c1e0b7f11",
					Cluster:  "cluster",
					Locality: Locality{Zone: "us-central1-a"},
					Metadata: map[string]any{
						"INSTANCE_IP":                        "10.128.0.2",
						"TRAFFICDIRECTOR_GCP_PROJECT_NUMBER": "123456789012",
						"TRAFFICDIRECTOR_NETWORK_NAME":       "default",
					},
				},
				ClientDefaultListenerResourceNameTemplate: "%s",
				ServerListenerResourceNameTemplate:        "grpc/server?xds.resource.listening_address=%s",
			},
		},
		{
			// gRFC A97, R-3.2: every call_creds entry of a supported type
			// is kept, in order; unknown types are skipped.
			name: "call_creds",
			want: withServers(&ServerConfig{
				ServerURI:    "s:1",
				ChannelCreds: ChannelCreds{Type: CredsTLS, TLS: &TLSConfig{RefreshInterval: 10 * time.Minute}},
				CallCreds: []CallCreds{
					{Type: CallCredsJWTTokenFile, Config: json.RawMessage(`{"jwt_token_file":"/a.jwt","future":true}`), JWTTokenFile: "/a.jwt"},
					{Type: CallCredsJWTTokenFile, Config: json.RawMessage(`{"jwt_token_file":"/b.jwt"}`), JWTTokenFile: "/b.jwt"},
				},
			}),
		},
		{
			// JSON null counts as an absent field everywhere.
			name: "nulls",
			want: withServers(insecureServer("s:1")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(readTestdata(t, "valid", tt.name))
			if err != nil {
				t.Fatalf("Parse() error = %v, want nil", err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Fatalf("Parse() (-got, +want):\n%s", diff)
			}
		})
	}
	checkAllFilesCovered(t, "valid", func(name string) bool {
		for _, tt := range tests {
			if tt.name == name {
				return true
			}
		}
		return false
	})
}

// TestParse_Invalid parses every file of testdata/invalid and checks the
// error names the field.
func TestParse_Invalid(t *testing.T) {
	tests := []struct {
		name string // also the file testdata/invalid/<name>.json
		// wantErr is the exact error text, or its prefix when
		// wantErrPrefix is set (for underlying errors whose text is not
		// stable, such as protobuf's).
		wantErr       string
		wantErrPrefix bool
		wantField     string // ParseError.Field
	}{
		// malformed JSON fails in normalisation.
		{
			name:    "empty_file",
			wantErr: "bootstrap: error normalizing JSON: unexpected end of JSON input",
		},
		{
			name:    "malformed",
			wantErr: "bootstrap: error normalizing JSON: invalid character '}' looking for beginning of object key string",
		},
		{name: "top_level_array", wantErr: "bootstrap: want an object at the top level, got array"},
		{name: "top_level_null", wantErr: "bootstrap: want an object at the top level, got null"},
		{name: "top_level_string", wantErr: "bootstrap: want an object at the top level, got string"},
		// xds_servers is required and lists at least one server.
		{name: "no_servers", wantErr: "bootstrap: xds_servers: empty", wantField: "xds_servers"},
		{name: "servers_empty_list", wantErr: "bootstrap: xds_servers: empty", wantField: "xds_servers"},
		{name: "servers_null", wantErr: "bootstrap: xds_servers: empty", wantField: "xds_servers"},
		{name: "servers_not_list", wantErr: "bootstrap: xds_servers: want an array, got object", wantField: "xds_servers"},
		{name: "server_not_object", wantErr: "bootstrap: xds_servers[0]: want an object, got string", wantField: "xds_servers[0]"},
		// server_uri must be a non-empty string.
		{name: "server_uri_missing", wantErr: "bootstrap: xds_servers[0].server_uri: empty", wantField: "xds_servers[0].server_uri"},
		{name: "server_uri_empty", wantErr: "bootstrap: xds_servers[0].server_uri: empty", wantField: "xds_servers[0].server_uri"},
		{name: "server_uri_number", wantErr: "bootstrap: xds_servers[0].server_uri: want a string, got number", wantField: "xds_servers[0].server_uri"},
		// no supported channel creds type is an error, listing
		// what was seen.
		{
			name:      "second_server_no_supported_creds",
			wantErr:   `bootstrap: xds_servers[1].channel_creds: no supported type (saw "alts", "foo")`,
			wantField: "xds_servers[1].channel_creds",
		},
		{name: "channel_creds_missing", wantErr: "bootstrap: xds_servers[0].channel_creds: empty", wantField: "xds_servers[0].channel_creds"},
		{name: "channel_creds_empty", wantErr: "bootstrap: xds_servers[0].channel_creds: empty", wantField: "xds_servers[0].channel_creds"},
		{name: "channel_creds_not_list", wantErr: "bootstrap: xds_servers[0].channel_creds: want an array, got object", wantField: "xds_servers[0].channel_creds"},
		{name: "channel_creds_entry_not_object", wantErr: "bootstrap: xds_servers[0].channel_creds[0]: want an object, got string", wantField: "xds_servers[0].channel_creds[0]"},
		{name: "channel_creds_type_number", wantErr: "bootstrap: xds_servers[0].channel_creds[0].type: want a string, got number", wantField: "xds_servers[0].channel_creds[0].type"},
		{name: "channel_creds_type_missing", wantErr: `bootstrap: xds_servers[0].channel_creds: no supported type (saw "")`, wantField: "xds_servers[0].channel_creds"},
		// A65: certificate_file and private_key_file come together.
		{
			name:      "tls_cert_without_key",
			wantErr:   "bootstrap: xds_servers[0].channel_creds[0].config.private_key_file: must be set when certificate_file is set",
			wantField: "xds_servers[0].channel_creds[0].config.private_key_file",
		},
		{
			name:      "tls_key_without_cert",
			wantErr:   "bootstrap: xds_servers[0].channel_creds[0].config.certificate_file: must be set when private_key_file is set",
			wantField: "xds_servers[0].channel_creds[0].config.certificate_file",
		},
		{name: "tls_config_not_object", wantErr: "bootstrap: xds_servers[0].channel_creds[0].config: want an object, got string", wantField: "xds_servers[0].channel_creds[0].config"},
		{name: "tls_ca_number", wantErr: "bootstrap: xds_servers[0].channel_creds[0].config.ca_certificate_file: want a string, got number", wantField: "xds_servers[0].channel_creds[0].config.ca_certificate_file"},
		// A65: refresh_interval is a protobuf JSON duration.
		{
			name:          "tls_refresh_invalid",
			wantErr:       `bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: invalid duration "ten": `,
			wantErrPrefix: true,
			wantField:     "xds_servers[0].channel_creds[0].config.refresh_interval",
		},
		{
			name:          "tls_refresh_go_syntax",
			wantErr:       `bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: invalid duration "10m": `,
			wantErrPrefix: true,
			wantField:     "xds_servers[0].channel_creds[0].config.refresh_interval",
		},
		{
			name:      "tls_refresh_number",
			wantErr:   `bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: want a duration string such as "600s", got number`,
			wantField: "xds_servers[0].channel_creds[0].config.refresh_interval",
		},
		{
			name:      "tls_refresh_zero",
			wantErr:   `bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: must be greater than zero, got "0s"`,
			wantField: "xds_servers[0].channel_creds[0].config.refresh_interval",
		},
		{
			name:      "tls_refresh_negative",
			wantErr:   `bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: must be greater than zero, got "-5s"`,
			wantField: "xds_servers[0].channel_creds[0].config.refresh_interval",
		},
		// server_features is a list of strings.
		{name: "server_features_not_list", wantErr: "bootstrap: xds_servers[0].server_features: want an array, got string", wantField: "xds_servers[0].server_features"},
		{name: "server_features_number", wantErr: "bootstrap: xds_servers[0].server_features[1]: want a string, got number", wantField: "xds_servers[0].server_features[1]"},
		{name: "server_features_null_element", wantErr: "bootstrap: xds_servers[0].server_features[1]: want a string, got null", wantField: "xds_servers[0].server_features[1]"},
		// the node fields that are read must have the right types.
		{name: "node_not_object", wantErr: "bootstrap: node: want an object, got string", wantField: "node"},
		{name: "node_id_number", wantErr: "bootstrap: node.id: want a string, got number", wantField: "node.id"},
		{name: "node_cluster_object", wantErr: "bootstrap: node.cluster: want a string, got object", wantField: "node.cluster"},
		{name: "node_locality_not_object", wantErr: "bootstrap: node.locality: want an object, got string", wantField: "node.locality"},
		{name: "node_locality_zone_bool", wantErr: "bootstrap: node.locality.zone: want a string, got boolean", wantField: "node.locality.zone"},
		{name: "node_metadata_array", wantErr: "bootstrap: node.metadata: want an object, got array", wantField: "node.metadata"},
		// A47: authorities.
		{name: "authorities_not_object", wantErr: "bootstrap: authorities: want an object, got array", wantField: "authorities"},
		{name: "authority_not_object", wantErr: `bootstrap: authorities["a"]: want an object, got string`, wantField: `authorities["a"]`},
		{
			// the template must start with xdstp://<authority>.
			name:      "authority_bad_template_prefix",
			wantErr:   `bootstrap: authorities["a"].client_listener_resource_name_template: must start with "xdstp://a/"`,
			wantField: `authorities["a"].client_listener_resource_name_template`,
		},
		{
			// "xdstp://ab/" is another authority, not "a".
			name:      "authority_template_longer_authority",
			wantErr:   `bootstrap: authorities["a"].client_listener_resource_name_template: must start with "xdstp://a/"`,
			wantField: `authorities["a"].client_listener_resource_name_template`,
		},
		{
			// the authority in the prefix is url.PathEscape'd.
			name:      "authority_template_not_escaped",
			wantErr:   `bootstrap: authorities["a b"].client_listener_resource_name_template: must start with "xdstp://a%20b/"`,
			wantField: `authorities["a b"].client_listener_resource_name_template`,
		},
		{
			name:      "authority_template_old_style",
			wantErr:   `bootstrap: authorities["a"].client_listener_resource_name_template: must start with "xdstp://a/"`,
			wantField: `authorities["a"].client_listener_resource_name_template`,
		},
		{
			name:      "authority_template_number",
			wantErr:   `bootstrap: authorities["a"].client_listener_resource_name_template: want a string, got number`,
			wantField: `authorities["a"].client_listener_resource_name_template`,
		},
		{
			// applies to an authority's servers too.
			name:      "authority_server_invalid",
			wantErr:   `bootstrap: authorities["a"].xds_servers[0].server_uri: empty`,
			wantField: `authorities["a"].xds_servers[0].server_uri`,
		},
		{
			name:      "authority_servers_not_list",
			wantErr:   `bootstrap: authorities["a"].xds_servers: want an array, got object`,
			wantField: `authorities["a"].xds_servers`,
		},
		// the other top-level fields.
		{
			name:      "client_default_template_number",
			wantErr:   "bootstrap: client_default_listener_resource_name_template: want a string, got number",
			wantField: "client_default_listener_resource_name_template",
		},
		{
			name:      "server_listener_template_bool",
			wantErr:   "bootstrap: server_listener_resource_name_template: want a string, got boolean",
			wantField: "server_listener_resource_name_template",
		},
		// gRFC A97, R-3.2: a supported call_creds type with an invalid
		// config fails the bootstrap.
		{name: "call_creds_not_list", wantErr: "bootstrap: xds_servers[0].call_creds: want an array, got object", wantField: "xds_servers[0].call_creds"},
		{name: "call_creds_entry_not_object", wantErr: "bootstrap: xds_servers[0].call_creds[0]: want an object, got string", wantField: "xds_servers[0].call_creds[0]"},
		{name: "call_creds_type_number", wantErr: "bootstrap: xds_servers[0].call_creds[0].type: want a string, got number", wantField: "xds_servers[0].call_creds[0].type"},
		{name: "jwt_token_file_missing", wantErr: "bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: empty", wantField: "xds_servers[0].call_creds[0].config.jwt_token_file"},
		{name: "jwt_token_file_empty", wantErr: "bootstrap: xds_servers[0].call_creds[1].config.jwt_token_file: empty", wantField: "xds_servers[0].call_creds[1].config.jwt_token_file"},
		{name: "jwt_token_file_number", wantErr: "bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: want a string, got number", wantField: "xds_servers[0].call_creds[0].config.jwt_token_file"},
		{name: "jwt_config_not_object", wantErr: "bootstrap: xds_servers[0].call_creds[0].config: want an object, got string", wantField: "xds_servers[0].call_creds[0].config"},
		{name: "certificate_providers_not_object", wantErr: "bootstrap: certificate_providers: want an object, got array", wantField: "certificate_providers"},
		{name: "certificate_provider_not_object", wantErr: `bootstrap: certificate_providers["p"]: want an object, got string`, wantField: `certificate_providers["p"]`},
		{
			name:      "certificate_provider_plugin_name_number",
			wantErr:   `bootstrap: certificate_providers["p"].plugin_name: want a string, got number`,
			wantField: `certificate_providers["p"].plugin_name`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(readTestdata(t, "invalid", tt.name))
			if err == nil {
				t.Fatalf("Parse() = %+v, want error %q", got, tt.wantErr)
			}
			if got != nil {
				t.Errorf("Parse() returned a Config with error %v, want nil", err)
			}
			if msg := err.Error(); tt.wantErrPrefix && !strings.HasPrefix(msg, tt.wantErr) || !tt.wantErrPrefix && msg != tt.wantErr {
				t.Errorf("Parse() error:\n got %s\nwant %s (prefix: %t)", msg, tt.wantErr, tt.wantErrPrefix)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse() error %v (%T) is not a *ParseError", err, err)
			}
			if pe.Field != tt.wantField {
				t.Errorf("ParseError.Field = %q, want %q", pe.Field, tt.wantField)
			}
		})
	}
	checkAllFilesCovered(t, "invalid", func(name string) bool {
		for _, tt := range tests {
			if tt.name == name {
				return true
			}
		}
		return false
	})
}

// TestParse_ErrorsUnwrap checks that underlying errors stay reachable: a
// JSON syntax error through errors.As.
func TestParse_ErrorsUnwrap(t *testing.T) {
	_, err := Parse([]byte(`{"xds_servers": [`))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse() error %v does not wrap a *json.SyntaxError", err)
	}
}

// TestParse_ReturnsFreshConfig checks that two parses of one document share
// nothing: the caller owns the result.
func TestParse_ReturnsFreshConfig(t *testing.T) {
	data := readTestdata(t, "valid", "tls_full")
	a, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	a.Servers[0].ChannelCreds.Config[0] = 'X'
	a.Servers[0].ChannelCreds.TLS.CACertificateFile = "changed"
	if diff := cmp.Diff(b, mustParse(t, data)); diff != "" {
		t.Fatalf("modifying one Config changed another (-got, +want):\n%s", diff)
	}
}

func mustParse(t *testing.T, data []byte) *Config {
	t.Helper()
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	return c
}

// checkAllFilesCovered fails if testdata/<dir> holds a file no table entry
// names, so no test file is silently skipped.
func checkAllFilesCovered(t *testing.T, dir string, covered func(name string) bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files in testdata/%s", dir)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); !covered(name) {
			t.Errorf("testdata/%s/%s.json is not in the test table", dir, name)
		}
	}
}

// TestParse_ServerWithoutChannelCreds checks R-1.3's exception: a server
// that is not reached over gRPC (a file:// source, a REST-JSON server)
// may leave channel_creds out, null or empty, and gets the zero
// ChannelCreds; a gRPC server may not; and channel_creds that are given
// are read as for any server.
func TestParse_ServerWithoutChannelCreds(t *testing.T) {
	tests := []struct {
		uri, creds string // creds: the channel_creds member, "" for none
		wantErr    string
		wantType   string
	}{
		{uri: "file:///etc/xds/listeners.yaml"},
		{uri: "FILE:///etc/xds"},
		{uri: "file:///etc/xds", creds: `null`},
		{uri: "file:///etc/xds", creds: `[]`},
		{uri: "http://xds.example.com:8080"},
		{uri: "https://xds.example.com", creds: `[]`},
		{uri: "https://xds.example.com", creds: `[{"type": "insecure"}]`, wantType: CredsInsecure},
		{uri: "file:///etc/xds", creds: `[{"type": "alts"}]`, wantErr: `xds_servers[0].channel_creds: no supported type (saw "alts")`},
		{uri: "file:///etc/xds", creds: `{}`, wantErr: `xds_servers[0].channel_creds: want an array, got object`},
		{uri: "xds.example.com:443", wantErr: "xds_servers[0].channel_creds: empty"},
		{uri: "dns:///xds.example.com:443", creds: `[]`, wantErr: "xds_servers[0].channel_creds: empty"},
		{uri: "unix:///run/xds.sock", wantErr: "xds_servers[0].channel_creds: empty"},
	}
	for _, tt := range tests {
		server := `{"server_uri": "` + tt.uri + `"`
		if tt.creds != "" {
			server += `, "channel_creds": ` + tt.creds
		}
		doc := `{"xds_servers": [` + server + `}]}`
		cfg, err := Parse([]byte(doc))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%s) error = %v, want %q", doc, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%s) error = %v", doc, err)
			continue
		}
		if got := cfg.Servers[0].ChannelCreds; got.Type != tt.wantType {
			t.Errorf("Parse(%s): ChannelCreds = %+v, want type %q", doc, got, tt.wantType)
		}
	}
}
