// SPDX-License-Identifier: Apache-2.0

package pertype_test

import (
	"fmt"
	"log"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/watcher"
)

// Example speaks per-type streams (ListenerDiscoveryService and the
// others) instead of ADS, to a management server that serves them; with
// client.WithDelta, their delta variants.
func Example() {
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ms.Stop()
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))

	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(pertype.NewBuilder(grpctransport.NewBuilder())))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	got := make(chan string, 1)
	defer client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{
		OnChanged: func(l *resources.Listener) { got <- l.Name + " routes via " + l.RouteConfigName },
	})()
	fmt.Println(<-got)
	// Output: svc routes via route-svc
}
