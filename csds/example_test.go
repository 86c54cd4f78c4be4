// SPDX-License-Identifier: Apache-2.0

package csds_test

import (
	"log"
	"net"

	"google.golang.org/grpc"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/csds"
)

// Example serves CSDS for an xDS client on an admin port, where grpcdebug
// or `xdsctl status --csds ADDR` can read it.
func Example() {
	cfg, err := bootstrap.FromEnv()
	if err != nil {
		log.Print(err)
		return
	}
	c, err := client.New(cfg)
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()

	admin := grpc.NewServer()
	csds.Register(admin, c)
	lis, err := net.Listen("tcp", "localhost:9901")
	if err != nil {
		log.Print(err)
		return
	}
	go admin.Serve(lis)
	defer admin.Stop()
}
