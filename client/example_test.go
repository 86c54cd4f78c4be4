// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"fmt"
	"log"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// Example is the README's quick start, run against the in-process
// management server of package testutil. In production the bootstrap comes
// from bootstrap.FromEnv (GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG).
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
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // waits for every goroutine the client started

	got := make(chan string, 1)
	cancel := client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{
		OnChanged:       func(l *resources.Listener) { got <- l.Name + " routes via " + l.RouteConfigName },
		OnResourceError: func(err error) { log.Print(err) }, // stop using the old value
		OnAmbientError:  func(err error) { log.Print(err) }, // keep using it
	})
	defer cancel()
	fmt.Println(<-got)
	// Output: svc routes via route-svc
}
