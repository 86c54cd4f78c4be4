// SPDX-License-Identifier: Apache-2.0

// Package otelxds reports the metrics of xDS clients (package client) to
// OpenTelemetry, as gRPC does for its XdsClient (gRFC A78 "XdsClient",
// with the cache states of gRFC A88; the project's docs/protocol.md R-21):
//
//	grpc.xds_client.resource_updates_valid    counter  {resource}  grpc.target, grpc.xds.server, grpc.xds.resource_type
//	grpc.xds_client.resource_updates_invalid  counter  {resource}  grpc.target, grpc.xds.server, grpc.xds.resource_type
//	grpc.xds_client.server_failure            counter  {failure}   grpc.target, grpc.xds.server
//	grpc.xds_client.connected                 gauge    {bool}      grpc.target, grpc.xds.server
//	grpc.xds_client.resources                 gauge    {resource}  grpc.target, grpc.xds.authority, grpc.xds.cache_state, grpc.xds.resource_type
//
// Counters are Int64Counter instruments, gauges Int64ObservableGauge ones.
// The gauges are asynchronous: they are read from each client (Client.Gauges)
// when the MeterProvider's reader collects, not kept up to date.
//
//	rec, err := otelxds.New(meterProvider) // e.g. sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
//	if err != nil { ... }
//	defer rec.Close()
//	c, err := client.New(cfg, client.WithMetrics(rec), client.WithTarget("xds:///svc"))
//
// # Per-call metrics with the xDS labels
//
// DialOption(o) records what grpc-go's OpenTelemetry plugin records for
// the same google.golang.org/grpc/stats/opentelemetry.Options (the
// per-call metrics of gRFC A66, gRPC's balancer and subchannel metrics,
// traces), and on channels made with xdsresolver.DialOptions fills the
// optional labels grpc.lb.locality (gRFC A78) and grpc.lb.backend_service
// (gRFC A89) of the per-attempt metrics, as gRPC's own xDS channel does;
// ServerOption(o) gives server.NewGRPCServer the server metrics of A66:
//
//	cc, err := grpc.NewClient("xds:///svc", append(xdsresolver.DialOptions(c), otelxds.DialOption(o))...)
//	srv, err := server.NewGRPCServer(c, otelxds.ServerOption(o))
//
// See DialOption for why it is not grpc-go's plugin as it is, and the
// project's docs/observability.md for the metric table.
//
// It is a module of its own (github.com/proxyless/xds/otelxds) so that the
// client's module does not depend on OpenTelemetry.
package otelxds
