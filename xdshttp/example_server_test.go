// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"context"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/xdshttp"
)

// An xDS-enabled net/http server: the bootstrap (GRPC_XDS_BOOTSTRAP)
// names server_listener_resource_name_template, and the management
// server sends the Listener of "0.0.0.0:8080".
func ExampleNewServer() {
	cfg, err := bootstrap.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello\n"))
	})
	srv, err := xdshttp.NewServer(c, mux,
		xdshttp.WithHTTPServer(&http.Server{ReadHeaderTimeout: 10 * time.Second}),
		xdshttp.WithServingModeCallback(func(addr net.Addr, mode xdshttp.ServingMode, err error) {
			log.Printf("%s is %s: %v", addr, mode, err)
		}))
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		if err := srv.ListenAndServe("0.0.0.0:8080"); err != http.ErrServerClosed {
			log.Print(err)
		}
	}()

	// … until the process is told to stop:
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}
