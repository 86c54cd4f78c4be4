// SPDX-License-Identifier: Apache-2.0

// Command mtls sends RPCs over mutual TLS configured by xDS (gRFC A29) to
// the backends of the xdsctl demo, in two commands:
//
//	go run ./cmd/xdsctl demo --mtls --bootstrap-out /tmp/b.json   # terminal 1
//	GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/mtls         # terminal 2
//
// The demo makes a CA and SPIFFE certificates, serves backends that
// require client certificates, and writes a bootstrap whose
// certificate_providers name the client's certificate and CA files (a
// file_watcher instance "demo"); its Clusters carry an UpstreamTlsContext
// that uses that instance and accepts only the backends' SPIFFE ID.
//
// This program reads the bootstrap from the environment, makes an xDS
// client, and a channel for xds:///svc with the module's resolver and its
// xDS credentials (plaintext for clusters without TLS). Each connection to
// a backend is then mutual TLS: the client verifies the backend's
// certificate and SPIFFE ID, the backend the client's. It makes RPCs and
// prints, for each, the backend that answered, the identity it proved and
// the client identity it saw. It exits 0 after 5 successful RPCs, 1 on a
// failure or after 20 s.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/xdsresolver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

// run makes the RPCs, printing what happens to out.
func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()

	cfg, err := bootstrap.FromEnv() // GRPC_XDS_BOOTSTRAP, as xdsctl demo --bootstrap-out wrote it
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close() // after cc.Close

	// DialOptions' credentials do the TLS each Cluster asks for (and
	// plaintext for clusters without a transport socket).
	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c)...)
	if err != nil {
		return err
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)

	for i := 1; i <= 5; i++ {
		var p peer.Peer
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.Peer(&p))
		rcancel()
		if err != nil {
			return fmt.Errorf("RPC %d: %w", i, err)
		}
		server := "(not TLS)"
		if info, ok := p.AuthInfo.(grpccreds.TLSInfo); ok && info.SPIFFEID != nil {
			server = info.SPIFFEID.String()
		}
		fmt.Fprintf(out, "RPC %d: answered by %s at %s, which proved it is %s and saw client %s\n",
			i, resp.GetServerId(), resp.GetHostname(), server, orNone(resp.GetUsername()))
		if resp.GetUsername() == "" {
			return fmt.Errorf("RPC %d: the backend saw no client certificate: is the demo running with --mtls?", i)
		}
	}
	fmt.Fprintln(out, "OK: mutual TLS from xDS")
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
