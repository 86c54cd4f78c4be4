// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/httpconnect"
)

// HTTPConnectDialer returns the dial option that connects the channel
// through the HTTP CONNECT proxies that xDS configures (gRFC A86): an
// endpoint of a Cluster with the HTTP/1.1 proxy transport socket and a
// proxy address (its own, else its locality's) is reached through a
// tunnel that the proxy opens with "CONNECT <endpoint's IP:port>", and
// any TLS the Cluster asks for is done with the endpoint through it; other
// addresses are dialled directly, over TCP with keep-alive probes at the
// operating system's settings, as grpc's own dialer does. It needs a
// client made with client.WithHTTPConnect, without which such Clusters
// are NACKed.
//
// DialOptions includes it when its client was made with
// client.WithHTTPConnect; give it to a channel made with NewBuilder alone.
// Like any dialer of grpc.WithContextDialer, it replaces grpc's, and so
// grpc's proxy from the environment (HTTPS_PROXY), for the whole channel.
// The CONNECT request's User-Agent is "grpc-go/<grpc.Version>", as
// grpc's own proxy dialer sends.
func HTTPConnectDialer() grpc.DialOption {
	d := httpconnect.NewDialer("grpc-go/" + grpc.Version)
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		proxy := handshake.ProxyAddressFromAttributes(credentials.ClientHandshakeInfoFromContext(ctx).Attributes)
		return d.Dial(ctx, proxy, addr)
	})
}
