// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/experimental/balancer/weight"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
)

// Unit tests of buildConfig: what the router runs of a configuration (the
// data-plane configuration itself is package dataplane's, tested there).
// The snapshots are made by hand: an XDSConfig can only be made by
// depmgr.

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

// snap returns a snapshot of the listener "svc" whose virtual host has
// one catch-all route to the cluster c.
func snap(c *depmgr.ClusterConfig) dataplane.Snapshot {
	route := resources.Route{
		Match:  resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true},
		Action: resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: c.Name},
	}
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []resources.Route{route}}}}
	return dataplane.Snapshot{
		Listener:    &resources.Listener{Name: "svc", RouteConfigName: "rc"},
		RouteConfig: rc,
		VirtualHost: &rc.VirtualHosts[0],
		Cluster: func(name string) *depmgr.ClusterResult {
			if name != c.Name {
				return nil
			}
			return &depmgr.ClusterResult{Name: name, Config: c}
		},
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
	cfg, err := buildConfig(snap(c), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Clusters["c"].Priorities[0]
	if len(p.Children) != 1 || !p.Policy.PerPriority {
		t.Fatalf("ring hash priority has %d children (per priority %v); want 1", len(p.Children), p.Policy.PerPriority)
	}
	got := map[string]uint32{}
	for _, ep := range p.Children[0].Endpoints {
		got[ep.Addresses[0].Addr] = weight.FromEndpoint(ep).Weight
	}
	// Shares of the priority: x 3/4; y:1 1/4 × 1/4; y:2 1/4 × 3/4, in UQ1.31.
	const one = 1 << 31
	if want := map[string]uint32{"x:1": one / 4 * 3, "y:1": one / 16, "y:2": one / 16 * 3}; !cmp.Equal(got, want) {
		t.Errorf("endpoint weights = %v; want %v", got, want)
	}
	if p.Children[0].AddrLocality["y:2"].Zone != "z2" {
		t.Errorf("address y:2 maps to locality %v; want z2", p.Children[0].AddrLocality["y:2"])
	}
}

// TestResolver_Config_Security checks that a leaf cluster's children's
// keys change with its TLS configuration (gRFC A29), so that a change
// gives new connections; and that every endpoint carries its leaf
// cluster in its EndpointInfo.
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
		cfg, err := buildConfig(snap(c), "", store)
		if err != nil {
			t.Fatal(err)
		}
		cc := cfg.Clusters[c.Name]
		if cc.DP.Err != nil {
			t.Fatalf("cluster %s: %v", c.Name, cc.DP.Err)
		}
		p := cc.Priorities[0]
		if p.Security != c.Cluster.Security {
			t.Errorf("cluster %s: priority security %+v, want %+v", c.Name, p.Security, c.Cluster.Security)
		}
		if info, ok := EndpointInfoFromEndpoint(p.Children[0].Endpoints[0]); !ok || info.Cluster != c.Name {
			t.Errorf("cluster %s: EndpointInfo %+v, %v; want Cluster %s", c.Name, info, ok, c.Name)
		}
		return p.Children[0].Key
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
}
