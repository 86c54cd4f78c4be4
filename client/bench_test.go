// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"
)

// BenchmarkE2E_1000Clusters measures, over gRPC on loopback against the
// testutil management server, the time from client.New to every watcher
// of 1,000 Clusters and their 1,000 ClusterLoadAssignments (3 endpoints
// each) having its first value.
func BenchmarkE2E_1000Clusters(b *testing.B) {
	const n = 1000
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	var res testutil.Resources
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("cluster-%04d", i)
		res.Clusters = append(res.Clusters, testutil.Cluster(names[i], "eds-"+names[i]))
		res.Endpoints = append(res.Endpoints, testutil.Endpoints("eds-"+names[i], "10.0.0.1", 8080, 8081, 8082))
	}
	ms.Update("", res)
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := client.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2 * n)
		var cancels []func()
		for _, name := range names {
			var once, onceE sync.Once
			cancels = append(cancels,
				client.Watch(c, resources.ClusterType, name, watcher.Funcs[*resources.Cluster]{
					OnChanged: func(*resources.Cluster) { once.Do(wg.Done) },
				}),
				client.Watch(c, resources.EndpointsType, "eds-"+name, watcher.Funcs[*resources.Endpoints]{
					OnChanged: func(*resources.Endpoints) { onceE.Do(wg.Done) },
				}))
		}
		wg.Wait()
		b.StopTimer()
		for _, cancel := range cancels {
			cancel()
		}
		c.Close()
		b.StartTimer()
	}
}
