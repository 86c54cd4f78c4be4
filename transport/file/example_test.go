// SPDX-License-Identifier: Apache-2.0

package file_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport/file"
	"github.com/proxyless/xds/watcher"
)

// listenersYAML is a DiscoveryResponse with one Listener, in YAML.
const listenersYAML = `type_url: type.googleapis.com/envoy.config.listener.v3.Listener
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: svc
  api_listener:
    api_listener:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      rds:
        route_config_name: route-svc
        config_source: {ads: {}}
      http_filters:
      - name: router
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`

// Example reads resources from a file instead of a management server: no
// bootstrap file, no server. Replacing the file (write a temporary file,
// rename it over) updates the watchers.
func Example() {
	dir, err := os.MkdirTemp("", "xds")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "listeners.yaml")
	if err := os.WriteFile(path, []byte(listenersYAML), 0o600); err != nil {
		log.Fatal(err)
	}

	cfg, b, err := file.Bootstrap(path)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	got := make(chan string, 1)
	defer client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{
		OnChanged:      func(l *resources.Listener) { got <- l.Name + " routes via " + l.RouteConfigName },
		OnAmbientError: func(err error) { log.Print(err) }, // a bad file: the last good value stays
	})()
	fmt.Println(<-got)
	// Output: svc routes via route-svc
}
