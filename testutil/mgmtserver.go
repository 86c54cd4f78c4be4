// SPDX-License-Identifier: Apache-2.0

package testutil

// The management server and the resource builders moved to package
// mgmtserver; these names keep the tests that use them through testutil
// unchanged.

import "github.com/proxyless/xds/mgmtserver"

const InMemoryAddress = mgmtserver.InMemoryAddress

var NewLRSServer = mgmtserver.NewLRSServer
var NewManagementServer = mgmtserver.NewManagementServer
var StartManagementServer = mgmtserver.StartManagementServer

type BootstrapOptions = mgmtserver.BootstrapOptions
type LRSServer = mgmtserver.LRSServer
type LRSServerOptions = mgmtserver.LRSServerOptions
type ManagementServer = mgmtserver.ManagementServer
type NamedResource = mgmtserver.NamedResource
type Request = mgmtserver.Request
type Resources = mgmtserver.Resources
type ServerOptions = mgmtserver.ServerOptions
