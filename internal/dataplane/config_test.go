// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// Unit tests of Build: what a data path gets of a configuration. The
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
func snap(results ...*depmgr.ClusterResult) Snapshot {
	byName := make(map[string]*depmgr.ClusterResult, len(results))
	action := resources.RouteAction{Kind: resources.RouteActionWeightedClusters}
	for _, r := range results {
		byName[r.Name] = r
		action.WeightedClusters = append(action.WeightedClusters, resources.WeightedCluster{Name: r.Name, Weight: 1})
	}
	route := resources.Route{Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true}, Action: action}
	vh := resources.VirtualHost{Name: "vh", Domains: []string{"*"}, Routes: []resources.Route{route}}
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{vh}}
	return Snapshot{
		Listener:    &resources.Listener{Name: "svc", RouteConfigName: "rc"},
		RouteConfig: rc,
		VirtualHost: &rc.VirtualHosts[0],
		Cluster:     func(name string) *depmgr.ClusterResult { return byName[name] },
	}
}

// prioSummary is what a test compares of a priority.
type prioSummary struct {
	Leaf       string
	Priority   uint32
	Localities map[string][]string // zone → addresses
	Weights    map[string]uint32   // zone → locality weight
}

func summarize(cc *Cluster) []prioSummary {
	var out []prioSummary
	for _, p := range cc.Priorities {
		s := prioSummary{Leaf: p.Leaf, Priority: p.Priority, Localities: map[string][]string{}, Weights: map[string]uint32{}}
		for _, l := range p.Localities {
			for _, ep := range l.Endpoints {
				s.Localities[l.ID.Zone] = append(s.Localities[l.ID.Zone], ep.Addresses[0])
			}
			s.Weights[l.ID.Zone] = l.Weight
		}
		out = append(out, s)
	}
	return out
}

// TestResolver_Config_Priorities checks the priorities of a cluster: only
// HEALTHY and UNKNOWN endpoints, localities without one left out, and
// priorities without one left out; for an aggregate cluster, the
// priorities of its leaves in order (gRFC A37).
func TestConfig_Priorities(t *testing.T) {
	healthy, unknown, unhealthy := resources.HealthStatusHealthy, resources.HealthStatusUnknown, resources.HealthStatusUnhealthy
	a := leaf("a", roundRobin,
		locality("z0", 0, 3, endpoint("a0:1", unhealthy, 1)),
		locality("z1", 1, 3, endpoint("a1:1", healthy, 1), endpoint("a1:2", unhealthy, 1)),
		locality("z2", 1, 1, endpoint("a2:1", unknown, 1)),
	)
	b := leaf("b", roundRobin, locality("z9", 0, 1, endpoint("b:1", healthy, 1)))
	cfg, err := Build(snap(ok(aggregate("agg", a, b))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []prioSummary{
		{Leaf: "a", Priority: 1, Localities: map[string][]string{"z1": {"a1:1"}, "z2": {"a2:1"}}, Weights: map[string]uint32{"z1": 3, "z2": 1}},
		{Leaf: "b", Priority: 0, Localities: map[string][]string{"z9": {"b:1"}}, Weights: map[string]uint32{"z9": 1}},
	}
	if diff := cmp.Diff(want, summarize(cfg.Clusters["agg"])); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
}

// TestConfig_PriorityShares checks each endpoint's share of its priority:
// its locality's weight times its share of it, in UQ1.31 (gRFC A42, A113).
func TestConfig_PriorityShares(t *testing.T) {
	h := resources.HealthStatusHealthy
	c := leaf("c", resources.LBPolicy{Kind: resources.LBPolicyRingHash},
		locality("z1", 0, 3, endpoint("x:1", h, 1)),
		locality("z2", 0, 1, endpoint("y:1", h, 1), endpoint("y:2", h, 3), endpoint("y:3", resources.HealthStatusUnhealthy, 100)),
	)
	cfg, err := Build(snap(ok(c)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint32{}
	for _, l := range cfg.Clusters["c"].Priorities[0].Localities {
		for _, ep := range l.Endpoints {
			got[ep.Addresses[0]] = ep.PriorityShare
		}
	}
	// Shares of the priority: x 3/4; y:1 1/4 × 1/4; y:2 1/4 × 3/4, in
	// UQ1.31; the unhealthy endpoint counts for nothing.
	const one = 1 << 31
	if want := map[string]uint32{"x:1": one / 4 * 3, "y:1": one / 16, "y:2": one / 16 * 3}; !cmp.Equal(got, want) {
		t.Errorf("endpoint shares = %v; want %v", got, want)
	}
}

// TestResolver_Config_ClusterErrors checks that a cluster's error stays
// with the cluster (its RPCs fail) and does not fail the configuration.
func TestConfig_ClusterErrors(t *testing.T) {
	good := leaf("good", roundRobin, locality("z", 0, 1, endpoint("g:1", resources.HealthStatusHealthy, 1)))
	sick := leaf("sick", roundRobin, locality("z", 0, 1, endpoint("s:1", resources.HealthStatusDraining, 1)))
	missing := &depmgr.ClusterResult{Name: "missing", Err: errors.New("resource does not exist")}
	cfg, err := Build(snap(ok(good), ok(sick), missing), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.Clusters["good"].Err; e != nil {
		t.Errorf("good cluster: %v", e)
	}
	if e := cfg.Clusters["sick"].Err; !errors.Is(e, ErrNoUsableEndpoints) || !strings.Contains(e.Error(), "DRAINING") {
		t.Errorf("sick cluster: %v; want ErrNoUsableEndpoints naming DRAINING", e)
	}
	if e := cfg.Clusters["missing"].Err; e == nil || !strings.Contains(e.Error(), `cluster "missing": resource does not exist`) {
		t.Errorf("missing cluster: %v", e)
	}
}

// TestConfig_Security checks that a leaf cluster's TLS configuration
// travels with its priorities (gRFC A29), and that a cluster whose
// instances the store cannot run fails with the instance named.
func TestConfig_Security(t *testing.T) {
	h := resources.HealthStatusHealthy
	secured := func(name string, sc *resources.SecurityConfig) *depmgr.ClusterConfig {
		l := leaf(name, roundRobin, locality("z", 0, 1, endpoint(name+":1", h, 1)))
		l.Cluster.Security = sc
		return l
	}
	mtls := &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "id"}
	store := xdscreds.NewProviderStore(map[string]bootstrap.CertificateProvider{
		"roots": {PluginName: "file_watcher", Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem"}`)},
		"id":    {PluginName: "file_watcher", Config: json.RawMessage(`{"certificate_file":"/c.pem","private_key_file":"/k.pem"}`)},
	})
	cfg, err := Build(snap(ok(secured("c", mtls))), Options{Providers: store})
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Clusters["c"]; c.Err != nil || c.Priorities[0].Security != mtls {
		t.Errorf("cluster c: error %v, priority security %+v; want none, %+v", c.Err, c.Priorities[0].Security, mtls)
	}

	for _, tc := range []struct {
		name    string
		sc      *resources.SecurityConfig
		opts    Options
		wantErr string
	}{
		{"unknown root instance", &resources.SecurityConfig{RootInstanceName: "nope"}, Options{Providers: store}, `"nope"`},
		{"unknown identity instance", &resources.SecurityConfig{RootInstanceName: "roots", IdentityInstanceName: "nope"}, Options{Providers: store}, `"nope"`},
		{"no store", mtls, Options{}, "no certificate provider store"},
	} {
		cfg, err := Build(snap(ok(secured("c", tc.sc))), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if e := cfg.Clusters["c"].Err; e == nil || !strings.Contains(e.Error(), tc.wantErr) {
			t.Errorf("%s: cluster error %v, want one containing %s", tc.name, e, tc.wantErr)
		}
	}
}

// TestConfig_Policy checks that a leaf whose policy Options.Policy
// rejects is left out, its error kept, and that the others of an
// aggregate cluster still serve; and that the policy's config rides
// with the priorities.
func TestConfig_Policy(t *testing.T) {
	h := resources.HealthStatusHealthy
	a := leaf("a", resources.LBPolicy{Kind: resources.LBPolicyLeastRequest}, locality("z", 0, 1, endpoint("a:1", h, 1)))
	b := leaf("b", roundRobin, locality("z", 0, 1, endpoint("b:1", h, 1)))
	opts := Options{Policy: func(p resources.LBPolicy) (any, error) {
		if p.Kind == resources.LBPolicyLeastRequest {
			return nil, fmt.Errorf("least request: %w", ErrUnsupported)
		}
		return "rr", nil
	}}
	cfg, err := Build(snap(ok(aggregate("agg", a, b)), ok(leaf("a2", a.Cluster.LBPolicy, locality("z", 0, 1, endpoint("c:1", h, 1))))), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Clusters["agg"]; c.Err != nil || len(c.Priorities) != 1 || c.Priorities[0].Leaf != "b" || c.Priorities[0].PolicyConfig != "rr" {
		t.Errorf("aggregate: error %v, %d priorities; want b's alone, with its policy config", c.Err, len(c.Priorities))
	}
	if e := cfg.Clusters["a2"].Err; !errors.Is(e, ErrUnsupported) || !strings.Contains(e.Error(), `cluster "a2": least request`) {
		t.Errorf("cluster a2: %v; want ErrUnsupported naming it", e)
	}
}
