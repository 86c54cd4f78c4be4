// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	// The demo runs the library's test management server in-process: that
	// is its purpose, so this is the one non-test file that imports
	// testutil.
	"github.com/proxyless/xds/testutil"

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
	synopsis: "[--duration D] [--interval D] [--delta]",
	summary:  "run a small mesh in-process and watch its updates flow",
	help: `Demo starts an in-process management server serving a small mesh:

  Listener "greeter.example.com"
    -> RouteConfiguration "route-greeter": /helloworld.Greeter/ splits 90/10
       between two clusters, everything else goes to "cluster-greeter"
    -> Clusters "cluster-greeter" and "cluster-greeter-canary" (EDS)
    -> ClusterLoadAssignments "eds-greeter" (3 endpoints, 2 priorities)
       and "eds-greeter-canary" (1 endpoint)

It creates a client of that server and resolves the Listener as a gRPC
channel does (gRFC A74, the same view as "xdsctl resolve"): each time the
whole tree is known, it prints it, from the Listener down to every
endpoint. Every --interval it changes an endpoint (flips the health of
one, moves another to a new port) so you can watch updates flow. It runs
until interrupted (Ctrl-C) or until --duration has passed, then exits 0.
With --delta the client speaks incremental xDS (DeltaAggregatedResources)
to the same server.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		duration := fs.Duration("duration", 0, "stop after this long; 0 means run until interrupted")
		interval := fs.Duration("interval", defaultDemoInterval, "how often an endpoint changes")
		delta := fs.Bool("delta", false, "speak incremental (delta) xDS to the demo server")
		admin := fs.String("admin", "", "also serve CSDS (gRFC A40) for the demo's client on this `address`, e.g. localhost:9901")
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
			return runDemo(ctx, e, *duration, *interval, *delta, *admin)
		}
	},
}

// The names of the demo mesh.
const (
	demoNodeID        = "xdsctl-demo"
	demoListener      = "greeter.example.com"
	demoRoute         = "route-greeter"
	demoCluster       = "cluster-greeter"
	demoCanaryCluster = "cluster-greeter-canary"
	demoEDS           = "eds-greeter"
	demoCanaryEDS     = "eds-greeter-canary"
)

// runDemo implements the demo command.
func runDemo(ctx context.Context, e *env, duration, interval time.Duration, delta bool, admin string) error {
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		return fmt.Errorf("starting the demo management server: %w", err)
	}
	defer ms.Stop()
	mesh := newDemoMesh()
	ms.Update("", mesh.resources())

	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{NodeID: demoNodeID}))
	if err != nil {
		return fmt.Errorf("parsing the demo bootstrap: %w", err)
	}
	var opts []client.Option
	if delta {
		opts = append(opts, client.WithDelta())
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		return fmt.Errorf("creating the xDS client: %w", err)
	}
	defer c.Close()
	stopAdmin, err := serveCSDS(e, admin, c)
	if err != nil {
		return err
	}
	defer stopAdmin()

	fmt.Fprintf(e.stdout, "xdsctl demo: management server on %s, client node %q.\n", ms.Address(), demoNodeID)
	fmt.Fprintf(e.stdout, "Resolving Listener %q: every complete configuration is printed; an endpoint changes every %v. Ctrl-C to stop.\n\n", demoListener, interval)
	var writeErr error // set by the Manager's Watcher goroutine; read after m.Close
	write := func(s string) {
		if writeErr == nil {
			if _, err := io.WriteString(e.stdout, s); err != nil {
				writeErr = fmt.Errorf("writing output: %w", err)
			}
		}
	}
	m := depmgr.New(c, demoListener, depmgr.Funcs{
		OnUpdate: func(cfg *depmgr.XDSConfig) {
			write(formatConfigText(cfg, e.now()) + "\n")
		},
		OnError:        func(err error) { write(string(formatConfigError(outputText, "error", err, e.now()))) },
		OnAmbientError: func(err error) { write(string(formatConfigError(outputText, "ambient_error", err, e.now()))) },
	})
	defer m.Close()

	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-ticker.C:
			what := mesh.step()
			fmt.Fprintf(e.stdout, "[%s] demo: the management server changes %s (version %s)\n",
				e.now().Format(time.TimeOnly), what, mesh.version())
			ms.Update("", mesh.resources())
		}
	}
	m.Close() // waits for a Watcher method in progress, so writeErr is settled
	if writeErr != nil {
		return writeErr
	}
	fmt.Fprintf(e.stdout, "xdsctl demo: stopped after %d updates.\n", mesh.steps)
	return nil
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
}

var (
	demoEast = &v3corepb.Locality{Region: "us-east1", Zone: "us-east1-b"}
	demoWest = &v3corepb.Locality{Region: "us-west1", Zone: "us-west1-a"}
)

func newDemoMesh() *demoMesh {
	return &demoMesh{endpoints: []demoEndpoint{
		{port: 50051, health: v3corepb.HealthStatus_HEALTHY, locality: demoEast},
		{port: 50052, health: v3corepb.HealthStatus_HEALTHY, locality: demoEast},
		{port: 50053, health: v3corepb.HealthStatus_HEALTHY, locality: demoWest, priority: 1},
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
	if ep.port == 50053 {
		ep.port = 50054
	} else {
		ep.port = 50053
	}
	return fmt.Sprintf("the port of 127.0.0.1:%d in %q to %d", old, demoEDS, ep.port)
}

// resources returns the mesh as a snapshot.
func (m *demoMesh) resources() testutil.Resources {
	return testutil.Resources{
		Version:   m.version(),
		Listeners: []*v3listenerpb.Listener{testutil.Listener(demoListener, demoRoute)},
		Routes:    []*v3routepb.RouteConfiguration{demoRouteConfig()},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster(demoCluster, demoEDS), testutil.Cluster(demoCanaryCluster, demoCanaryEDS)},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			demoAssignment(demoEDS, m.endpoints),
			demoAssignment(demoCanaryEDS, []demoEndpoint{{port: 50061, health: v3corepb.HealthStatus_HEALTHY, locality: demoEast}}),
		},
	}
}

// demoRouteConfig routes /helloworld.Greeter/ 90/10 between the two
// clusters, and everything else to demoCluster.
func demoRouteConfig() *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{
		Name: demoRoute,
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    "greeter",
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
