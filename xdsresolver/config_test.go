// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/experimental/balancer/weight"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// Unit tests of buildConfig: what the router gets of a configuration. The
// snapshots are made by hand: an XDSConfig can only be made by depmgr.

var roundRobin = resources.LBPolicy{Kind: resources.LBPolicyRoundRobin, WeightedByLocality: true}

func endpoint(addr string, h resources.HealthStatus, w uint32) resources.Endpoint {
	return resources.Endpoint{Addresses: []string{addr}, HealthStatus: h, Weight: w}
}

func locality(zone string, prio, w uint32, eps ...resources.Endpoint) resources.Locality {
	return resources.Locality{ID: resources.LocalityID{Region: "r", Zone: zone}, Priority: prio, Weight: w, Endpoints: eps}
}

func leaf(name string, lb resources.LBPolicy, locs ...resources.Locality) *depmgr.ClusterConfig {
	return &depmgr.ClusterConfig{
		Name:      name,
		Cluster:   &resources.Cluster{Name: name, Kind: resources.ClusterKindEDS, LBPolicy: lb, MaxRequests: 1024},
		Endpoints: &resources.Endpoints{ClusterName: name, Localities: locs},
	}
}

func aggregate(name string, leaves ...*depmgr.ClusterConfig) *depmgr.ClusterConfig {
	cl := &resources.Cluster{Name: name, Kind: resources.ClusterKindAggregate, LBPolicy: roundRobin}
	for _, l := range leaves {
		cl.AggregateClusters = append(cl.AggregateClusters, l.Name)
	}
	return &depmgr.ClusterConfig{Name: name, Cluster: cl, Leaves: leaves}
}

func ok(cfg *depmgr.ClusterConfig) *depmgr.ClusterResult {
	return &depmgr.ClusterResult{Name: cfg.Name, Config: cfg}
}

// snap returns a snapshot of the listener "svc" whose virtual host has
// one catch-all route to a weighted split of the clusters of results.
func snap(results ...*depmgr.ClusterResult) snapshot {
	byName := make(map[string]*depmgr.ClusterResult, len(results))
	action := resources.RouteAction{Kind: resources.RouteActionWeightedClusters}
	for _, r := range results {
		byName[r.Name] = r
		action.WeightedClusters = append(action.WeightedClusters, resources.WeightedCluster{Name: r.Name, Weight: 1})
	}
	route := resources.Route{Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true}, Action: action}
	vh := resources.VirtualHost{Name: "vh", Domains: []string{"*"}, Routes: []resources.Route{route}}
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{vh}}
	return snapshot{
		listener:    &resources.Listener{Name: "svc", RouteConfigName: "rc"},
		routeConfig: rc,
		virtualHost: &rc.VirtualHosts[0],
		cluster:     func(name string) *depmgr.ClusterResult { return byName[name] },
	}
}

// prioSummary is what a test compares of a priority.
type prioSummary struct {
	Leaf       string
	Priority   uint32
	Localities map[string][]string // zone → addresses
	Weights    map[string]uint32   // zone → locality weight
}

func summarize(cc *clusterConfig) []prioSummary {
	var out []prioSummary
	for _, p := range cc.priorities {
		s := prioSummary{Leaf: p.leaf, Priority: p.priority, Localities: map[string][]string{}, Weights: map[string]uint32{}}
		for _, l := range p.localities {
			for _, ep := range l.endpoints {
				s.Localities[l.id.Zone] = append(s.Localities[l.id.Zone], ep.Addresses[0].Addr)
			}
			s.Weights[l.id.Zone] = l.weight
		}
		out = append(out, s)
	}
	return out
}

// TestResolver_Config_Priorities checks the priorities of a cluster: only
// HEALTHY and UNKNOWN endpoints, localities without one left out, and
// priorities without one left out; for an aggregate cluster, the
// priorities of its leaves in order (gRFC A37).
func TestResolver_Config_Priorities(t *testing.T) {
	healthy, unknown, unhealthy := resources.HealthStatusHealthy, resources.HealthStatusUnknown, resources.HealthStatusUnhealthy
	a := leaf("a", roundRobin,
		locality("z0", 0, 3, endpoint("a0:1", unhealthy, 1)),
		locality("z1", 1, 3, endpoint("a1:1", healthy, 1), endpoint("a1:2", unhealthy, 1)),
		locality("z2", 1, 1, endpoint("a2:1", unknown, 1)),
	)
	b := leaf("b", roundRobin, locality("z9", 0, 1, endpoint("b:1", healthy, 1)))
	cfg, err := buildConfig(snap(ok(aggregate("agg", a, b))), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []prioSummary{
		{Leaf: "a", Priority: 1, Localities: map[string][]string{"z1": {"a1:1"}, "z2": {"a2:1"}}, Weights: map[string]uint32{"z1": 3, "z2": 1}},
		{Leaf: "b", Priority: 0, Localities: map[string][]string{"z9": {"b:1"}}, Weights: map[string]uint32{"z9": 1}},
	}
	if diff := cmp.Diff(want, summarize(cfg.clusters["agg"])); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
}

// TestResolver_Config_RingHashWeights checks that a RING_HASH cluster has
// one child per priority whose endpoints carry their locality's weight
// times their share of it.
func TestResolver_Config_RingHashWeights(t *testing.T) {
	h := resources.HealthStatusHealthy
	c := leaf("c", resources.LBPolicy{Kind: resources.LBPolicyRingHash},
		locality("z1", 0, 3, endpoint("x:1", h, 1)),
		locality("z2", 0, 1, endpoint("y:1", h, 1), endpoint("y:2", h, 3)),
	)
	cfg, err := buildConfig(snap(ok(c)), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.clusters["c"].priorities[0]
	if len(p.localities) != 1 || !p.policy.perPriority {
		t.Fatalf("ring hash priority has %d children (per priority %v); want 1", len(p.localities), p.policy.perPriority)
	}
	got := map[string]uint32{}
	for _, ep := range p.localities[0].endpoints {
		got[ep.Addresses[0].Addr] = weight.FromEndpoint(ep).Weight
	}
	// Shares of the priority: x 3/4; y:1 1/4 × 1/4; y:2 1/4 × 3/4, in UQ1.31.
	const one = 1 << 31
	if want := map[string]uint32{"x:1": one / 4 * 3, "y:1": one / 16, "y:2": one / 16 * 3}; !cmp.Equal(got, want) {
		t.Errorf("endpoint weights = %v; want %v", got, want)
	}
	if p.localities[0].addrLocality["y:2"].Zone != "z2" {
		t.Errorf("address y:2 maps to locality %v; want z2", p.localities[0].addrLocality["y:2"])
	}
}

// TestResolver_Config_ClusterErrors checks that a cluster's error stays
// with the cluster (its RPCs fail) and does not fail the configuration.
func TestResolver_Config_ClusterErrors(t *testing.T) {
	good := leaf("good", roundRobin, locality("z", 0, 1, endpoint("g:1", resources.HealthStatusHealthy, 1)))
	sick := leaf("sick", roundRobin, locality("z", 0, 1, endpoint("s:1", resources.HealthStatusDraining, 1)))
	missing := &depmgr.ClusterResult{Name: "missing", Err: errors.New("resource does not exist")}
	cfg, err := buildConfig(snap(ok(good), ok(sick), missing), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.clusters["good"].err; e != nil {
		t.Errorf("good cluster: %v", e)
	}
	if e := cfg.clusters["sick"].err; !errors.Is(e, ErrNoUsableEndpoints) || !strings.Contains(e.Error(), "DRAINING") {
		t.Errorf("sick cluster: %v; want ErrNoUsableEndpoints naming DRAINING", e)
	}
	if e := cfg.clusters["missing"].err; e == nil || !strings.Contains(e.Error(), `cluster "missing": resource does not exist`) {
		t.Errorf("missing cluster: %v", e)
	}
}

// TestResolver_Config_Security checks that a leaf cluster's TLS
// configuration travels with its priorities (gRFC A29), that its
// children's keys change with it (so that a change gives new
// connections), and that a cluster whose instances the store cannot run
// fails with the instance named; and that every endpoint carries its
// leaf cluster in its EndpointInfo.
func TestResolver_Config_Security(t *testing.T) {
	h := resources.HealthStatusHealthy
	secured := func(name string, sc *resources.SecurityConfig) *depmgr.ClusterConfig {
		l := leaf(name, roundRobin, locality("z", 0, 1, endpoint(name+":1", h, 1)))
		l.Cluster.Security = sc
		return l
	}
	mtls := &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "id"}
	sanA := &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "id", SubjectAltNameMatchers: []resources.StringMatcher{{Kind: resources.StringMatchExact, Value: "a"}}}
	system := &resources.SecurityConfig{SystemRootCerts: true}
	store := xdscreds.NewProviderStore(map[string]bootstrap.CertificateProvider{
		"roots": {PluginName: "file_watcher", Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem"}`)},
		"id":    {PluginName: "file_watcher", Config: json.RawMessage(`{"certificate_file":"/c.pem","private_key_file":"/k.pem"}`)},
	})
	key := func(c *depmgr.ClusterConfig) string {
		t.Helper()
		cfg, err := buildConfig(snap(ok(c)), "", store)
		if err != nil {
			t.Fatal(err)
		}
		cc := cfg.clusters[c.Name]
		if cc.err != nil {
			t.Fatalf("cluster %s: %v", c.Name, cc.err)
		}
		p := cc.priorities[0]
		if p.security != c.Cluster.Security {
			t.Errorf("cluster %s: priority security %+v, want %+v", c.Name, p.security, c.Cluster.Security)
		}
		if info, ok := EndpointInfoFromEndpoint(p.localities[0].endpoints[0]); !ok || info.Cluster != c.Name {
			t.Errorf("cluster %s: EndpointInfo %+v, %v; want Cluster %s", c.Name, info, ok, c.Name)
		}
		return p.localities[0].key
	}
	keys := map[string]string{
		"plain":  key(secured("c", nil)),
		"mtls":   key(secured("c", mtls)),
		"mtls2":  key(secured("c", &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "id"})),
		"sanA":   key(secured("c", sanA)),
		"system": key(secured("c", system)),
	}
	if keys["mtls"] != keys["mtls2"] {
		t.Errorf("equal security configs give the child keys %q and %q; want one", keys["mtls"], keys["mtls2"])
	}
	seen := map[string]string{}
	for name, k := range keys {
		if name == "mtls2" {
			continue
		}
		if other, dup := seen[k]; dup {
			t.Errorf("the security configs %s and %s give one child key %q", name, other, k)
		}
		seen[k] = name
	}

	for _, tc := range []struct {
		name    string
		sc      *resources.SecurityConfig
		store   *xdscreds.ProviderStore
		wantErr string
	}{
		{"unknown root instance", &resources.SecurityConfig{RootInstanceName: "nope"}, store, `"nope"`},
		{"unknown identity instance", &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "nope"}, store, `"nope"`},
		{"no store", mtls, nil, "no certificate provider store"},
	} {
		cfg, err := buildConfig(snap(ok(secured("c", tc.sc))), "", tc.store)
		if err != nil {
			t.Fatal(err)
		}
		if e := cfg.clusters["c"].err; e == nil || !strings.Contains(e.Error(), tc.wantErr) {
			t.Errorf("%s: cluster error %v, want one containing %s", tc.name, e, tc.wantErr)
		}
	}
}
