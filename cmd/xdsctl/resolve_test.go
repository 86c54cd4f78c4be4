// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// resolveMesh is a mesh with every shape the resolve view prints:
//
//	svc → route-svc, virtual host "svc-vh" (another one is not selected):
//	  /a/   → c1                     EDS, 2 localities in 2 priorities
//	  /b/   → 75 % c1, 25 % agg      agg: AGGREGATE of [c2, dns, c1]
//	  ""    → loop                   loop: AGGREGATE of itself (an error)
//	c2: EDS without service name, DRAINING endpoint; dns: LOGICAL_DNS 127.0.0.1:8443
func resolveMesh() testutil.Resources {
	c1 := &v3endpointpb.ClusterLoadAssignment{
		ClusterName: "eds-c1",
		Endpoints: []*v3endpointpb.LocalityLbEndpoints{
			{
				Locality:            &v3corepb.Locality{Region: "r1", Zone: "z1"},
				LoadBalancingWeight: wrapperspb.UInt32(3),
				LbEndpoints: []*v3endpointpb.LbEndpoint{
					lbEndpoint("10.0.0.1", 80, v3corepb.HealthStatus_HEALTHY, 2),
					lbEndpoint("10.0.0.2", 80, v3corepb.HealthStatus_UNHEALTHY, 1),
				},
			},
			{
				Locality:            &v3corepb.Locality{Region: "r2"},
				LoadBalancingWeight: wrapperspb.UInt32(1),
				Priority:            1,
				LbEndpoints:         []*v3endpointpb.LbEndpoint{lbEndpoint("10.0.1.1", 80, v3corepb.HealthStatus_UNKNOWN, 1)},
			},
		},
	}
	c2 := testutil.Endpoints("c2", "10.0.2.1", 81)
	c2.Endpoints[0].LbEndpoints[0].HealthStatus = v3corepb.HealthStatus_DRAINING
	return testutil.Resources{
		Version:   "7",
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc",
			testutil.VirtualHost("other", []string{"other.example.com"}, testutil.ClusterRoute("", "c-other")),
			testutil.VirtualHost("svc-vh", []string{"svc", "svc.example.com"},
				testutil.ClusterRoute("/a/", "c1"),
				testutil.WeightedClustersRoute("/b/", testutil.ClusterWeight{Name: "c1", Weight: 75}, testutil.ClusterWeight{Name: "agg", Weight: 25}),
				testutil.ClusterRoute("", "loop"),
			),
		)},
		Clusters: []*v3clusterpb.Cluster{
			testutil.Cluster("c1", "eds-c1"),
			testutil.Cluster("c2", ""),
			testutil.LogicalDNSCluster("dns", "127.0.0.1", 8443),
			testutil.AggregateCluster("agg", "c2", "dns", "c1"),
			testutil.AggregateCluster("loop", "loop"),
		},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{c1, c2},
	}
}

func lbEndpoint(host string, port uint32, health v3corepb.HealthStatus, weight uint32) *v3endpointpb.LbEndpoint {
	return &v3endpointpb.LbEndpoint{
		HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
			Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
				Address:       host,
				PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
			}}},
		}},
		HealthStatus:        health,
		LoadBalancingWeight: wrapperspb.UInt32(weight),
	}
}

// resolveOnce runs resolve --once against a server of res, with the
// clock at goldenTime, and returns its error and output.
func resolveOnce(t *testing.T, res testutil.Resources, o resolveOptions, listener string) (string, error) {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", res)
	var out, errOut testutil.LogBuffer
	e := &env{stdout: &out, stderr: &errOut, now: func() time.Time { return goldenTime }}
	o.once = true
	err := runResolve(testContext(t), e, &clientFlags{bootstrap: writeBootstrap(t, ms, testutil.BootstrapOptions{})}, o, listener)
	if s := errOut.String(); s != "" {
		t.Errorf("stderr = %q, want nothing", s)
	}
	return out.String(), err
}

// TestResolve_Once_Text checks the tree resolve prints for a complete
// configuration: the Listener, the selected virtual host and its routes,
// each cluster in route order with its versions, localities (priority,
// weight) and endpoints (weight, health), an aggregate's leaves in
// priority order, a LOGICAL_DNS cluster's resolved address, and a
// cluster's error.
func TestResolve_Once_Text(t *testing.T) {
	got, err := resolveOnce(t, resolveMesh(), resolveOptions{out: outputText}, "svc")
	if err != nil {
		t.Fatalf("resolve --once: %v", err)
	}
	checkGolden(t, "resolve/mesh.txt", []byte(got))
}

// TestResolve_Once_JSON checks the JSON form of the same configuration:
// one line, {"config": …}, which decodes.
func TestResolve_Once_JSON(t *testing.T) {
	got, err := resolveOnce(t, resolveMesh(), resolveOptions{out: outputJSON}, "svc")
	if err != nil {
		t.Fatalf("resolve --once --output json: %v", err)
	}
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
		t.Fatalf("output = %q, want one line", got)
	}
	var v struct {
		Config *jsonConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil || v.Config == nil || len(v.Config.Clusters) != 3 {
		t.Fatalf("output does not decode to a config with 3 clusters: %v %+v", err, v.Config)
	}
	checkGolden(t, "resolve/mesh.jsonl", []byte(got))
}

// TestResolve_Once_Authority checks --authority: another virtual host is
// selected.
func TestResolve_Once_Authority(t *testing.T) {
	res := resolveMesh()
	res.Clusters = append(res.Clusters, testutil.Cluster("c-other", ""))
	res.Endpoints = append(res.Endpoints, testutil.Endpoints("c-other", "10.9.9.9", 99))
	got, err := resolveOnce(t, res, resolveOptions{out: outputText, authority: "other.example.com"}, "svc")
	if err != nil {
		t.Fatalf("resolve --once --authority other.example.com: %v", err)
	}
	if !strings.Contains(got, `virtual host "other"`) || !strings.Contains(got, "\n  Cluster c-other (version 7): EDS") ||
		strings.Contains(got, "Cluster c1") {
		t.Fatalf("output = %s, want the virtual host other with c-other only", got)
	}
}

// TestResolve_Once_UnusableConfig checks that --once fails (exit 1, one
// line on stderr) when the configuration is unusable: here no virtual host
// matches the Listener name.
func TestResolve_Once_UnusableConfig(t *testing.T) {
	ctx := testContext(t)
	res := resolveMesh()
	res.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "elsewhere.example.com", "c1")}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", res)
	code, stdout, stderr := runSync(ctx, "resolve", "--once", "--bootstrap", writeBootstrap(t, ms, testutil.BootstrapOptions{NodeID: "n1"}), "svc")
	if code != exitFailure || stdout != "" {
		t.Fatalf("resolve --once = %d, stdout %q; want 1 and no output", code, stdout)
	}
	checkOneLineError(t, stderr, `the configuration of Listener "svc" is unusable: RouteConfiguration "route-svc": no matching virtual host`)
}

// TestResolve_Follows checks resolve without --once: it prints each new
// configuration, then the whole-config error when the Listener goes away,
// and exits 0 when interrupted.
func TestResolve_Follows(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{8080}})
	res.Version = "1"
	ms.Update("", res)
	r := startRun(t, "resolve", "--bootstrap", writeBootstrap(t, ms, testutil.BootstrapOptions{}), "--output", "json", "svc")
	waitForOutput(ctx, t, &r.stdout, "the first config", containsAll(`"addresses":["127.0.0.1:8080"]`))

	res = testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{9090}})
	res.Version = "2"
	ms.Update("", res)
	waitForOutput(ctx, t, &r.stdout, "the second config", containsAll(`"addresses":["127.0.0.1:9090"]`, `"version":"2"`))

	res.Listeners = nil
	res.Version = "3"
	ms.Update("", res)
	out := waitForOutput(ctx, t, &r.stdout, "the error", containsAll(`{"error":"xds: Listener \"svc\": resource does not exist`))
	if code := r.stop(t); code != exitOK {
		t.Fatalf("resolve = %d after interruption, want 0; stderr: %s", code, r.stderr.String())
	}
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &v); err != nil || len(v) != 1 {
			t.Errorf("line %d = %s: want a JSON object with one field (%v)", i+1, line, err)
		}
	}
}

// TestResolve_Once_Interrupted checks that --once interrupted before the
// configuration is complete (a cluster never arrives) fails.
func TestResolve_Once_Interrupted(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	res.Clusters = nil
	ms.Update("", res)
	r := startRun(t, "resolve", "--once", "--bootstrap", writeBootstrap(t, ms, testutil.BootstrapOptions{}), "svc")
	if _, err := ms.WaitForRequest(ctx, func(req *testutil.Request) bool {
		return len(req.Req.GetResourceNames()) == 1 && req.Req.GetResourceNames()[0] == "cluster-svc"
	}); err != nil {
		t.Fatal(err)
	}
	if code := r.stop(t); code != exitFailure {
		t.Fatalf("resolve --once = %d after interruption, want 1", code)
	}
	checkOneLineError(t, r.stderr.String(), `interrupted before the configuration of Listener "svc" was complete`)
}

// TestResolve_UsageErrors checks that resolve wants exactly one Listener.
func TestResolve_UsageErrors(t *testing.T) {
	ctx := testContext(t)
	for _, args := range [][]string{{"resolve"}, {"resolve", "a", "b"}, {"resolve", "--output", "xml", "svc"}} {
		code, _, stderr := runSync(ctx, args...)
		if code != exitUsage {
			t.Errorf("xdsctl %q = %d, want %d", args, code, exitUsage)
		}
		checkOneLineError(t, stderr, "xdsctl help resolve")
	}
}
