// SPDX-License-Identifier: Apache-2.0

package rest_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport/rest"
	"github.com/proxyless/xds/watcher"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Example polls a REST-JSON server: POST /v3/discovery:listeners with a
// JSON DiscoveryRequest, every 10 s (± 20 %), without gRPC.
func Example() {
	// A REST-JSON server with one Listener, version "1"; 304 when the
	// client has it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &v3discoverypb.DiscoveryRequest{}
		if err := protojson.Unmarshal(body, req); err != nil || r.URL.Path != "/v3/discovery:listeners" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if req.GetVersionInfo() == "1" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		b, _ := protojson.Marshal(&v3discoverypb.DiscoveryResponse{
			VersionInfo: "1",
			TypeUrl:     resources.ListenerType.TypeURL(),
			Resources:   []*anypb.Any{testutil.MarshalAny(testutil.Listener("svc", "route-svc"))},
		})
		w.Write(b)
	}))
	defer srv.Close()

	cfg, b, err := rest.Bootstrap(srv.URL, rest.WithInterval(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	cfg.Node.ID = "my-node"
	c, err := client.New(cfg, client.WithTransportBuilder(b))
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
