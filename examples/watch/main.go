// SPDX-License-Identifier: Apache-2.0

// Command watch is the README's quick start: it watches the Listener "svc"
// and the ClusterLoadAssignment "eds-svc" of the management server named
// by the bootstrap in GRPC_XDS_BOOTSTRAP (a file) or
// GRPC_XDS_BOOTSTRAP_CONFIG (the JSON itself), and prints every update
// until interrupted (Ctrl-C), then exits 0. Against the demo:
//
//	go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json   # terminal 1
//	GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/watch # terminal 2
//
// The demo changes an endpoint of "eds-svc" every 2 s, so updates keep
// coming. --listener and --endpoints name other resources.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

func main() {
	listener := flag.String("listener", "svc", "the Listener to watch")
	endpoints := flag.String("endpoints", "eds-svc", "the ClusterLoadAssignment to watch")
	flag.Parse()

	cfg, err := bootstrap.FromEnv() // GRPC_XDS_BOOTSTRAP (file) or GRPC_XDS_BOOTSTRAP_CONFIG (JSON)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, *listener, *endpoints); err != nil {
		log.Fatal(err)
	}
}

// run watches the Listener and the ClusterLoadAssignment with a client of
// cfg, printing every event to out, until ctx is done.
func run(ctx context.Context, cfg *bootstrap.Config, out io.Writer, listener, endpoints string) error {
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close() // waits for every goroutine the client started

	// Watcher methods run one at a time, on the client's goroutine.
	cancelL := client.Watch(c, resources.ListenerType, listener, watcher.Funcs[*resources.Listener]{
		OnChanged: func(l *resources.Listener) {
			fmt.Fprintf(out, "Listener %s: routes via %q\n", l.Name, l.RouteConfigName)
		},
		OnResourceError: func(err error) { fmt.Fprintln(out, "resource error:", err) }, // stop using the old value
		OnAmbientError:  func(err error) { fmt.Fprintln(out, "ambient error:", err) },  // keep using it
	})
	defer cancelL()

	cancelE := client.Watch(c, resources.EndpointsType, endpoints, watcher.Funcs[*resources.Endpoints]{
		OnChanged: func(e *resources.Endpoints) {
			var eps []string
			for _, l := range e.Localities {
				for _, ep := range l.Endpoints {
					eps = append(eps, fmt.Sprintf("%s (%s, priority %d)", strings.Join(ep.Addresses, ","), ep.HealthStatus, l.Priority))
				}
			}
			fmt.Fprintf(out, "ClusterLoadAssignment %s: %s\n", e.ClusterName, strings.Join(eps, ", "))
		},
		OnResourceError: func(err error) { fmt.Fprintln(out, "resource error:", err) },
		OnAmbientError:  func(err error) { fmt.Fprintln(out, "ambient error:", err) },
	})
	defer cancelE()

	<-ctx.Done() // Ctrl-C
	return nil
}
