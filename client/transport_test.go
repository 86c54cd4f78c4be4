// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport/grpctransport"
)

// TestTransportBuilder checks that Client.TransportBuilder returns the
// builder given to WithTransportBuilder, and by default the client's own
// grpctransport.Builder, one per client.
func TestTransportBuilder(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	b := ms.TransportBuilder()
	if got := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(b)).TransportBuilder(); got != b {
		t.Errorf("TransportBuilder() = %v; want the builder given to WithTransportBuilder", got)
	}
	tcp := testutil.NewManagementServer(t, testutil.ServerOptions{})
	c1, c2 := newClient(t, tcp, testutil.BootstrapOptions{}), newClient(t, tcp, testutil.BootstrapOptions{})
	g1, ok := c1.TransportBuilder().(*grpctransport.Builder)
	if !ok {
		t.Fatalf("default TransportBuilder() = %T; want *grpctransport.Builder", c1.TransportBuilder())
	}
	if g1 == c2.TransportBuilder() {
		t.Errorf("two clients share a default TransportBuilder; want one each")
	}
}
