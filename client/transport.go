// SPDX-License-Identifier: Apache-2.0

package client

import (
	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/transport"
)

// TransportBuilder returns the transport.Builder the client reaches its
// management servers with: the one given to WithTransportBuilder, else
// the client's own grpctransport.Builder (one per client, made by New).
// The default builder shares one gRPC connection per server
// (bootstrap.ServerConfig.Key) between the transports it builds, so the
// load reporting stream (transport.XDS.NewLRSStream) of a transport built
// from it for a server the client is connected to uses the client's ADS
// connection: package xdsresolver reports load (LRS) this way by default,
// on the same connection as ADS. The client keeps using the
// builder; the caller must not close what it does not build. Safe for
// concurrent use; the result is the same for the client's lifetime.
func (c *Client) TransportBuilder() transport.Builder { return c.builder }

// buildOptions returns what the client tells its builder about itself
// for the management server sc: its logger, with sc's server_uri, and its
// receive limit (WithMaxRecvMsgSize).
func (c *Client) buildOptions(sc *bootstrap.ServerConfig) transport.BuildOptions {
	return transport.BuildOptions{
		Logger:         c.logger.With(xdslog.KeyServerURI, sc.ServerURI),
		MaxRecvMsgSize: c.opts.maxRecvMsgSize,
	}
}
