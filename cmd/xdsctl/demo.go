// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// defaultDemoInterval is the default of demo --interval.
const defaultDemoInterval = 2 * time.Second

var demoCommand = &command{
	name:     "demo",
	synopsis: "[--bootstrap-out FILE] [--mtls] [--base-port PORT] [--admin ADDR] [--duration D] [--interval D] [--delta] [-o text|json|yaml]",
	summary:  "serve a small mesh in-process, print its bootstrap, and watch its updates flow",
	help: `Demo starts an in-process management server serving a small mesh:

  Listener "svc"
    -> RouteConfiguration "route-svc": /helloworld.Greeter/ splits 90/10
       between two clusters, everything else goes to "cluster-svc"
    -> Clusters "cluster-svc" and "cluster-svc-canary" (EDS)
    -> ClusterLoadAssignments "eds-svc" (3 endpoints, 2 priorities)
       and "eds-svc-canary" (1 endpoint)

xDS-enabled gRPC servers (gRFC A36) serve the endpoints, on 127.0.0.1:50051
to 50054 and 50061 (--base-port PORT moves them to PORT.., 0 to free
ports). Each serves grpc.health.v1.Health; grpc.testing.TestService,
whose UnaryCall answers with the backend's name (backend-1 to backend-4,
canary); and helloworld.Greeter, whose SayHello answers "Hello NAME,
from BACKEND". Each has its own xDS client of the demo's management
server, as node xdsctl-demo-backend-1 to -4 or xdsctl-demo-canary, which
the server sends only that backend's server-side Listener,
"grpc/server?xds.resource.listening_address=127.0.0.1:PORT" (the
bootstraps' server_listener_resource_name_template). Every other node,
the demo's own client and yours (node xdsctl-demo) included, gets the
mesh above, so that "xdsctl status" shows it alone. To see what a
backend gets, name its node (ADDR is the management server's, printed
first; with --mtls this bootstrap lacks the certificate provider
instance the Listener names, so status shows it NACKED):

  xdsctl status --server ADDR --node xdsctl-demo-backend-1 'listener/*'

A backend accepts and closes connections (NOT_SERVING) until its
Listener arrives, which takes one round trip on loopback: the demo
prints its bootstrap once all five serve. A client that connects to one
before then sees its connection fail and gRPC's reconnect backoff (1s,
then longer); its RPCs go to the other backends, fail with UNAVAILABLE
if none is ready, or wait with grpc.WaitForReady. The bootstrap the
demo prints points at the server, so that a second terminal can look
at the mesh, or send RPCs through it, while the demo runs:

  xdsctl demo --bootstrap-out /tmp/b.json
  GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/grpc
  GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/watch
  xdsctl status --bootstrap /tmp/b.json 'listener/*'

examples/grpc makes RPCs through xds:///svc and prints which backend,
of which cluster, answered each: SayHello takes the 90/10 split,
UnaryCall the other route.

The mesh also has an HTTP service for package xdshttp's Transport:

  Listener "web"
    -> RouteConfiguration "route-web": requests with "x-canary: always"
       go to "cluster-web-canary"; the others split 90/10 between
       "cluster-web" and "cluster-web-canary", with a 5 s timeout and
       2 retries of 5xx answers and resets
    -> ClusterLoadAssignments "eds-web" (web-1, web-2) and
       "eds-web-canary" (web-canary)

served by plain net/http backends on 127.0.0.1:50071 to 50073 (--base-port
PORT: PORT+20..), which answer with their name and what they received.
examples/http sends requests to http://web through an xdshttp.Transport:

  GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/http

With --mtls the mesh uses mutual TLS configured by xDS (gRFC A29): the
demo makes a CA and SPIFFE certificates (spiffe://demo.example/backend
for the backends, spiffe://demo.example/client for clients) in a
temporary directory, removed when it stops; the bootstraps name a
file_watcher certificate provider instance "demo" in their
certificate_providers (the client's certificate in the one it prints,
the backend's in the backends'); the Clusters carry an
UpstreamTlsContext that uses it and accepts only the backends' SPIFFE
ID; and the backends' Listeners a DownstreamTlsContext that uses it and
requires client certificates. examples/grpc works unchanged (the
credentials of xdsresolver.DialOptions do the TLS), as does examples/http
(the HTTP backends serve TLS and require the client's certificate, which
the Transport presents from the cluster's UpstreamTlsContext), and
examples/mtls shows the identities:

  xdsctl demo --mtls --bootstrap-out /tmp/b.json
  GRPC_XDS_BOOTSTRAP=/tmp/b.json go run ./examples/mtls

--bootstrap-out FILE writes the bootstrap to FILE (replacing it); without
it, demo prints an export line for GRPC_XDS_BOOTSTRAP_CONFIG to paste.

The demo also creates a client of that server and resolves the Listener
as a gRPC channel does (gRFC A74, the same view as "xdsctl resolve"): each
time the whole tree is known, it prints it, from the Listener down to
every endpoint. Every --interval it changes an endpoint (flips the health
of one, moves another to a new port) so you can watch updates flow. It
runs until interrupted (Ctrl-C) or until --duration has passed, then
exits 0. With --delta its client speaks incremental xDS
(DeltaAggregatedResources); the server speaks both. With --output json or
yaml, each configuration is printed as "xdsctl resolve" prints it, and the
other messages go to stderr.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		duration := fs.Duration("duration", 0, "stop after this long; 0 means run until interrupted")
		interval := fs.Duration("interval", defaultDemoInterval, "how often an endpoint changes")
		delta := fs.Bool("delta", false, "the demo's own client speaks incremental (delta) xDS")
		bootstrapOut := fs.String("bootstrap-out", "", "write the bootstrap of the demo server to `FILE`, for GRPC_XDS_BOOTSTRAP or --bootstrap")
		admin := fs.String("admin", "", "also serve CSDS (gRFC A40) for the demo's client on this `address`, e.g. localhost:9901")
		mtls := fs.Bool("mtls", false, "secure the mesh with mutual TLS configured by xDS: certificates in a temporary directory, named by the bootstrap's certificate_providers; backends that require client certificates")
		basePort := fs.Int("base-port", defaultDemoBasePort, "serve the endpoints on 127.0.0.1 at `PORT` to PORT+3 and PORT+10; 0 picks free ports")
		out := registerOutput(fs)
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected arguments %q", args)
			}
			if *duration < 0 {
				return usageErrorf("--duration must not be negative, got %v", *duration)
			}
			if *interval <= 0 {
				return usageErrorf("--interval must be positive, got %v", *interval)
			}
			if *basePort < 0 || *basePort > 65535-10 {
				return usageErrorf("--base-port must be 0 or a port up to %d, got %d", 65535-10, *basePort)
			}
			return runDemo(ctx, e, demoOptions{
				duration: *duration, interval: *interval, delta: *delta, bootstrapOut: *bootstrapOut, admin: *admin, out: *out,
				mtls: *mtls, basePort: *basePort,
			})
		}
	},
}

// The names of the demo mesh. The README's snippets use them.
const (
	demoNodeID        = "xdsctl-demo"
	demoListener      = "svc"
	demoRoute         = "route-svc"
	demoCluster       = "cluster-svc"
	demoCanaryCluster = "cluster-svc-canary"
	demoEDS           = "eds-svc"
	demoCanaryEDS     = "eds-svc-canary"
)

// demoOptions are the flags of demo.
type demoOptions struct {
	duration, interval time.Duration
	delta              bool
	bootstrapOut       string // "" prints an export line instead
	admin              string // "" serves no CSDS
	out                outputFormat
	mtls               bool // mutual TLS configured by xDS
	basePort           int  // the first endpoint's port; 0 for free ports
}

// runDemo implements the demo command.
func runDemo(ctx context.Context, e *env, o demoOptions) error {
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	var sec *demoMTLS
	if o.mtls {
		var err error
		if sec, err = newDemoMTLS(); err != nil {
			return err
		}
		defer sec.close()
	}
	// The request log is never read: OnRequest keeps it from growing for
	// as long as the demo runs.
	ms, err := mgmtserver.Start(mgmtserver.Options{OnRequest: func(*mgmtserver.Request) {}})
	if err != nil {
		return fmt.Errorf("starting the demo management server: %w", err)
	}
	defer ms.Stop()
	backends, err := startDemoBackends(ms, o.basePort, sec)
	if err != nil {
		return err
	}
	defer backends.stop()
	web, err := startDemoWeb(o.basePort, sec)
	if err != nil {
		return err
	}
	defer web.stop()
	mesh := newDemoMesh(backends.ports, sec)
	mesh.webPorts = web.ports
	if err := ms.Update("", mesh.resources()); err != nil {
		return fmt.Errorf("serving the demo mesh: %w", err)
	}
	// The bootstrap is printed once the backends serve, so that a second
	// terminal never finds them NOT_SERVING.
	if err := backends.waitServing(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return err
	}

	bootstrapJSON := ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: demoNodeID})
	if sec != nil {
		if bootstrapJSON, err = sec.bootstrap(bootstrapJSON); err != nil {
			return fmt.Errorf("writing the demo bootstrap: %w", err)
		}
	}
	cfg, err := bootstrap.Parse(bootstrapJSON)
	if err != nil {
		return fmt.Errorf("parsing the demo bootstrap: %w", err)
	}
	var opts []client.Option
	if o.delta {
		opts = append(opts, client.WithDelta())
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		return fmt.Errorf("creating the xDS client: %w", err)
	}
	defer c.Close()
	// People read the banner and the change notes; with a structured
	// format, stdout carries only the configurations.
	notes := e.stdout
	if o.out.structured() {
		notes = e.stderr
	}
	stopAdmin, err := serveCSDS(notes, o.admin, c)
	if err != nil {
		return err
	}
	defer stopAdmin()

	fmt.Fprintf(notes, "xdsctl demo: management server on %s, serving Listener %q to every node but the backends'.\n", ms.Address(), demoListener)
	p := backends.ports
	fmt.Fprintf(notes, "xDS-enabled gRPC backends (grpc.health.v1.Health, grpc.testing.TestService, helloworld.Greeter) on 127.0.0.1 ports %d, %d, %d, %d and %d:\n", p.a, p.b, p.c, p.d, p.canary)
	fmt.Fprintf(notes, "  each serves the Listener %q that the management server gives its node (%s to -4, %s).\n",
		bootstrap.ExpandTemplate(demoServerListenerTemplate, "127.0.0.1:PORT"), demoBackendNode("backend-1"), demoBackendNode("canary"))
	fmt.Fprintf(notes, "HTTP backends (%s) on 127.0.0.1 ports %d, %d and %d: Listener %q routes http://%s to them, 90/10 (\"x-canary: always\": all to %s), for xdshttp.NewTransport (examples/http).\n",
		strings.Join(demoWebNames, ", "), web.ports[0], web.ports[1], web.ports[2], demoWebListener, demoWebListener, demoWebNames[2])
	if sec != nil {
		fmt.Fprintf(notes, "mTLS: certificates in %s; backends are %s and their Listeners require client certificates; clients are %s (certificate_providers instance %q).\n",
			sec.mesh.Dir, sec.mesh.ID("backend"), sec.mesh.ID("client"), demoInstance)
	}
	if err := announceBootstrap(notes, bootstrapJSON, o.bootstrapOut, o.mtls); err != nil {
		return err
	}
	fmt.Fprintf(notes, "Resolving Listener %q: every complete configuration is printed; an endpoint changes every %v. Ctrl-C to stop.\n\n", demoListener, o.interval)
	var writeErr error // set by the Manager's Watcher goroutine; read after m.Close
	write := func(b []byte) {
		if writeErr == nil {
			if _, err := e.stdout.Write(b); err != nil {
				writeErr = fmt.Errorf("writing output: %w", err)
			}
		}
	}
	m := depmgr.New(c, demoListener, watcher.Funcs[*depmgr.XDSConfig]{
		OnChanged: func(cfg *depmgr.XDSConfig) {
			b, err := formatConfig(o.out, cfg, e.now())
			if err != nil {
				b = formatConfigError(o.out, "error", err, e.now())
			} else if !o.out.structured() {
				b = append(b, '\n')
			}
			write(b)
		},
		OnResourceError: func(err error) { write(formatConfigError(o.out, "error", err, e.now())) },
		OnAmbientError:  func(err error) { write(formatConfigError(o.out, "ambient_error", err, e.now())) },
	})
	defer m.Close()

	ticker := time.NewTicker(o.interval)
	defer ticker.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-ticker.C:
			what := mesh.step()
			fmt.Fprintf(notes, "[%s] demo: the management server changes %s (version %s)\n",
				e.now().Format(time.TimeOnly), what, mesh.version())
			if err := ms.Update("", mesh.resources()); err != nil {
				return fmt.Errorf("serving the demo mesh: %w", err)
			}
		}
	}
	m.Close() // waits for a Watcher method in progress, so writeErr is settled
	if writeErr != nil {
		return writeErr
	}
	fmt.Fprintf(notes, "xdsctl demo: stopped after %d updates.\n", mesh.steps)
	return nil
}

// announceBootstrap writes the bootstrap to file, when given, and tells
// how a second terminal uses it.
func announceBootstrap(w io.Writer, bootstrapJSON []byte, file string, mtls bool) error {
	examples := []string{"./examples/grpc", "./examples/http", "./examples/watch"}
	if mtls {
		examples[2] = "./examples/mtls"
	}
	if file != "" {
		if err := os.WriteFile(file, append(bootstrapJSON, '\n'), 0o644); err != nil {
			return fmt.Errorf("--bootstrap-out: %w", err)
		}
		q := shellQuote(file)
		fmt.Fprintf(w, "Bootstrap written to %s. In another terminal:\n", file)
		for _, example := range examples {
			fmt.Fprintf(w, "  GRPC_XDS_BOOTSTRAP=%s go run %s\n", q, example)
		}
		fmt.Fprintf(w, "  xdsctl status --bootstrap %s 'listener/*'\n", q)
		fmt.Fprintf(w, "  xdsctl resolve --bootstrap %s %s\n", q, demoListener)
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, bootstrapJSON); err != nil {
		return fmt.Errorf("compacting the demo bootstrap: %w", err)
	}
	fmt.Fprintf(w, "Its bootstrap, for another terminal (or use --bootstrap-out FILE):\n")
	fmt.Fprintf(w, "  export GRPC_XDS_BOOTSTRAP_CONFIG=%s\n", shellQuote(compact.String()))
	for _, example := range examples {
		fmt.Fprintf(w, "  go run %s\n", example)
	}
	fmt.Fprintf(w, "  xdsctl status 'listener/*'\n")
	return nil
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// demoEndpoint is one endpoint of the demo mesh.
type demoEndpoint struct {
	port     uint32
	health   v3corepb.HealthStatus
	locality *v3corepb.Locality
	priority uint32
}

// demoMesh is the state of the demo mesh; step changes it.
type demoMesh struct {
	steps     int            // how many times step was called
	endpoints []demoEndpoint // of demoEDS
	ports     demoPorts
	webPorts  []uint32  // of the HTTP backends; nil for none
	sec       *demoMTLS // nil: plaintext clusters
}

var (
	demoEast = &v3corepb.Locality{Region: "us-east1", Zone: "us-east1-b"}
	demoWest = &v3corepb.Locality{Region: "us-west1", Zone: "us-west1-a"}
)

// newDemoMesh returns the mesh on ports; with sec, its Clusters use
// mutual TLS.
func newDemoMesh(ports demoPorts, sec *demoMTLS) *demoMesh {
	return &demoMesh{ports: ports, sec: sec, endpoints: []demoEndpoint{
		{port: ports.a, health: v3corepb.HealthStatus_HEALTHY, locality: demoEast},
		{port: ports.b, health: v3corepb.HealthStatus_HEALTHY, locality: demoEast},
		{port: ports.c, health: v3corepb.HealthStatus_HEALTHY, locality: demoWest, priority: 1},
	}}
}

// version is the version_info of the mesh's current resources.
func (m *demoMesh) version() string { return strconv.Itoa(m.steps + 1) }

// step changes one endpoint and describes the change: odd steps flip the
// health of the second endpoint, even steps move the third one to the
// other of two ports.
func (m *demoMesh) step() string {
	m.steps++
	if m.steps%2 == 1 {
		ep := &m.endpoints[1]
		if ep.health == v3corepb.HealthStatus_HEALTHY {
			ep.health = v3corepb.HealthStatus_UNHEALTHY
		} else {
			ep.health = v3corepb.HealthStatus_HEALTHY
		}
		return fmt.Sprintf("the health of 127.0.0.1:%d in %q to %s", ep.port, demoEDS, ep.health)
	}
	ep := &m.endpoints[2]
	old := ep.port
	if ep.port == m.ports.c {
		ep.port = m.ports.d
	} else {
		ep.port = m.ports.c
	}
	return fmt.Sprintf("the port of 127.0.0.1:%d in %q to %d", old, demoEDS, ep.port)
}

// resources returns the mesh as a snapshot.
func (m *demoMesh) resources() mgmtserver.Resources {
	clusters := []*v3clusterpb.Cluster{xdsbuild.Cluster(demoCluster, demoEDS), xdsbuild.Cluster(demoCanaryCluster, demoCanaryEDS)}
	if m.sec != nil {
		for _, c := range clusters {
			xdsbuild.WithUpstreamTLS(c, m.sec.tlsOptions())
		}
	}
	r := mgmtserver.Resources{
		Version:   m.version(),
		Listeners: []*v3listenerpb.Listener{xdsbuild.Listener(demoListener, demoRoute)},
		Routes:    []*v3routepb.RouteConfiguration{demoRouteConfig()},
		Clusters:  clusters,
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			demoAssignment(demoEDS, m.endpoints),
			demoAssignment(demoCanaryEDS, []demoEndpoint{{port: m.ports.canary, health: v3corepb.HealthStatus_HEALTHY, locality: demoEast}}),
		},
	}
	if m.webPorts != nil {
		l, rc, cs, eps := demoWebResources(m.webPorts, m.sec)
		r.Listeners = append(r.Listeners, l...)
		r.Routes = append(r.Routes, rc...)
		r.Clusters = append(r.Clusters, cs...)
		r.Endpoints = append(r.Endpoints, eps...)
	}
	return r
}

// demoRouteConfig routes /helloworld.Greeter/ 90/10 between the two
// clusters, and everything else to demoCluster.
func demoRouteConfig() *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{
		Name: demoRoute,
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    "svc",
			Domains: []string{demoListener},
			Routes: []*v3routepb.Route{
				{
					Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/helloworld.Greeter/"}},
					Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
						ClusterSpecifier: &v3routepb.RouteAction_WeightedClusters{WeightedClusters: &v3routepb.WeightedCluster{
							Clusters: []*v3routepb.WeightedCluster_ClusterWeight{
								{Name: demoCluster, Weight: wrapperspb.UInt32(90)},
								{Name: demoCanaryCluster, Weight: wrapperspb.UInt32(10)},
							},
						}},
					}},
				},
				{
					Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
					Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
						ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: demoCluster},
					}},
				},
			},
		}},
	}
}

// demoAssignment returns the ClusterLoadAssignment name of eps, grouped by
// locality and priority in the order of eps.
func demoAssignment(name string, eps []demoEndpoint) *v3endpointpb.ClusterLoadAssignment {
	cla := &v3endpointpb.ClusterLoadAssignment{ClusterName: name}
	var last *v3endpointpb.LocalityLbEndpoints
	for _, ep := range eps {
		if last == nil || last.GetLocality() != ep.locality || last.GetPriority() != ep.priority {
			last = &v3endpointpb.LocalityLbEndpoints{
				Locality:            ep.locality,
				Priority:            ep.priority,
				LoadBalancingWeight: wrapperspb.UInt32(1),
			}
			cla.Endpoints = append(cla.Endpoints, last)
		}
		last.LbEndpoints = append(last.LbEndpoints, &v3endpointpb.LbEndpoint{
			HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
				Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
					Address:       "127.0.0.1",
					PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: ep.port},
				}}},
			}},
			HealthStatus:        ep.health,
			LoadBalancingWeight: wrapperspb.UInt32(1),
		})
	}
	return cla
}
