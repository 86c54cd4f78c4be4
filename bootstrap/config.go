// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Config is a parsed and validated gRPC xDS bootstrap file (gRFC A27, A47,
// A65). It is a plain data struct: Parse and FromEnv return a fresh value
// the caller owns; once it is given to client.New it must not be modified.
type Config struct {
	// Servers are the top-level management servers (`xds_servers`), in
	// priority order; at least one. Resources with old-style (non-xdstp)
	// names, and xdstp names of authorities that list no servers, are
	// fetched from Servers[0].
	Servers []*ServerConfig

	// Node is the `node` object. The client adds the user agent and client
	// features when it builds the node proto.
	Node Node

	// Authorities maps an authority name (`authorities` keys; "" is a valid
	// key) to its configuration (gRFC A47). Nil when the file has none
	// (absent, null or {}). Entries are never nil.
	Authorities map[string]*Authority

	// ClientDefaultListenerResourceNameTemplate expands an `xds:///name`
	// target into a Listener resource name (`%s` is replaced by the name).
	// Default "%s".
	ClientDefaultListenerResourceNameTemplate string

	// ServerListenerResourceNameTemplate is the template for server-side
	// Listener names (`server_listener_resource_name_template`), kept as
	// written; "" when absent.
	ServerListenerResourceNameTemplate string

	// CertificateProviders maps an instance name to its plugin name and
	// raw JSON config (`certificate_providers`, gRFC A29), as written. The
	// client checks that the instances a Cluster names are here;
	// package xdscreds runs them (xdscreds.NewProviderStore). Nil
	// when the file has none.
	CertificateProviders map[string]CertificateProvider
}

// CertificateProviderNames returns the instance names of
// CertificateProviders, sorted; nil when there are none.
func (c *Config) CertificateProviderNames() []string {
	if len(c.CertificateProviders) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(c.CertificateProviders))
}

// ServerConfig is one entry of `xds_servers`, top-level or of an authority.
// See Key for when two entries are the same server.
type ServerConfig struct {
	// ServerURI is the gRPC target of the management server (`server_uri`),
	// for example "xds.example.com:443" or "dns:///xds.example.com:443".
	ServerURI string

	// ChannelCreds is the first supported entry of `channel_creds`
	// entries of unsupported types are skipped. It is the zero
	// ChannelCreds (Type "") when a server that is not reached over gRPC
	// (server_uri file:///PATH, http:// or https://) has no
	// `channel_creds`.
	ChannelCreds ChannelCreds

	// CallCreds are the `call_creds` entries of supported types, in file
	// order (gRFC A97, R-3.2): all of them apply to the server's channel.
	// Nil when there are none.
	CallCreds []CallCreds

	// ServerFeatures are the `server_features` strings as written, in file
	// order (duplicates included); nil when absent or empty. Unknown
	// strings are kept and ignored; the known ones are the
	// Feature… constants. Use HasFeature to test for one.
	ServerFeatures []string
}

// ChannelCreds is the selected channel credentials of a server.
type ChannelCreds struct {
	// Type is CredsInsecure ("insecure"), CredsTLS ("tls"),
	// CredsGoogleDefault ("google_default") or a type declared with
	// WithChannelCredsTypes.
	Type string
	// Config is the raw JSON `config` of the selected entry, compacted
	// (no insignificant white space); nil when absent or null.
	Config json.RawMessage
	// TLS is the parsed config when Type is "tls"; nil otherwise.
	TLS *TLSConfig
}

// CallCreds is one `call_creds` entry of a supported type (gRFC A97).
type CallCreds struct {
	// Type is CallCredsJWTTokenFile ("jwt_token_file") or a type declared
	// with WithCallCredsTypes.
	Type string
	// Config is the raw JSON `config`, compacted; nil when absent or null.
	Config json.RawMessage
	// JWTTokenFile is the config's `jwt_token_file` when Type is
	// "jwt_token_file" (never empty then); "" otherwise.
	JWTTokenFile string
}

// TLSConfig is the `config` of "tls" channel credentials (gRFC A65).
type TLSConfig struct {
	// CACertificateFile is a PEM file of trusted roots; "" means the system
	// roots.
	CACertificateFile string
	// CertificateFile and PrivateKeyFile are PEM files of the client
	// certificate chain and key for mTLS; both set or both empty.
	CertificateFile string
	PrivateKeyFile  string
	// RefreshInterval is how often the files are re-read; always greater
	// than zero after Parse. Default 10m (DefaultRefreshInterval)
	// (`refresh_interval`, a protobuf JSON duration such as "600s").
	RefreshInterval time.Duration
}

// Node is the bootstrap `node` object. Only these fields are read
// from the file; Proto adds the client-controlled ones.
type Node struct {
	// ID is `node.id`, the node ID management servers know the client by.
	ID string
	// Cluster is `node.cluster`.
	Cluster string
	// Locality is `node.locality`.
	Locality Locality
	// Metadata is the `metadata` JSON object, decoded with encoding/json
	// (numbers are float64; nil when absent or null, empty for {}). It
	// becomes the node proto's metadata Struct.
	Metadata map[string]any
}

// Locality is the node's locality (`region`, `zone`, `sub_zone`); all ""
// when absent.
type Locality struct {
	Region, Zone, SubZone string
}

// Authority is one entry of `authorities` (gRFC A47).
type Authority struct {
	// ClientListenerResourceNameTemplate is the listener name template for
	// `xds://<authority>/name` targets; it starts with
	// "xdstp://<authority>". Default
	// "xdstp://<authority>/envoy.config.listener.v3.Listener/%s".
	ClientListenerResourceNameTemplate string
	// Servers are the authority's own `xds_servers`; nil (absent, null or
	// empty in the file) means the top-level Config.Servers.
	Servers []*ServerConfig
}

// CertificateProvider is one `certificate_providers` entry, kept as
// written.
type CertificateProvider struct {
	// PluginName is `plugin_name`; "" when absent.
	PluginName string
	// Config is the raw `config`, compacted; nil when absent or null.
	Config json.RawMessage
}
