// SPDX-License-Identifier: Apache-2.0

package mixed_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport/mixed"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Example takes the Listener and RouteConfiguration from files and the
// Cluster and its endpoints from a management server over per-type
// streams, chosen by the bootstrap: "file://" for the top-level server,
// "xds_per_type" for the authority "mgmt" that serves the xdstp names.
func Example() {
	const cluster = "xdstp://mgmt/envoy.config.cluster.v3.Cluster/c1"
	const eds = "xdstp://mgmt/envoy.config.endpoint.v3.ClusterLoadAssignment/e1"
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ms.Stop()
	ms.Update("", testutil.Resources{
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster(cluster, eds)},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints(eds, "10.0.0.1", 8080)},
	})

	dir, err := os.MkdirTemp("", "xds")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for name, resp := range map[string]*v3discoverypb.DiscoveryResponse{
		"lds.json": {TypeUrl: "type.googleapis.com/envoy.config.listener.v3.Listener",
			Resources: []*anypb.Any{testutil.MarshalAny(testutil.Listener("svc", "route-svc"))}},
		"rds.json": {TypeUrl: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
			Resources: []*anypb.Any{testutil.MarshalAny(testutil.RouteConfig("route-svc", "svc", cluster))}},
	} {
		b, err := protojson.Marshal(resp)
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			log.Fatal(err)
		}
	}

	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{
		"xds_servers": [{"server_uri": "file://%s", "channel_creds": [{"type": "insecure"}]}],
		"authorities": {"mgmt": {"xds_servers": [{"server_uri": %q,
			"channel_creds": [{"type": "insecure"}], "server_features": ["xds_per_type"]}]}}
	}`, dir, ms.Address()))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(mixed.NewBuilder()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	configs := make(chan *depmgr.XDSConfig, 1)
	m := depmgr.New(c, "svc", watcher.Funcs[*depmgr.XDSConfig]{
		OnChanged:       func(cfg *depmgr.XDSConfig) { configs <- cfg },
		OnResourceError: func(err error) { log.Print(err) },
	})
	defer m.Close()
	x := <-configs
	r := x.Cluster(cluster)
	fmt.Println(x.Listener.Name, "→", x.RouteConfig.Name, "→", r.Config.Endpoints.Localities[0].Endpoints[0].Addresses[0])
	// Output: svc → route-svc → 10.0.0.1:8080
}
