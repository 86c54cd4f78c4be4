// SPDX-License-Identifier: Apache-2.0

// Package testutil holds helpers for tests of xDS clients, this module's
// own and users' integration tests. Only tests import it (scripts/vet.sh
// rejects any other file that does, outside testutil/ and the interop
// module): programs, demos and tools use package mgmtserver, the
// management server these helpers start, and mgmtserver/xdsbuild, the
// resource builders. Like them it depends only on grpc and the envoy
// protos, not on go-control-plane's server.
//
// # Management server
//
// NewManagementServer starts a mgmtserver.Server for a test (see package
// mgmtserver for what it serves and how it answers: SotW and delta ADS,
// per-type streams, REST-JSON, snapshots, request recording, scripted
// responses, BreakStreams and RejectStreams): over gRPC on 127.0.0.1, or
// in memory (ServerOptions.InMemory); it fails the test (tb.Fatal) when
// the server cannot start and stops it when the test ends. The
// ManagementServer it returns has every method of mgmtserver.Server, and
// its Update also fails the test with the error it returns, so a test may
// ignore that error. NewLRSServer starts a mgmtserver.LRSServer likewise.
// StartManagementServer is NewManagementServer for package examples,
// which have no testing.TB; the caller calls Stop. ServerOptions,
// Resources, Request, BootstrapOptions and the other server types are
// mgmtserver's, under the names the tests use.
//
// # Builders
//
// Listener, RouteConfig, Cluster, Endpoints, Chain, Canary, the
// server-side, TLS, RBAC and session builders and the bootstrap edits
// (WithCertificateProviders, WithServerListenerTemplate) are those of
// package mgmtserver/xdsbuild, under the names the tests use; see that
// package for what they build.
//
// # Backends, processes and load
//
// StartBackend serves grpc.health.v1.Health and grpc.testing.TestService
// on loopback, in plaintext or TLS, answering with its name and the
// client's SPIFFE ID; subpackage xdsbackend serves the same as an
// xDS-enabled server. StartServerProcess runs a management server in a
// child process (the test binary run again on a helper test that calls
// ServeProcess), so that the heap of the test process is the client's
// alone. ClosedLoop drives RPCs for throughput tests, ProcessCPU reads the
// process's CPU time, PinPolicy and RegisterPinPolicy give a Cluster a
// custom load balancing policy (gRFC A52) that picks one port, and
// LogBuffer collects a logger's output safely.
//
// # Subpackages
//
// leakcheck finds goroutines a test left running; certs makes real
// certificates at run time; clienttest tests a transport.Builder or a
// transport.Dialer with the real client; faultproxy is a TCP proxy that
// resets, refuses or stalls connections on command, to put a flaky
// network between a client and the server; transporttest is the conformance suite that every transport
// passes (ADS, per-type, REST, file, or your own: implement its Harness
// and call transporttest.Run).
//
// # In a synctest bubble
//
// Every goroutine of an in-memory server is started by
// NewManagementServer or by its transports' NewStream, and blocks only on
// channels, so the server and a client can run inside a testing/synctest
// bubble, where the 15 s watch expiry timers and the reconnection backoff
// run in fake time:
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
