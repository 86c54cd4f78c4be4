// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/csds"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
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
// JSON and YAML output is one ClientConfig per client, in order. It
// returns the exit status of status (statusVerdict) over the resources of
// every client: each TYPE/NAME argument must be ACKED in the clients that
// have it, and at least one must; without arguments, every resource must.
func runStatusCSDS(ctx context.Context, e *env, addr string, out outputFormat, args []string) error {
	var refs []resourceRef
	if len(args) > 0 {
		var err error
		if refs, err = parseResourceArgs(args); err != nil {
			return err
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
	var all []*v3statuspb.ClientConfig_GenericXdsConfig
	for i, cfg := range configs {
		if refs != nil {
			cfg.GenericXdsConfigs = slices.DeleteFunc(cfg.GenericXdsConfigs, func(g *v3statuspb.ClientConfig_GenericXdsConfig) bool {
				return !slices.ContainsFunc(refs, func(r resourceRef) bool { return r.matches(g) })
			})
		}
		all = append(all, cfg.GetGenericXdsConfigs()...)
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
		if err := formatStatusTable(e.stdout, cfg, nil, csdsOrigins(cfg)); err != nil {
			return err
		}
	}
	return statusVerdict(refs, all, csdsStale(all), 0)
}

// csdsStale returns the origins of the resources of gs as far as a dump
// read over CSDS tells them: no server (CSDS has no field for it), and
// stale when the resource is ACKED with an error_state that reports
// client.ErrStale, as this library's Client.Dump shows a value served from
// persistence.
func csdsStale(gs []*v3statuspb.ClientConfig_GenericXdsConfig) originFunc {
	stale := make(map[resourceKey]bool)
	for _, g := range gs {
		if g.GetClientStatus() == v3adminpb.ClientResourceStatus_ACKED &&
			strings.Contains(g.GetErrorState().GetDetails(), client.ErrStale.Error()) {
			stale[resourceKey{g.GetTypeUrl(), g.GetName()}] = true
		}
	}
	return func(typeURL, name string) (client.ResourceOrigin, bool) {
		if stale[resourceKey{typeURL, name}] {
			return client.ResourceOrigin{Stale: true}, true
		}
		return client.ResourceOrigin{}, false
	}
}

// csdsOrigins is csdsStale for the resources of one client's dump.
func csdsOrigins(cfg *v3statuspb.ClientConfig) originFunc {
	return csdsStale(cfg.GetGenericXdsConfigs())
}
