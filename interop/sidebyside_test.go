// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/xdsresolver"
)

// channel is a ClientConn under test, named for messages.
type channel struct {
	name string
	cc   *grpc.ClientConn
}

// bothChannels returns two ClientConns to target for what s serves: this
// library's (xdsresolver.DialOptions on a new client) and grpc-go's own xDS
// resolver (google.golang.org/grpc/xds), each with opts and plaintext;
// both are closed when the test ends.
func bothChannels(t *testing.T, s *gcpServer, target string, opts ...grpc.DialOption) []channel {
	t.Helper()
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())
	ours, err := grpc.NewClient(target, append(append(xdsresolver.DialOptions(s.newClient(t)), plain), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ours.Close() })
	theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithResolvers(theirResolver), plain}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { theirs.Close() })
	return []channel{{"proxyless/xds", ours}, {"grpc-go xds", theirs}}
}
