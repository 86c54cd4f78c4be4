// SPDX-License-Identifier: Apache-2.0

// Package defaulttransport names the client's default transport.Builder,
// ADS over gRPC (package transport/grpctransport), in one place outside
// package client: the engine speaks only transport.Builder and
// transport.XDS, and holds no code, option, limit or error text of any
// transport (docs/README.md, "Package map").
package defaulttransport

import (
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
)

// NewBuilder returns the builder of a client made without
// client.WithTransportBuilder: a grpctransport.Builder of its own (one
// gRPC connection per distinct server, shared with the load reporting
// streams built from it), whose receive limit is the client's
// (transport.BuildOptions.MaxRecvMsgSize).
func NewBuilder() transport.Builder { return grpctransport.NewBuilder() }
