// SPDX-License-Identifier: Apache-2.0

// Package transporttest is the conformance suite that every way of
// reaching a management server passes: ADS over gRPC (SotW and delta),
// the per-type streams of package transport/pertype (SotW and delta),
// REST-JSON polling (transport/rest) and filesystem subscriptions
// (transport/file), and any transport of yours. It drives the client
// through its public API only (client.New with options, client.Watch,
// client.WatchAll), so what it checks is what an application sees, and
// what the server receives, whatever the transport underneath.
//
// # Use
//
// A transport provides a Harness: how to start a server for one cell,
// make a client of it, set its resources, break its streams and read
// the requests it received. Run runs every cell on it. For a transport
// over gRPC (here mytransport, with its own size option), testutil's
// ManagementServer does most of the work:
//
//	type harness struct{}
//
//	func (harness) Features() transporttest.Features { return transporttest.Features{} }
//
//	func (harness) NewServer(t *testing.T) transporttest.Server {
//		return server{testutil.NewManagementServer(t, testutil.ServerOptions{})}
//	}
//
//	type server struct{ ms *testutil.ManagementServer }
//
//	func (s server) NewClient(t *testing.T, o transporttest.ClientOptions) *client.Client {
//		b := mytransport.NewBuilder(mytransport.WithMaxRecvMsgSize(o.MaxResponseBytes))
//		return transporttest.NewClient(t, s.ms.Address(), b, o)
//	}
//
//	func (s server) SetResources(t *testing.T, r testutil.Resources) { s.ms.Update("", r) }
//	func (s server) Break(*testing.T)                                 { s.ms.BreakStreams() }
//	func (s server) Requests() transporttest.RequestLog               { return s.ms }
//
//	func TestConformance(t *testing.T) { transporttest.Run(t, harness{}) }
//
// The harnesses of this module's transports are ADSHarness,
// PerTypeHarness, RESTHarness and FileHarness, built on testutil's
// ManagementServer (its gRPC services and its RESTHandler) and a
// temporary directory; they show how to write one. A harness for a
// server that keeps no request log of its own records requests in a Log
// (go-control-plane's server through its callbacks, in this module's
// interop tests). BreakingHandler breaks a REST-JSON server's polls;
// NewClient makes a client of a server URI through a transport.Builder.
//
// A transport that cannot support a cell lists it, with the reason, in
// Features.Unsupported; Run skips it with that reason. Defects known
// but not yet fixed are skipped with the Skip option, so that the rest
// of the suite guards the transport meanwhile.
//
// # Cells
//
// Each cell runs for the four built-in types (Listener,
// RouteConfiguration, Cluster, ClusterLoadAssignment) as subtest
// "Cell/Type", on a server and client of its own, in parallel with the
// others: the cells mostly wait for the network and for the client's
// backoff, so raising -test.parallel above GOMAXPROCS shortens the run.
//
//   - NamedWatch: a watch of one name gets its value and each new version,
//     nothing of other names; a name the server lacks gets a ResourceError
//     wrapping client.ErrResourceNotFound after the watch expiry timeout
//
//   - Wildcard: WatchAll alone gets every resource, then the changed and
//     added ones; the wildcard goes on the wire in a form the xDS protocol
//     defines for the type: "*", or the legacy empty list for Listener and
//     Cluster only ("How the client specifies what resources to return"),
//     in SotW and delta alike.
//   - WildcardAndNamed: WatchAll and a named watch on one client, in
//     either order; each gets what it should, and the named watch keeps
//     working once the wildcard watch is cancelled.
//   - CancelAndRewatch: a name (and the wildcard) watched, cancelled
//     (unsubscribed on the wire, where the server sees streams) and
//     watched again gets its current value and later updates.
//   - Deletion: a resource the server removes is a ResourceError wrapping
//     client.ErrResourceNotFound, and comes back when the server has it
//     again.
//   - NACK: an invalid resource is a ResourceError (no value) or an
//     AmbientError (value kept) wrapping client.ErrResourceInvalid, a valid
//     version is applied again, and the NACK reaches the server with an
//     error_detail naming the resource.
//   - ReconnectReplay: after Server.Break the client asks again for its
//     subscription, the wildcard alone, then the wildcard and a name, and
//     updates (and resources added after the break) keep arriving, with no
//     error reported.
//   - DuplicateNames: a response naming a resource twice is NACKed, that
//     name is invalid and the rest applied.
//   - Oversize (Cluster only: the limit is the transport's): a response
//     above ClientOptions.MaxResponseBytes is an error wrapping
//     transport.ErrMessageTooLarge that names the limit, retried
//     with backoff, not in a loop, and recovered from when the response
//     fits again.
//   - HostileNames: a watch of a name that is not valid UTF-8, or of
//     HostileNameLength bytes, gets a ResourceError (not a connection
//     error) for that watcher alone; every other watch keeps working.
//
// # Not supported by some transports
//
//   - Deletion of RouteConfiguration and ClusterLoadAssignment in SotW
//     (ADS, per-type, REST, file): a SotW response that leaves them out
//     does not delete them; skipped for every SotW harness.
//   - NACK with error_detail, for files: a file source cannot receive a
//     NACK (FileHarness checks the client's side only).
//   - Delta, for REST and files: they are SotW only (the xDS protocol
//     defines no incremental REST or file variant); their harnesses run
//     the SotW cells.
//
// # Requests
//
// Where Server.Requests is not nil, the cells also check the wire: the
// form of the wildcard, the unsubscription, the replay after a break,
// the NACK's error_detail. testutil.Request values carry a SotW request
// or REST-JSON poll (Req) or a delta request (Delta), and the StreamID of
// its stream, 0 for a poll.
package transporttest
