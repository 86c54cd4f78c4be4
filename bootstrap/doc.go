// SPDX-License-Identifier: Apache-2.0

// Package bootstrap reads the gRPC xDS bootstrap config: which management
// servers to talk to, with which credentials and server features, the node
// identity to present, and the authorities of xdstp resource names
// (gRFC A27, A47, A65). Rule IDs (R-n.m) refer to docs/protocol.md.
//
// A Config is a plain data struct. Parse and FromEnv return a fresh one that
// the caller owns and may adjust before handing it to client.New; after that
// it must not be modified. Its methods only read it and are safe for
// concurrent use.
//
//	cfg, err := bootstrap.FromEnv()
//	if err != nil {
//		return err // errors.Is(err, bootstrap.ErrNoBootstrap) when nothing is configured
//	}
//	c, err := client.New(cfg)
//
// # Sources and precedence
//
// FromEnv follows gRPC: the file named by GRPC_XDS_BOOTSTRAP if that
// variable is set (even when GRPC_XDS_BOOTSTRAP_CONFIG is set too), else the
// JSON in GRPC_XDS_BOOTSTRAP_CONFIG. A file that cannot be read is an error,
// not a reason to try the other variable. With neither set, FromEnv returns
// an error wrapping ErrNoBootstrap: the xDS client cannot be created without
// a config. Parse takes the JSON from anywhere else. The package reads no
// environment and registers nothing at init. A document larger than MaxSize
// (1 MiB) is refused before it is parsed (ErrTooLarge), and FromEnv never
// reads more of a file than that.
//
// # Format
//
// An example with every field this package reads:
//
//	{
//	  "xds_servers": [{
//	    "server_uri": "xds.example.com:443",
//	    "channel_creds": [
//	      {"type": "alts"},
//	      {"type": "tls", "config": {
//	        "ca_certificate_file": "/etc/xds/ca.pem",
//	        "certificate_file": "/etc/xds/cert.pem",
//	        "private_key_file": "/etc/xds/key.pem",
//	        "refresh_interval": "300s"
//	      }}
//	    ],
//	    "call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/var/run/xds/token.jwt"}}],
//	    "server_features": ["ignore_resource_deletion"]
//	  }],
//	  "node": {
//	    "id": "projects/42/nodes/n1",
//	    "cluster": "frontend",
//	    "locality": {"region": "eu-west1", "zone": "eu-west1-b", "sub_zone": "rack7"},
//	    "metadata": {"TRAFFICDIRECTOR_NETWORK_NAME": "default"}
//	  },
//	  "authorities": {
//	    "xds.example.com": {
//	      "client_listener_resource_name_template": "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/client/%s"
//	    },
//	    "other.example.net": {
//	      "xds_servers": [{"server_uri": "other.example.net:443", "channel_creds": [{"type": "insecure"}]}]
//	    }
//	  },
//	  "client_default_listener_resource_name_template": "%s",
//	  "server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s",
//	  "certificate_providers": {
//	    "default": {"plugin_name": "file_watcher", "config": {"certificate_file": "/etc/certs/cert.pem"}}
//	  }
//	}
//
// `xds_servers` lists at least one server. Of a server's `channel_creds`,
// the first entry of a supported type ("insecure", "tls", "google_default",
// or a type declared with WithChannelCredsTypes) is used and the others are
// ignored: the server above uses "tls". A server that is not
// reached over gRPC, "server_uri": "file:///PATH" (a filesystem
// subscription) or "http(s)://HOST:PORT" (REST-JSON polling; package
// transport/mixed picks the transport by the scheme), needs no
// `channel_creds`. Of its `call_creds`
// (gRFC A97, R-3.2), every entry of a supported type ("jwt_token_file", or
// a type declared with WithCallCredsTypes) is kept and the others are
// ignored. There is no global registry: the types a program supports are
// passed to Parse or FromEnv as options, and their builders to the
// transport (grpctransport.WithChannelCreds, WithCallCreds). A "tls" config
// (gRFC A65) without `ca_certificate_file` uses the system roots;
// `certificate_file` and `private_key_file` come together (mTLS) or not at
// all; `refresh_interval` defaults to 10 minutes. `server_features` are kept
// as written; the known ones are the Feature… constants, the others are
// ignored. "delta_ads" (FeatureDeltaADS) selects incremental (delta) xDS for
// that server: the client opens DeltaAggregatedResources instead of the
// state-of-the-world StreamAggregatedResources.
//
// The node's `user_agent_name`, `user_agent_version`, `client_features` and
// `build_version` are ignored if present: the client sets them (Node.Proto,
//
//
// An authority's `client_listener_resource_name_template` must start with
// "xdstp://<authority>/" (the authority percent-encoded with
// url.PathEscape) and defaults to
// "xdstp://<authority>/envoy.config.listener.v3.Listener/%s"; an authority
// without `xds_servers` uses the top-level ones (gRFC A47, R-1.4).
// ServersForAuthority and ListenerResourceName apply these rules;
// ExpandTemplate fills a template.
//
// Unknown fields anywhere are ignored, and a JSON null counts as an absent
// field.
//
// # Errors
//
// Every error of Parse is a *ParseError that names the offending field by
// its JSON path, for example:
//
//	bootstrap: error normalizing JSON: invalid character '}' looking for beginning of object key string
//	bootstrap: xds_servers: empty
//	bootstrap: xds_servers[0].server_uri: want a string, got number
//	bootstrap: xds_servers[1].channel_creds: no supported type (saw "alts", "foo")
//	bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: invalid duration "ten": …
//	bootstrap: authorities["a"].client_listener_resource_name_template: must start with "xdstp://a/"
//
// FromEnv adds where the document came from (ParseError.Source), wraps file
// read errors, and wraps ErrNoBootstrap when nothing is configured. Lookups
// of an authority that is not in the config match ErrUnknownAuthority.
package bootstrap
