// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// ExampleWatchAll watches every Cluster the management server has for the
// node, over incremental (delta) xDS: each arrives through ResourceChanged,
// and one the server deletes through ResourceError.
func ExampleWatchAll() {
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ms.Stop()
	ms.Update("", testutil.Resources{Clusters: namedClusters("blue", "green")})

	// The "delta_ads" server feature selects delta for this server;
	// client.WithDelta() would select it for every server.
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{ServerFeatures: []string{bootstrap.FeatureDeltaADS}}))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	events := make(chan string, 10)
	cancel := client.WatchAll(c, resources.ClusterType, watcher.Funcs[*resources.Cluster]{
		OnChanged: func(cl *resources.Cluster) { events <- "cluster " + cl.Name },
		OnResourceError: func(err error) {
			var re *client.ResourceError
			if errors.As(err, &re) && errors.Is(err, client.ErrResourceNotFound) {
				events <- "deleted " + re.Name
			}
		},
	})
	defer cancel()
	fmt.Println(<-events)
	fmt.Println(<-events)
	ms.Update("", testutil.Resources{Clusters: namedClusters("blue")})
	fmt.Println(<-events)
	// Output:
	// cluster blue
	// cluster green
	// deleted green
}
