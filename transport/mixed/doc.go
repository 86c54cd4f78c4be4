// SPDX-License-Identifier: Apache-2.0

// Package mixed picks the transport of each management server from its
// bootstrap entry, so that one client can take resources from several
// kinds of sources at once (a Listener from a file, endpoints from a
// management server): the cache, the dependency manager (package depmgr)
// and the resolver work unchanged on every source.
//
//	c, err := client.New(cfg, client.WithTransportBuilder(mixed.NewBuilder()))
//
// By server_uri:
//
//   - "file:///path": a filesystem subscription (package transport/file).
//   - "http://…" or "https://…": REST-JSON polling (package transport/rest).
//   - anything else: gRPC (package transport/grpctransport), with ADS; with
//     per-type streams (package transport/pertype) when the entry lists the
//     server feature "xds_per_type" (FeaturePerType) or the Builder was made
//     WithPerType.
//
// Each transport is built with the client's options
// (transport.BuildOptions: its logger, its receive limit); WithGRPC sets
// the transport.Dialer the gRPC servers are reached over.
//
// The file and REST entries need no `channel_creds` (bootstrap.Parse
// accepts them without, R-1.3): neither transport uses channel
// credentials.
//
// Which server serves a resource is the bootstrap's business, as always:
// old-style names go to the top-level xds_servers, xdstp names to their
// authority's (gRFC A47). A file or REST source speaks SotW only: with
// client.WithDelta or "delta_ads", its watchers get the transport's
// ErrDeltaUnsupported.
//
// Caveat: "xds_per_type" is not one of the features that make two server
// entries different servers (bootstrap.ServerConfig.Key), so two entries
// with the same server_uri and credentials, one with it and one without,
// share the channel built for the first one used.
package mixed
