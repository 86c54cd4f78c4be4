// SPDX-License-Identifier: Apache-2.0

// Package testutil holds helpers for tests of xDS clients: an in-process
// xDS management server and builders of valid xDS resources. It is used
// by this module's own tests and is meant for users' integration tests.
// It depends only on grpc and the envoy protos, not on go-control-plane's
// server. Production code must not import it.
//
// # Server
//
// NewManagementServer starts a ManagementServer serving the aggregated
// discovery service (ADS), both SotW (StreamAggregatedResources) and
// incremental (DeltaAggregatedResources), over gRPC on 127.0.0.1, or in
// memory (ServerOptions.InMemory), and stops it when the test ends; it
// fails the test (tb.Fatal) when the server cannot start.
// StartManagementServer is the same for programs that are not tests
// (xdsctl demo, examples): it returns an error instead, and the caller
// calls Stop. Bootstrap returns a bootstrap file pointing at the server,
// for bootstrap.Parse. Setup failures are reported, never panicked: Update
// returns an error for a resource it cannot serve (and fails the test of
// NewManagementServer's server).
//
// The server answers from snapshots. Update sets the snapshot of a node,
// or the default one ("") used by nodes without their own; every resource
// of a snapshot has the snapshot's version_info. Per stream and type URL
// the server keeps the subscription (named, or wildcard as the xDS
// protocol's "How the client specifies what resources to return" defines
// it) and the version last sent, and it answers as the protocol's "ACK/NACK
// and resource type instance version" section expects: a new or changed
// subscription gets a response, an ACK or NACK does not, and Update pushes
// a new version to every stream that subscribes to it. See Update for the
// details.
//
// # Delta
//
// Delta streams answer from the same snapshots. Per stream and type URL the
// server keeps the subscription (names, and the wildcard: "*", or the
// legacy one, a first request that subscribes and unsubscribes nothing,
// for Listener and Cluster only, which lasts until "*" is unsubscribed, as
// in the incremental example of "How the client specifies what resources
// to return") and the version of each resource the client has (from
// initial_resource_versions, then from what was sent). A resource's
// version is a hash of its bytes (16 hex digits), so a resource that did
// not change between snapshots keeps its version and is not sent again;
// system_version_info is the snapshot's version. A response carries the
// wanted resources whose version the client does not have, in snapshot
// order, and in removed_resources, sorted, the names the client has or
// subscribed to that the snapshot lacks (a subscribed, absent name once).
// A name subscribed again on a stream is resent ("Subscribing to
// Resources"), and a name unsubscribed while the wildcard lasts is
// answered with the resource or its removal ("Unsubscribing from
// Resources"). Requests that change nothing (ACKs, NACKs) get no response.
// Requests are recorded with Request.Delta set (Req is nil);
// SendDeltaResponse scripts responses.
//
// # Scripting
//
// Every request is recorded before the server acts on it. Requests
// returns them all; NextRequest and WaitForRequest consume them in arrival
// order, so a test can assert ACKs and NACKs (version_info, response_nonce,
// error_detail, resource_names). With ServerOptions.Manual the server
// never answers on its own and SendResponse (SendDeltaResponse for delta
// streams) scripts every response; it works without Manual too. BreakStreams ends the open streams, as a
// server restart would; RejectStreams refuses new ones, as an unreachable
// server would.
//
// # Builders
//
// Listener, ListenerInline, RouteConfig, Cluster and Endpoints build
// resources that gRPC accepts (they decode without error with the decoders
// of package resources), and Chain builds a whole Listener →
// RouteConfiguration → Cluster → ClusterLoadAssignment chain from a
// listener name. MarshalAny packs a message deterministically.
//
// # Security and backends
//
// UpstreamTLS and WithUpstreamTLS give a Cluster the transport socket of
// xDS mTLS (gRFC A29), ExactSAN and PrefixSAN its server identities, and
// WithCertificateProviders adds file_watcher certificate provider
// instances to a bootstrap; subpackage certs makes the certificates.
// StartBackend serves grpc.health.v1.Health and grpc.testing.TestService
// on loopback, in plaintext or TLS, answering with its name and the
// client's SPIFFE ID.
//
// # More servers and helpers
//
// The same server also serves the per-type discovery services
// (ListenerDiscoveryService and the others; xDS protocol, "Variants of
// the xDS Transport Protocol"), which share its snapshots, request log,
// BreakStreams and RejectStreams with ADS, and RESTHandler serves the
// snapshots over REST-JSON polling (POST /v3/discovery:listeners and the
// others, proto3 JSON, 304 when the version is current), recording each
// poll with StreamID 0. NewLRSServer starts a Load
// Reporting Service server that records LoadStatsRequests and
// scripts LoadStatsResponses; ServerOptions.LoadReporting serves it on the
// management server's own listener, so that load reports share the ADS
// connection. ServerOptions.WrapResources wraps snapshot
// resources in a Resource. Canary builds the snapshot of a canary
// deployment (routes by header and by path, weighted clusters).
// StartServerProcess runs a ManagementServer in a child process (the test
// binary run again on a helper test that calls ServeProcess), so that the
// heap of the test process is the client's alone.
// Subpackage leakcheck finds goroutines a test left running; subpackage
// clienttest tests a transport.Builder or transport.Dialer with the real
// client; subpackage faultproxy is a TCP proxy that resets, refuses or
// stalls connections on command, to put a flaky network between a client
// and the server.
// Subpackage transporttest is the conformance suite that every transport
// passes (ADS, per-type, REST, file, or your own: implement its Harness
// and call transporttest.Run).
//
// # In-memory transport
//
// The TransportBuilder of an in-memory server builds transports (ADS over
// the transport.Transports of its Dialer) that reach the server without a
// network: a stream
// is a pair of message queues between the client and the server's ADS
// handler, the same handler the gRPC path uses, and messages cross it
// serialized, as on the wire. The client is given the builder with
// client.WithTransportBuilder. Because every goroutine of an in-memory
// server is started by NewManagementServer or by NewStream, and blocks
// only on channels, the server and a client can run inside a
// testing/synctest bubble, where the 15 s watch expiry timers and the
// reconnection backoff run in fake time:
//
//	synctest.Test(t, func(t *testing.T) {
//		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
//		ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
//		cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
//		...
//		c, err := client.New(cfg, client.WithTransportBuilder(ms.TransportBuilder()))
//		...
//	})
//
// # Example
//
// A test over gRPC that checks the client ACKs what it was sent:
//
//	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
//	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
//	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{NodeID: "n1"}))
//	...
//	c, err := client.New(cfg)
//	...
//	defer c.Close()
//	defer client.Watch(c, resources.ListenerType, "svc", w)()
//	ack, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
//		return r.Req.GetTypeUrl() == resources.ListenerTypeURL && r.Req.GetVersionInfo() == "1"
//	})
//
// # Concurrency
//
// Every method of ManagementServer is safe for concurrent use. Update,
// SendResponse and Stop never wait for a client to read.
package testutil
