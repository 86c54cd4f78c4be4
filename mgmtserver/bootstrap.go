// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"encoding/json"
	"fmt"
)

// BootstrapOptions configures Bootstrap.
type BootstrapOptions struct {
	// NodeID is the node's id. Default "test-node".
	NodeID string

	// ServerFeatures are the server_features of every xds_servers entry
	// Bootstrap writes, for example bootstrap.FeatureIgnoreResourceDeletion.
	ServerFeatures []string

	// Authorities maps an authority name to the server_uri of that
	// authority's own xds_servers entry (gRFC A47). "" lists this
	// server's Address explicitly, so several authorities (and the
	// top-level xds_servers) name the same server and must share one
	// stream. Nil writes no authorities.
	Authorities map[string]string
}

// bootstrapServer is one xds_servers entry.
type bootstrapServer struct {
	ServerURI      string              `json:"server_uri"`
	ChannelCreds   []map[string]string `json:"channel_creds"`
	ServerFeatures []string            `json:"server_features,omitempty"`
}

type bootstrapAuthority struct {
	XDSServers []bootstrapServer `json:"xds_servers"`
}

type bootstrapFile struct {
	XDSServers  []bootstrapServer             `json:"xds_servers"`
	Node        map[string]string             `json:"node"`
	Authorities map[string]bootstrapAuthority `json:"authorities,omitempty"`
}

// Bootstrap returns a gRPC xDS bootstrap file (JSON, gRFC A27) that points
// at this server:
//
//	{
//	  "xds_servers": [{"server_uri": Address(), "channel_creds": [{"type": "insecure"}],
//	                   "server_features": opts.ServerFeatures}],
//	  "node": {"id": opts.NodeID},
//	  "authorities": {name: {"xds_servers": [{"server_uri": uri, ...}]}, ...}
//	}
//
// Authority entries have the same channel_creds and server_features as the
// top-level one. For an in-memory server the server_uri is
// InMemoryAddress; a client must then use TransportBuilder.
func (ms *Server) Bootstrap(opts BootstrapOptions) []byte {
	return BootstrapJSON(ms.address, opts)
}

// BootstrapJSON is Server.Bootstrap for a management server at address
// ("host:port"), for example one in another process or a program of its
// own.
func BootstrapJSON(address string, opts BootstrapOptions) []byte {
	server := func(uri string) []bootstrapServer {
		return []bootstrapServer{{
			ServerURI:      uri,
			ChannelCreds:   []map[string]string{{"type": "insecure"}},
			ServerFeatures: opts.ServerFeatures,
		}}
	}
	nodeID := opts.NodeID
	if nodeID == "" {
		nodeID = "test-node"
	}
	f := bootstrapFile{
		XDSServers: server(address),
		Node:       map[string]string{"id": nodeID},
	}
	if opts.Authorities != nil {
		f.Authorities = make(map[string]bootstrapAuthority, len(opts.Authorities))
		for name, uri := range opts.Authorities {
			if uri == "" {
				uri = address
			}
			f.Authorities[name] = bootstrapAuthority{XDSServers: server(uri)}
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		// Only strings, slices and maps of them: cannot fail.
		panic(fmt.Sprintf("mgmtserver: encoding the bootstrap: %v", err)) // a bug of this package
	}
	return b
}
