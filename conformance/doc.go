// SPDX-License-Identifier: Apache-2.0

// Package conformance checks a management server against the xDS
// protocol: it connects as an xDS client, sends the requests a client may
// send (the explicit and the legacy wildcard, subsets, ACKs, NACKs, stale
// nonces, unsubscriptions, initial_resource_versions) and checks the
// responses against the rules of docs/protocol.md, R-28 (each a rule of
// the xDS protocol text). docs/conformance.md lists the checks and how
// known servers fare; `xdsctl conformance` runs them from the command
// line.
//
// Run runs the kit in a test, each check on each variant a subtest:
//
//	func TestConformance(t *testing.T) {
//		addr := startMyServer(t) // HOST:PORT, loaded with a few resources
//		conformance.Run(t, conformance.Config{Server: addr})
//	}
//
// Check returns the Report for other uses.
//
// # What it needs
//
// A server with resources for the node (Config.Node): at least one
// Listener or Cluster, better two or three of each type, so that subsets
// can be told from the whole. The kit finds them with a wildcard
// subscription, or is given their names (Config.Listeners and the
// others). Checks of updates and deletions need Config.Change, a function
// that makes the server change a resource; without it they are skipped.
//
// # The wire
//
// The kit speaks the wire itself, not through this library's client: it
// opens its own streams (on Config.Transport, or a plaintext gRPC
// connection to Config.Server), writes every DiscoveryRequest and
// DeltaDiscoveryRequest as the check needs it, the node in the first
// request of a stream only, and reads the responses with deadlines. A
// response that must come is waited for Config.Timeout (5 s by default);
// to see that none comes, the kit waits Config.Quiet (1 s by default).
//
// # Results
//
// Each check on each variant (SotW or delta, on the aggregated stream or
// one stream per type, or REST-JSON polling) passes, fails with what the
// server did, or is skipped with why: the variant is not served
// (UNIMPLEMENTED), there is no Change function, the server has too few
// resources, or the check could not be set up because the server broke
// another rule, which that rule's check reports.
//
// # Concurrency
//
// Check and Run may be called concurrently. Checks that do not change
// the server run concurrently with each other, each on its own streams;
// the others, and Config.Change, run one at a time afterwards. Every
// goroutine the kit starts has ended when Check returns.
package conformance
