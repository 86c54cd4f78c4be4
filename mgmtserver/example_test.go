// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"context"
	"fmt"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// A client watches a Listener served by an in-memory management server,
// and the program checks the client's ACK.
func ExampleServer() {
	ms, err := mgmtserver.Start(mgmtserver.Options{InMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ms.Stop()
	if err := ms.Update("", xdsbuild.Chain(xdsbuild.ChainOptions{Listener: "svc"})); err != nil {
		fmt.Println(err)
		return
	}

	cfg, err := bootstrap.Parse(ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: "n1"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(cfg, client.WithTransportBuilder(ms.TransportBuilder()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	got := make(chan *resources.Listener, 1)
	defer client.Watch(c, resources.ListenerType, "svc", watcher.Funcs[*resources.Listener]{
		OnChanged: func(l *resources.Listener) { got <- l },
	})()
	fmt.Println("route config:", (<-got).RouteConfigName)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := ms.WaitForRequest(ctx, func(r *mgmtserver.Request) bool {
		return r.Req.GetTypeUrl() == resources.ListenerTypeURL && r.Req.GetResponseNonce() != ""
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("ACK from %s: version %q, names %v, error %v\n",
		ack.Node.GetId(), ack.Req.GetVersionInfo(), ack.Req.GetResourceNames(), ack.Req.GetErrorDetail())
	// Output:
	// route config: route-svc
	// ACK from n1: version "1", names [svc], error <nil>
}
