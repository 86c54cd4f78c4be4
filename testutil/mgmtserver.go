// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"testing"

	"github.com/proxyless/xds/mgmtserver"
)

// The management server is package mgmtserver's; these names start it for
// a test and keep the tests that use them through testutil unchanged.

// InMemoryAddress is mgmtserver.InMemoryAddress.
const InMemoryAddress = mgmtserver.InMemoryAddress

// ServerOptions is mgmtserver.Options.
type ServerOptions = mgmtserver.Options

// Resources is mgmtserver.Resources, a snapshot.
type Resources = mgmtserver.Resources

// NamedResource is mgmtserver.NamedResource.
type NamedResource = mgmtserver.NamedResource

// Request is mgmtserver.Request, one recorded request.
type Request = mgmtserver.Request

// BootstrapOptions is mgmtserver.BootstrapOptions.
type BootstrapOptions = mgmtserver.BootstrapOptions

// LRSServer is mgmtserver.LRSServer.
type LRSServer = mgmtserver.LRSServer

// LRSServerOptions is mgmtserver.LRSServerOptions.
type LRSServerOptions = mgmtserver.LRSServerOptions

// ManagementServer is a mgmtserver.Server (every method of which it has)
// whose Update also fails the test that started it: a test may ignore
// Update's error.
type ManagementServer struct {
	*mgmtserver.Server

	tb testing.TB // failed by Update's errors; nil from StartManagementServer
}

// NewManagementServer starts a management server for a test
// (mgmtserver.Start): over gRPC on 127.0.0.1 with a free port, or in
// memory when opts.InMemory. It calls tb.Fatal if the server cannot
// start, and registers Stop with tb.Cleanup.
func NewManagementServer(tb testing.TB, opts ServerOptions) *ManagementServer {
	tb.Helper()
	ms, err := mgmtserver.Start(opts)
	if err != nil {
		tb.Fatalf("testutil: starting the management server: %v", err)
	}
	tb.Cleanup(ms.Stop)
	return &ManagementServer{Server: ms, tb: tb}
}

// StartManagementServer is NewManagementServer for code without a
// testing.TB, such as the package examples: the caller must call Stop.
// Programs use mgmtserver.Start.
func StartManagementServer(opts ServerOptions) (*ManagementServer, error) {
	ms, err := mgmtserver.Start(opts)
	if err != nil {
		return nil, err
	}
	return &ManagementServer{Server: ms}, nil
}

// Update is mgmtserver.Server.Update; its error also fails the test of
// NewManagementServer (tb.Errorf).
func (ms *ManagementServer) Update(nodeID string, r Resources) error {
	err := ms.Server.Update(nodeID, r)
	if err != nil && ms.tb != nil {
		ms.tb.Errorf("%v", err)
	}
	return err
}

// NewLRSServer starts an LRSServer (mgmtserver.StartLRSServer) for a test:
// it calls tb.Fatal if the server cannot start, and registers Stop with
// tb.Cleanup.
func NewLRSServer(tb testing.TB, opts LRSServerOptions) *LRSServer {
	tb.Helper()
	s, err := mgmtserver.StartLRSServer(opts)
	if err != nil {
		tb.Fatalf("testutil: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}
