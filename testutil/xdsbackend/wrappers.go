// SPDX-License-Identifier: Apache-2.0

// Package xdsbackend runs an xDS-enabled gRPC server (package server) on
// loopback for tests: the server-side counterpart of testutil.StartBackend,
// serving the same services (grpc.health.v1.Health and
// grpc.testing.TestService) with the Listener the management server has
// for its address (build it with testutil.ServerListener or
// testutil.IstioInboundListener). It is xdsctl demo's backend (package
// internal/xdsbackend, whose doc has the details) under the names tests
// use, and a package of its own because package testutil does not import
// the client. Production code never imports it.
package xdsbackend

import (
	"github.com/proxyless/xds/client"
	ixdsbackend "github.com/proxyless/xds/internal/xdsbackend"
)

// Backend is internal/xdsbackend.Backend.
type Backend = ixdsbackend.Backend

// Options is internal/xdsbackend.Options.
type Options = ixdsbackend.Options

// Start is internal/xdsbackend.Start.
func Start(c *client.Client, o Options) (*Backend, error) {
	return ixdsbackend.Start(c, o)
}
