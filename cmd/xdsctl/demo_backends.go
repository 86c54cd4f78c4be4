// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/certs"
	"github.com/proxyless/xds/internal/xdsbackend"
	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/xdscreds"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

const (
	// defaultDemoBasePort is the default of demo --base-port: the
	// endpoints are 127.0.0.1:50051 to 50054 and 50061.
	defaultDemoBasePort = 50051
	// demoTrustDomain is the SPIFFE trust domain of demo --mtls.
	demoTrustDomain = "demo.example"
	// demoInstance is the certificate provider instance of demo --mtls in
	// the bootstraps, which the Clusters and the backends' Listeners name.
	demoInstance = "demo"
	// demoServerListenerTemplate is the backends'
	// server_listener_resource_name_template: grpc-go's default.
	demoServerListenerTemplate = "grpc/server?xds.resource.listening_address=%s"
	// demoServingTimeout bounds the wait for the backends' first
	// Listener, which takes one ADS round trip on loopback.
	demoServingTimeout = 20 * time.Second
)

// demoPorts are the ports of the demo's endpoints: the two first
// endpoints of eds-svc, the two ports between which the third one moves,
// and the endpoint of eds-svc-canary.
type demoPorts struct{ a, b, c, d, canary uint32 }

// demoBackends are the xDS-enabled gRPC servers (package server, gRFC
// A36) on the demo's endpoints. Each has an xDS client of its own of the
// demo's management server, as node demoBackendNode(id), whose snapshot
// is only its server-side Listener (demoServerListener); each serves
// grpc.health.v1.Health, grpc.testing.TestService, whose UnaryCall
// answers with the backend's name (server_id: "backend-1" to
// "backend-4", "canary"), its address (hostname) and the SPIFFE ID of
// the client's certificate (username), as xdsbackend.Backend does, and
// helloworld.Greeter (demoGreeter).
type demoBackends struct {
	ports demoPorts
	all   []*demoBackend
}

// demoBackend is one backend and its xDS client.
type demoBackend struct {
	node string // its node ID
	c    *client.Client
	b    *xdsbackend.Backend
}

// demoBackendNode is the node ID of the backend named id: the users'
// node ID (demoNodeID) gets the client-side mesh, so that xdsctl status
// shows it alone.
func demoBackendNode(id string) string { return demoNodeID + "-" + id }

// startDemoBackends starts a backend, fed by ms, on each demo port: base,
// base+1, base+2, base+3 and base+10, or free ports when base is 0, and
// gives each node its Listener: with sec (demo --mtls) a filter chain
// whose DownstreamTlsContext takes the backend's certificate and the
// roots of client certificates from the instance demoInstance and
// requires client certificates; without, a plaintext one. The backends
// are not serving until their Listeners arrive (see waitServing). It
// fails, naming the port, when one is taken.
func startDemoBackends(ms *mgmtserver.Server, base int, sec *demoMTLS) (*demoBackends, error) {
	type slot struct {
		port *uint32
		id   string
		off  int
	}
	db := &demoBackends{}
	slots := []slot{{&db.ports.a, "backend-1", 0}, {&db.ports.b, "backend-2", 1}, {&db.ports.c, "backend-3", 2}, {&db.ports.d, "backend-4", 3}, {&db.ports.canary, "canary", 10}}
	for _, s := range slots {
		addr := "127.0.0.1:0"
		if base != 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", base+s.off)
		}
		b, err := startDemoBackend(ms, addr, s.id, sec)
		if err != nil {
			db.stop()
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("serving the demo's endpoint %s: the port is in use (another demo?); --base-port chooses other ports, 0 free ones", addr)
			}
			return nil, fmt.Errorf("serving the demo's endpoint %s: %w", addr, err)
		}
		*s.port = b.b.Port
		db.all = append(db.all, b)
	}
	return db, nil
}

// startDemoBackend starts the backend id on addr and gives its node its
// Listener.
func startDemoBackend(ms *mgmtserver.Server, addr, id string, sec *demoMTLS) (*demoBackend, error) {
	node := demoBackendNode(id)
	raw, err := xdsbuild.WithServerListenerTemplate(ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: node}), demoServerListenerTemplate)
	if err == nil && sec != nil {
		raw, err = sec.backendBootstrap(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the bootstrap of %s: %w", id, err)
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing the bootstrap of %s: %w", id, err)
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the xDS client of %s: %w", id, err)
	}
	// The Listener's filter chain says whether a connection is TLS; the
	// fallback credentials serve chains without a DownstreamTlsContext.
	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		c.Close()
		return nil, err
	}
	b, err := xdsbackend.Start(c, xdsbackend.Options{
		Address:       addr,
		ID:            id,
		ServerOptions: []server.Option{server.WithServerOptions(grpc.Creds(creds))},
		Register:      func(s grpc.ServiceRegistrar) { registerDemoGreeter(s, id) },
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	db := &demoBackend{node: node, c: c, b: b}
	if err := ms.Update(node, mgmtserver.Resources{Listeners: []*v3listenerpb.Listener{db.listener(sec != nil)}}); err != nil {
		db.stop()
		return nil, fmt.Errorf("serving the Listener of %s: %w", id, err)
	}
	return db, nil
}

// listener returns the backend's server-side Listener: one filter chain
// that routes every RPC to the server (non_forwarding_action), with
// mutual TLS from demoInstance when mtls.
func (db *demoBackend) listener(mtls bool) *v3listenerpb.Listener {
	var tlsSocket *v3corepb.TransportSocket
	if mtls {
		tlsSocket = xdsbuild.DownstreamTLS(xdsbuild.DownstreamTLSOptions{
			IdentityInstance: demoInstance, RootInstance: demoInstance, RequireClientCertificate: true,
		})
	}
	return xdsbuild.ServerListener(db.b.Name(demoServerListenerTemplate), db.b.Address,
		xdsbuild.ServerFilterChain(xdsbuild.FilterChainOptions{Name: "demo", TLS: tlsSocket}))
}

// stop stops the server, then its client.
func (db *demoBackend) stop() {
	db.b.Stop()
	db.c.Close()
}

// waitServing waits until every backend serves its Listener, at most
// demoServingTimeout. It returns ctx's error when ctx is done first.
func (db *demoBackends) waitServing(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, demoServingTimeout)
	defer cancel()
	for _, b := range db.all {
		if err := b.b.WaitForMode(wctx, server.ServingModeServing); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the demo's backend %s (node %s) is not serving: %w", b.b.ID, b.node, err)
		}
	}
	return nil
}

// stop stops every backend.
func (db *demoBackends) stop() {
	for _, b := range db.all {
		b.stop()
	}
}

// demoMTLS is the certificates of demo --mtls, in a temporary directory
// that close removes.
type demoMTLS struct {
	mesh *certs.Mesh
}

// newDemoMTLS makes the mesh's certificates in a new temporary directory.
func newDemoMTLS() (*demoMTLS, error) {
	dir, err := os.MkdirTemp("", "xdsctl-demo-mtls-")
	if err != nil {
		return nil, fmt.Errorf("demo --mtls: %w", err)
	}
	mesh, err := certs.NewMesh(dir, demoTrustDomain)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("demo --mtls: making certificates: %w", err)
	}
	return &demoMTLS{mesh: mesh}, nil
}

// close removes the certificates.
func (m *demoMTLS) close() { os.RemoveAll(m.mesh.Dir) }

// bootstrap returns bootstrapJSON with the certificate provider instance
// of the demo's clients: a file_watcher of the client certificate and the
// CA.
func (m *demoMTLS) bootstrap(bootstrapJSON []byte) ([]byte, error) {
	return xdsbuild.WithCertificateProviders(bootstrapJSON, map[string]xdsbuild.FileWatcher{
		demoInstance: {CertificateFile: m.mesh.ClientCertFile, PrivateKeyFile: m.mesh.ClientKeyFile, CACertificateFile: m.mesh.CAFile},
	})
}

// backendBootstrap returns bootstrapJSON with the certificate provider
// instance of the demo's backends, of the same name: a file_watcher of
// the backend certificate and the CA.
func (m *demoMTLS) backendBootstrap(bootstrapJSON []byte) ([]byte, error) {
	return xdsbuild.WithCertificateProviders(bootstrapJSON, map[string]xdsbuild.FileWatcher{
		demoInstance: {CertificateFile: m.mesh.ServerCertFile, PrivateKeyFile: m.mesh.ServerKeyFile, CACertificateFile: m.mesh.CAFile},
	})
}

// tlsOptions are the UpstreamTlsContext of the demo's Clusters: roots and
// client certificate from the demo instance, and the backends' SPIFFE ID
// as the only accepted server identity.
func (m *demoMTLS) tlsOptions() xdsbuild.UpstreamTLSOptions {
	return xdsbuild.UpstreamTLSOptions{
		RootInstance: demoInstance, IdentityInstance: demoInstance,
		SubjectAltNames: []*v3matcherpb.StringMatcher{xdsbuild.ExactSAN(m.mesh.ID("backend"))},
	}
}
