// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/csds"

	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// csdsTimeout bounds status --csds: connecting and fetching.
const csdsTimeout = 10 * time.Second

// serveCSDS serves CSDS (gRFC A40) for c on addr, for demo --admin, and
// prints where on notes. It does nothing when addr is "". The returned
// function stops the server and waits for it.
func serveCSDS(notes io.Writer, addr string, c *client.Client) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin: %w", err)
	}
	s := grpc.NewServer()
	csds.Register(s, c)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis) // returns when Stop is called
	}()
	fmt.Fprintf(notes, "xdsctl demo: serving CSDS on %s (try: xdsctl status --csds %s).\n", lis.Addr(), lis.Addr())
	return func() {
		s.Stop()
		<-done
	}, nil
}

// runStatusCSDS implements status --csds: it fetches the client status of
// the process serving CSDS at addr (this library's csds package, grpc-go,
// grpc-java, ...) and prints each client's dump as status does its own,
// limited to the TYPE/NAME arguments when there are any. With several
// clients, a "# client_scope (node ID)" line comes before each text table;
// JSON and YAML output is one ClientConfig per client, in order.
func runStatusCSDS(ctx context.Context, e *env, addr string, out outputFormat, args []string) error {
	var keep map[resourceKey]bool
	if len(args) > 0 {
		refs, err := parseResourceArgs(args)
		if err != nil {
			return err
		}
		keep = make(map[resourceKey]bool, len(refs))
		for _, r := range refs {
			keep[r.key()] = true
		}
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("--csds %s: %w", addr, err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, csdsTimeout)
	defer cancel()
	resp, err := v3statuspb.NewClientStatusDiscoveryServiceClient(cc).FetchClientStatus(ctx, &v3statuspb.ClientStatusRequest{})
	if err != nil {
		return fmt.Errorf("fetching the client status from %s: %w", addr, err)
	}
	configs := resp.GetConfig()
	for i, cfg := range configs {
		if keep != nil {
			gs := cfg.GetGenericXdsConfigs()[:0]
			for _, g := range cfg.GetGenericXdsConfigs() {
				if keep[resourceKey{g.GetTypeUrl(), g.GetName()}] {
					gs = append(gs, g)
				}
			}
			cfg.GenericXdsConfigs = gs
		}
		if out.structured() {
			b, err := formatStatusStructured(out, cfg, nil)
			if err != nil {
				return err
			}
			if _, err := e.stdout.Write(b); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
			continue
		}
		if len(configs) > 1 {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "# %s (node %q)\n", cell(cfg.GetClientScope()), cfg.GetNode().GetId())
		}
		if err := formatStatusTable(e.stdout, cfg, nil, nil); err != nil {
			return err
		}
	}
	return nil
}
