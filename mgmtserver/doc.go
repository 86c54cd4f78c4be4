// SPDX-License-Identifier: Apache-2.0

// Package mgmtserver is a small xDS management server for demos, tools
// and tests: `xdsctl demo` serves its mesh with it, and package testutil
// starts it for this module's tests and for yours. It runs in process,
// answers from snapshots of resources that you set, and records every
// request so that a program can look at what its clients ask for.
//
// It is not a production control plane: it has no authentication or
// authorization (any client that reaches it gets the snapshot of the node
// it claims to be), no persistence, no resource discovery of its own, no
// rate limiting or sharding, and it keeps whole snapshots in memory. For a
// control plane of your own, use go-control-plane
// (github.com/envoyproxy/go-control-plane), whose server and snapshot
// cache this package does not depend on; the interop module
// checks this module's client against it.
//
// # Server
//
// Start starts a Server serving the aggregated discovery service (ADS),
// both SotW (StreamAggregatedResources) and incremental
// (DeltaAggregatedResources), and the per-type discovery services
// (ListenerDiscoveryService and the others; xDS protocol, "Variants of
// the xDS Transport Protocol"), over gRPC on a free port of 127.0.0.1
// (Options.ListenAddress to choose), or in memory (Options.InMemory). Stop
// ends its streams and waits for every goroutine it started. Bootstrap
// returns a bootstrap file pointing at the server, for bootstrap.Parse;
// TransportBuilder the transport.Builder its clients use.
//
// The server answers from snapshots (Resources). Update sets the snapshot
// of a node, or the default one ("") used by nodes without their own;
// every resource of a snapshot has the snapshot's version_info. Per
// stream and type URL the server keeps the subscription (named, or
// wildcard as the xDS protocol's "How the client specifies what resources
// to return" defines it) and the version last sent, and it answers as the
// protocol's "ACK/NACK and resource type instance version" section
// expects: a new or changed subscription gets a response, an ACK or NACK
// does not, and Update pushes a new version to every stream that
// subscribes to it. See Update for the details. Package xdsbuild
// (mgmtserver/xdsbuild) builds resources that gRPC accepts, and whole
// snapshots (xdsbuild.Chain).
//
// # Delta
//
// Delta streams answer from the same snapshots. Per stream and type URL
// the server keeps the subscription (names, and the wildcard: "*", or the
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
// Resources"). Requests that change nothing (ACKs, NACKs) get no
// response. Requests are recorded with Request.Delta set (Req is nil);
// SendDeltaResponse scripts responses.
//
// # REST and load reporting
//
// RESTHandler serves the snapshots over REST-JSON polling (POST
// /v3/discovery:listeners and the others, proto3 JSON, 304 when the
// version is current), recording each poll with StreamID 0.
// StartLRSServer starts a Load Reporting Service server that
// records LoadStatsRequests and sends LoadStatsResponses;
// Options.LoadReporting serves it on the management server's own
// listener, so that load reports share the ADS connection.
// Options.WrapResources wraps snapshot resources in a Resource.
//
// # Scripting
//
// Every request is recorded before the server acts on it (unless
// Options.OnRequest takes it instead). Requests returns them all;
// NextRequest and WaitForRequest consume them in arrival order, so a
// program can check ACKs and NACKs (version_info, response_nonce,
// error_detail, resource_names). With Options.Manual the server never
// answers on its own and SendResponse (SendDeltaResponse for delta
// streams) scripts every response; it works without Manual too.
// BreakStreams ends the open streams, as a server restart would;
// RejectStreams refuses new ones, as an unreachable server would.
//
// # In-memory transport
//
// The TransportBuilder of an in-memory server builds transports (ADS over
// the transport.Transports of its Dialer, which pertype.NewBuilder takes
// too) that reach the server without a network: a stream
// is a pair of message queues between the client and the server's ADS
// handler, the same handler the gRPC path uses, and messages cross it
// serialized, as on the wire. The client is given the builder with
// client.WithTransportBuilder. Because every goroutine of an in-memory
// server is started by Start or by NewStream, and blocks only on
// channels, the server and a client can run inside a testing/synctest
// bubble, where the client's 15 s watch expiry timers and reconnection
// backoff run in fake time.
//
// # Example
//
// A program that serves one Listener → RouteConfiguration → Cluster →
// ClusterLoadAssignment chain and prints the bootstrap of its clients:
//
//	ms, err := mgmtserver.Start(mgmtserver.Options{})
//	if err != nil {
//		return err
//	}
//	defer ms.Stop()
//	if err := ms.Update("", xdsbuild.Chain(xdsbuild.ChainOptions{Listener: "svc", Ports: []uint32{8080}})); err != nil {
//		return err
//	}
//	fmt.Printf("%s\n", ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: "n1"}))
//
// # Concurrency and errors
//
// Every method of Server and LRSServer is safe for concurrent use. Update,
// SendResponse and Stop never wait for a client to read. Errors name the
// resource, request or stream at fault and start with "mgmtserver:"; the
// server never panics on what a client sends: a request it cannot decode
// ends that stream with an error status.
package mgmtserver
