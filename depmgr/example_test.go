// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// Example resolves a Listener into its complete configuration, against the
// in-process management server of package testutil. In production the
// bootstrap comes from bootstrap.FromEnv.
func Example() {
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ms.Stop()
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080, 8081}}))

	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	configs := make(chan *depmgr.XDSConfig, 1)
	m := depmgr.New(c, "svc", watcher.Funcs[*depmgr.XDSConfig]{
		OnChanged:       func(cfg *depmgr.XDSConfig) { configs <- cfg }, // a complete configuration
		OnResourceError: func(err error) { log.Print(err) },             // stop using the last one
		OnAmbientError:  func(err error) { log.Print(err) },             // keep using it
	})
	defer m.Close() // before c.Close

	x := <-configs
	fmt.Printf("Listener %s → RouteConfiguration %s → virtual host %s\n", x.Listener.Name, x.RouteConfig.Name, x.VirtualHost.Name)
	for name, r := range x.Clusters() {
		if r.Err != nil {
			fmt.Printf("cluster %s: %v\n", name, r.Err)
			continue
		}
		var addrs []string
		for _, l := range r.Config.Endpoints.Localities {
			for _, ep := range l.Endpoints {
				addrs = append(addrs, ep.Addresses...)
			}
		}
		fmt.Printf("cluster %s → %s: %s\n", name, r.Config.Endpoints.ClusterName, strings.Join(addrs, " "))
	}
	// Output:
	// Listener svc → RouteConfiguration route-svc → virtual host route-svc-vh
	// cluster cluster-svc → eds-svc: 127.0.0.1:8080 127.0.0.1:8081
}
