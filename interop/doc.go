// SPDX-License-Identifier: Apache-2.0

// Package interop runs the github.com/proxyless/xds client against
// third-party xDS peers. It is a nested Go module with its own go.mod, so
// that the peers' dependencies (go-control-plane's root module, with its
// server, snapshot cache and rate-limit protos) never enter the module graph
// of the library that users import (docs/protocol.md, R-24.2). The library's own
// tests use the management server in github.com/proxyless/xds/testutil,
// which is built on grpc and the envoy protos only; the tests here check
// that what works against that server also works against the server most
// Go control planes are built on.
//
// The package has no API: everything is in its tests.
//
// # Running
//
// From the repository root:
//
//	cd interop && go test -race -count=1 ./...
//
// The go.mod replaces github.com/proxyless/xds with the parent directory,
// so the tests always run against the library as checked out.
//
// # Peers
//
// go-control-plane (github.com/envoyproxy/go-control-plane, root module):
// its SotW ADS server (pkg/server/v3) over a snapshot cache
// (pkg/cache/v3), on a real gRPC server on loopback. The tests record every
// DiscoveryRequest as the server's callbacks see it, and as it came off the
// wire, to check ACKs and NACKs. See gcp_server_test.go. The same server
// serves DeltaAggregatedResources from a snapshot cache or from linear
// caches (one per type behind a mux cache); the client selects delta with
// the "delta_ads" server feature. See gcp_delta_server_test.go and
// gcp_delta_test.go.
//
// # go-control-plane behaviour worth knowing
//
// Observed with go-control-plane v0.14.0 and written down in the tests
// where it shows:
//
//   - NACKs are not understood. The SotW server and the snapshot cache never
//     read error_detail: a NACK carries the last ACKed version_info, which
//     differs from the snapshot's version, so the cache answers it at once
//     with the same rejected resources under a new nonce. Until the snapshot
//     changes, client and server exchange NACK and resend as fast as they
//     can. The client keeps this cheap (it tells watchers about a repeated
//     error only once, R-7.6), but the traffic goes on.
//   - The callbacks see a node on every request: the server copies the
//     stream's first node into every later request before calling
//     OnStreamRequest, so a callback cannot tell whether the client sent it
//     . The tests check the node rule on the wire instead.
//   - A snapshot has one version for every type, so a change to one
//     resource resends every type under the new version. The client must
//     (and does) keep such pushes of unchanged resources from its watchers.
//   - The snapshot cache answers a request with an empty resource_names
//     list with every resource of the type, whatever was subscribed before:
//     an unsubscribe from the last resource of a type reads as a wildcard
//     subscription. With each new snapshot, the client then receives every
//     resource of that type, including ones meant for other kinds of
//     clients (a STATIC Cluster for Envoys, say).
//   - Delta: the server ignores nonces and error_detail. It remembers, per
//     stream and type, the versions it sent, whatever the client answered,
//     so a NACKed resource is not resent (no NACK loop, unlike SotW) and
//     comes again only when its version changes.
//   - Delta: a subscribed name the cache does not have is never listed in
//     removed_resources; only names it had sent are. The client learns
//     that such a resource does not exist from its does-not-exist timer.
//   - Delta: a name subscribed again while the server still counts it as
//     subscribed is not resent when its version did not change, although
//     the protocol says it must be ("Subscribing to Resources"). The client
//     therefore never relies on it: a name it must receive again is
//     unsubscribed in one request and subscribed in the next. Likewise, a
//     wildcard unsubscribed and subscribed again before any response in
//     between is not resent.
//   - Delta: initial_resource_versions are honoured: after a reconnect,
//     resources whose versions the client claims are not resent.
//   - Created with ads set to true, the snapshot cache answers a request
//     naming resources only once the names cover every resource of that
//     type in the snapshot. A gRPC-style client subscribes to the resources
//     it needs, not to all of them, so such a cache may never answer it;
//     the tests use ads set to false.
package interop
