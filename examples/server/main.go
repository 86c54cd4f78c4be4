// SPDX-License-Identifier: Apache-2.0

// Command server runs an xDS-enabled gRPC server (package server, gRFC
// A36): its listening address, mutual TLS and RBAC authorization come
// from the management server.
//
// Without flags it is a self-contained tour, in one process:
//
//	go run ./examples/server
//
// It starts a management server (package mgmtserver) and a SPIFFE mesh of
// certificates, then an xDS-enabled server on 127.0.0.1 whose bootstrap
// names a file_watcher certificate provider "mesh" (the server's
// certificate and the mesh CA) and the Listener template
// "grpc/server?xds.resource.listening_address=%s". It prints what
// happens as the management server gives the server its Listener (mTLS,
// an RBAC filter allowing only spiffe://example.org/client), as clients
// with several identities call it, and as the Listener is deleted. It
// exits 0 when every outcome is the expected one.
//
// With --serve ADDR it serves grpc.testing.TestService on ADDR with the
// Listener of the management server named by GRPC_XDS_BOOTSTRAP (whose
// bootstrap must have server_listener_resource_name_template; Istio's
// agent writes one for proxyless workloads), printing each serving mode
// change, until interrupted:
//
//	GRPC_XDS_BOOTSTRAP=/etc/istio/proxy/grpc-bootstrap.json go run ./examples/server --serve 0.0.0.0:8080
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/certs"
	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/xdscreds"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

func main() {
	serve := flag.String("serve", "", "serve on this `address` with GRPC_XDS_BOOTSTRAP's management server, until interrupted")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *serve != "" {
		err = serveAddress(ctx, *serve, os.Stdout)
	} else {
		err = tour(ctx, os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// service answers UnaryCall with the client's SPIFFE ID.
type service struct {
	testgrpc.UnimplementedTestServiceServer
}

func (service) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	resp := &testgrpc.SimpleResponse{}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(grpccreds.TLSInfo); ok && info.SPIFFEID != nil {
			resp.Username = info.SPIFFEID.String()
		}
	}
	return resp, nil
}

// newServer returns an xDS-enabled server of c serving service, with the
// xDS server credentials (plaintext for filter chains without TLS), that
// tells mode changes to modes.
func newServer(c *client.Client, modes func(server.ServingMode, error)) (*server.GRPCServer, error) {
	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		return nil, err
	}
	srv, err := server.NewGRPCServer(c,
		server.WithServerOptions(grpc.Creds(creds)),
		server.WithServingModeCallback(func(_ net.Addr, mode server.ServingMode, err error) { modes(mode, err) }))
	if err != nil {
		return nil, err
	}
	testgrpc.RegisterTestServiceServer(srv, service{})
	return srv, nil
}

// printMode returns a serving mode callback that prints each change, with
// its reason, after indent, and sends it on modes if not nil.
func printMode(out io.Writer, indent string, modes chan<- server.ServingMode) func(server.ServingMode, error) {
	return func(mode server.ServingMode, err error) {
		fmt.Fprintf(out, "%sserving mode: %s", indent, mode)
		if err != nil {
			fmt.Fprintf(out, " (%v)", err)
		}
		fmt.Fprintln(out)
		if modes != nil {
			modes <- mode
		}
	}
}

// serveAddress serves addr with the bootstrap of the environment until ctx
// is done.
func serveAddress(ctx context.Context, addr string, out io.Writer) error {
	cfg, err := bootstrap.FromEnv()
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	srv, err := newServer(c, printMode(out, "", nil))
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "serving %s with Listener %q\n", lis.Addr(), bootstrap.ExpandTemplate(cfg.ServerListenerResourceNameTemplate, lis.Addr().String()))
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	return srv.Serve(lis)
}

// tour runs the self-contained tour, printing to out.
func tour(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "xds-server-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	mesh, err := certs.NewMesh(dir, "example.org")
	if err != nil {
		return err
	}

	// The management server, and a bootstrap with the server's Listener
	// template and its certificates.
	ms, err := mgmtserver.Start(mgmtserver.Options{})
	if err != nil {
		return err
	}
	defer ms.Stop()
	const template = "grpc/server?xds.resource.listening_address=%s"
	raw, err := xdsbuild.WithCertificateProviders(ms.Bootstrap(mgmtserver.BootstrapOptions{}), map[string]xdsbuild.FileWatcher{
		"mesh": {CertificateFile: mesh.ServerCertFile, PrivateKeyFile: mesh.ServerKeyFile, CACertificateFile: mesh.CAFile},
	})
	if err != nil {
		return err
	}
	if raw, err = xdsbuild.WithServerListenerTemplate(raw, template); err != nil {
		return err
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()

	modes := make(chan server.ServingMode, 10)
	srv, err := newServer(c, printMode(out, "  ", modes))
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		<-served
	}()
	addr := lis.Addr().String()
	name := bootstrap.ExpandTemplate(template, addr)
	waitMode := func(want server.ServingMode) error {
		select {
		case m := <-modes:
			if m != want {
				return fmt.Errorf("serving mode %s, want %s", m, want)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for serving mode %s: %w", want, ctx.Err())
		}
	}

	// Clients: the allowed identity, an intruder of the same mesh, and a
	// TLS client without a certificate.
	identity := func(id string) (*certs.Leaf, error) { return mesh.CA.Issue(certs.Options{SPIFFEID: mesh.ID(id)}) }
	client1, err := identity("client")
	if err != nil {
		return err
	}
	intruder, err := identity("intruder")
	if err != nil {
		return err
	}
	call := func(who string, leaf *certs.Leaf, want codes.Code) error {
		cfg := &tls.Config{RootCAs: certs.Pool(mesh.CA), ServerName: "localhost"}
		if leaf != nil {
			cfg.Certificates = []tls.Certificate{leaf.TLS}
		}
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(grpccreds.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer cc.Close()
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(rctx, &testgrpc.SimpleRequest{})
		switch {
		case err == nil:
			fmt.Fprintf(out, "  %s: OK, the server saw %s\n", who, resp.GetUsername())
		default:
			fmt.Fprintf(out, "  %s: %s\n", who, status.Code(err))
		}
		if got := status.Code(err); got != want {
			return fmt.Errorf("%s: %v, want %s", who, err, want)
		}
		return nil
	}

	fmt.Fprintf(out, "1. The server listens on %s and waits for its Listener %q.\n", addr, name)
	if err := call("a client, before the Listener", client1, codes.Unavailable); err != nil {
		return err
	}

	fmt.Fprintln(out, "2. The management server sends it: mTLS with the instance \"mesh\", RBAC allowing "+mesh.ID("client")+".")
	chain := xdsbuild.ServerFilterChain(xdsbuild.FilterChainOptions{
		TLS: xdsbuild.DownstreamTLS(xdsbuild.DownstreamTLSOptions{IdentityInstance: "mesh", RootInstance: "mesh", RequireClientCertificate: true}),
		HTTPFilters: []*v3httppb.HttpFilter{xdsbuild.RBACFilter("envoy.filters.http.rbac",
			xdsbuild.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"allow-client": {mesh.ID("client")}}))},
	})
	if err := ms.Update("", mgmtserver.Resources{Listeners: []*v3listenerpb.Listener{xdsbuild.ServerListener(name, addr, chain)}}); err != nil {
		return err
	}
	if err := waitMode(server.ServingModeServing); err != nil {
		return err
	}
	if err := call(mesh.ID("client"), client1, codes.OK); err != nil {
		return err
	}
	if err := call(mesh.ID("intruder"), intruder, codes.PermissionDenied); err != nil {
		return err
	}
	if err := call("a client without a certificate", nil, codes.Unavailable); err != nil {
		return err
	}

	fmt.Fprintln(out, "3. The management server deletes the Listener.")
	if err := ms.Update("", mgmtserver.Resources{}); err != nil {
		return err
	}
	if err := waitMode(server.ServingModeNotServing); err != nil {
		return err
	}
	if err := call(mesh.ID("client"), client1, codes.Unavailable); err != nil {
		return errors.Join(err, errors.New("the server still serves without its Listener"))
	}
	fmt.Fprintln(out, "Done.")
	return nil
}
