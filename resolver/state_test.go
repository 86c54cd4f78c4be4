// SPDX-License-Identifier: Apache-2.0

package resolver

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/experimental/balancer/weight"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
)

// Unit tests of the conversion of a configuration into what the channel
// gets (resolve). The snapshots are made by hand: an XDSConfig can only be
// made by depmgr, so resolve reads a snapshot.

const (
	healthy   = resources.HealthStatusHealthy
	unknown   = resources.HealthStatusUnknown
	unhealthy = resources.HealthStatusUnhealthy
	draining  = resources.HealthStatusDraining
	timeout   = resources.HealthStatusTimeout
	degraded  = resources.HealthStatusDegraded
)

var roundRobin = resources.LBPolicy{Kind: resources.LBPolicyRoundRobin, WeightedByLocality: true}

func endpoint(addr string, h resources.HealthStatus, w uint32) resources.Endpoint {
	return resources.Endpoint{Addresses: []string{addr}, HealthStatus: h, Weight: w}
}

func locality(zone string, prio, w uint32, eps ...resources.Endpoint) resources.Locality {
	return resources.Locality{ID: resources.LocalityID{Region: "r", Zone: zone}, Priority: prio, Weight: w, Endpoints: eps}
}

// leaf returns the config of an EDS cluster with the given localities.
func leaf(name string, lb resources.LBPolicy, locs ...resources.Locality) *depmgr.ClusterConfig {
	return &depmgr.ClusterConfig{
		Name:      name,
		Cluster:   &resources.Cluster{Name: name, Kind: resources.ClusterKindEDS, LBPolicy: lb},
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

func catchAll(action resources.RouteAction) resources.Route {
	return resources.Route{Match: resources.RouteMatch{PathKind: resources.PathKindPrefix, CaseSensitive: true}, Action: action}
}

func toCluster(name string) resources.RouteAction {
	return resources.RouteAction{Kind: resources.RouteActionCluster, Cluster: name}
}

// snap returns a snapshot of the listener "svc" whose virtual host has
// routes, with the clusters results.
func snap(routes []resources.Route, results ...*depmgr.ClusterResult) snapshot {
	byName := make(map[string]*depmgr.ClusterResult, len(results))
	for _, r := range results {
		byName[r.Name] = r
	}
	vh := resources.VirtualHost{Name: "vh", Domains: []string{"*"}, Routes: routes}
	rc := &resources.RouteConfig{Name: "rc", VirtualHosts: []resources.VirtualHost{vh}}
	return snapshot{
		listener:    &resources.Listener{Name: "svc", RouteConfigName: "rc"},
		routeConfig: rc,
		virtualHost: &rc.VirtualHosts[0],
		cluster:     func(name string) *depmgr.ClusterResult { return byName[name] },
	}
}

// oneCluster is a snapshot whose single catch-all route goes to cfg.
func oneCluster(cfg *depmgr.ClusterConfig) snapshot {
	return snap([]resources.Route{catchAll(toCluster(cfg.Name))}, ok(cfg))
}

// got is what a test compares of a resolver.Endpoint.
type got struct {
	Addrs   []string
	Info    EndpointInfo
	Weight  uint32 // weight.EndpointInfo
	HashKey string
}

func summarize(t *testing.T, eps []grpcresolver.Endpoint) []got {
	t.Helper()
	out := make([]got, 0, len(eps))
	for _, ep := range eps {
		info, found := EndpointInfoFromEndpoint(ep)
		if !found {
			t.Errorf("endpoint %v has no EndpointInfo", ep.Addresses)
		}
		g := got{Info: info, Weight: weight.FromEndpoint(ep).Weight, HashKey: ringhash.HashKey(ep)}
		for _, a := range ep.Addresses {
			g.Addrs = append(g.Addrs, a.Addr)
		}
		out = append(out, g)
	}
	return out
}

func addrsOf(gs []got) []string {
	var out []string
	for _, g := range gs {
		out = append(out, strings.Join(g.Addrs, "+"))
	}
	return out
}

func mustResolve(t *testing.T, s snapshot) *resolution {
	t.Helper()
	res, err := resolve(s, randomHashHeader)
	if err != nil {
		t.Fatalf("resolve: unexpected error: %v", err)
	}
	return res
}

// TestResolver_State_Priorities checks that the endpoints are those of the
// highest priority with a usable endpoint, whatever the order of the
// localities.
func TestResolver_State_Priorities(t *testing.T) {
	tests := []struct {
		name string
		locs []resources.Locality
		want []string
	}{
		{
			name: "priority 0 healthy",
			locs: []resources.Locality{
				locality("z1", 0, 1, endpoint("10.0.0.1:80", healthy, 1)),
				locality("z2", 1, 1, endpoint("10.0.1.1:80", healthy, 1)),
			},
			want: []string{"10.0.0.1:80"},
		},
		{
			name: "priority 0 all unhealthy fails over to 1",
			locs: []resources.Locality{
				locality("z1", 0, 1, endpoint("10.0.0.1:80", unhealthy, 1), endpoint("10.0.0.2:80", draining, 1)),
				locality("z2", 1, 1, endpoint("10.0.1.1:80", healthy, 1)),
				locality("z3", 2, 1, endpoint("10.0.2.1:80", healthy, 1)),
			},
			want: []string{"10.0.1.1:80"},
		},
		{
			name: "priority 0 partly healthy stays on 0",
			locs: []resources.Locality{
				locality("z1", 0, 1, endpoint("10.0.0.1:80", unhealthy, 1), endpoint("10.0.0.2:80", healthy, 1)),
				locality("z2", 1, 1, endpoint("10.0.1.1:80", healthy, 1)),
			},
			want: []string{"10.0.0.2:80"},
		},
		{
			name: "priority 0 with an empty locality and one usable in another",
			locs: []resources.Locality{
				locality("z1", 0, 1),
				locality("z2", 0, 1, endpoint("10.0.0.2:80", healthy, 1)),
				locality("z3", 1, 1, endpoint("10.0.1.1:80", healthy, 1)),
			},
			want: []string{"10.0.0.2:80"},
		},
		{
			name: "localities out of priority order",
			locs: []resources.Locality{
				locality("z2", 1, 1, endpoint("10.0.1.1:80", healthy, 1)),
				locality("z1", 0, 1, endpoint("10.0.0.1:80", unhealthy, 1)),
				locality("z3", 2, 1, endpoint("10.0.2.1:80", healthy, 1)),
				locality("z4", 1, 1, endpoint("10.0.1.2:80", healthy, 1)),
			},
			want: []string{"10.0.1.1:80", "10.0.1.2:80"},
		},
		{
			name: "usable priority 1 listed before usable priority 0",
			locs: []resources.Locality{
				locality("z2", 1, 1, endpoint("10.0.1.1:80", healthy, 1)),
				locality("z1", 0, 1, endpoint("10.0.0.1:80", healthy, 1)),
			},
			want: []string{"10.0.0.1:80"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustResolve(t, oneCluster(leaf("c", roundRobin, tt.locs...)))
			if diff := cmp.Diff(addrsOf(summarize(t, res.endpoints)), tt.want); diff != "" {
				t.Errorf("endpoints (-got, +want):\n%s", diff)
			}
		})
	}
}

// TestResolver_State_HealthFiltering checks that only HEALTHY and UNKNOWN
// endpoints are used, as in gRPC.
func TestResolver_State_HealthFiltering(t *testing.T) {
	res := mustResolve(t, oneCluster(leaf("c", roundRobin, locality("z", 0, 1,
		endpoint("10.0.0.1:80", unknown, 1),
		endpoint("10.0.0.2:80", healthy, 1),
		endpoint("10.0.0.3:80", unhealthy, 1),
		endpoint("10.0.0.4:80", draining, 1),
		endpoint("10.0.0.5:80", timeout, 1),
		endpoint("10.0.0.6:80", degraded, 1),
		endpoint("10.0.0.7:80", resources.HealthStatus(42), 1),
	))))
	gs := summarize(t, res.endpoints)
	if diff := cmp.Diff(addrsOf(gs), []string{"10.0.0.1:80", "10.0.0.2:80"}); diff != "" {
		t.Errorf("endpoints (-got, +want):\n%s", diff)
	}
	if gs[0].Info.HealthStatus != unknown || gs[1].Info.HealthStatus != healthy {
		t.Errorf("health statuses = %v, %v; want UNKNOWN, HEALTHY", gs[0].Info.HealthStatus, gs[1].Info.HealthStatus)
	}
}

// TestResolver_State_WeightsAndAttributes checks every attribute of the
// endpoints: EndpointInfo, the A61 addresses, the A76 hash key, and the
// weight, the product of the locality's and the endpoint's shares
// computed over the usable endpoints only.
func TestResolver_State_WeightsAndAttributes(t *testing.T) {
	dual := resources.Endpoint{Addresses: []string{"10.0.0.1:80", "[fd00::1]:80"}, HealthStatus: healthy, Weight: 3, Hostname: "a.example", HashKey: "key-a"}
	res := mustResolve(t, oneCluster(leaf("c", roundRobin,
		// Locality z1 (weight 1 of 4): endpoints weighted 3 and 1; the
		// unhealthy one takes no share.
		locality("z1", 0, 1, dual, endpoint("10.0.0.2:80", healthy, 1), endpoint("10.0.0.9:80", unhealthy, 100)),
		// Locality z2 (weight 3 of 4).
		locality("z2", 0, 3, endpoint("10.0.1.1:80", unknown, 5)),
		// A locality with no usable endpoint takes no share of the priority.
		locality("z3", 0, 4, endpoint("10.0.2.1:80", unhealthy, 1)),
		locality("z4", 1, 1, endpoint("10.0.3.1:80", healthy, 1)),
	)))
	z1 := resources.LocalityID{Region: "r", Zone: "z1"}
	z2 := resources.LocalityID{Region: "r", Zone: "z2"}
	one := float64(fixedPointOne)
	want := []got{
		{
			Addrs:   []string{"10.0.0.1:80", "[fd00::1]:80"},
			Info:    EndpointInfo{RouteCluster: "c", Cluster: "c", Locality: z1, LocalityWeight: 1, Weight: 3, HealthStatus: healthy, Hostname: "a.example"},
			Weight:  uint32(one * 1 / 4 * 3 / 4),
			HashKey: "key-a",
		},
		{
			Addrs:  []string{"10.0.0.2:80"},
			Info:   EndpointInfo{RouteCluster: "c", Cluster: "c", Locality: z1, LocalityWeight: 1, Weight: 1, HealthStatus: healthy},
			Weight: uint32(one * 1 / 4 * 1 / 4),
		},
		{
			Addrs:  []string{"10.0.1.1:80"},
			Info:   EndpointInfo{RouteCluster: "c", Cluster: "c", Locality: z2, LocalityWeight: 3, Weight: 5, HealthStatus: unknown},
			Weight: uint32(one * 3 / 4),
		},
	}
	if diff := cmp.Diff(summarize(t, res.endpoints), want); diff != "" {
		t.Errorf("endpoints (-got, +want):\n%s", diff)
	}
}

// TestResolver_State_Aggregate checks that an aggregate cluster uses its
// first leaf with a usable endpoint, with that leaf's policy (gRFC A37,
// A75), and fails when no leaf has one.
func TestResolver_State_Aggregate(t *testing.T) {
	leastRequest := resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 3}
	primary := leaf("primary", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", unhealthy, 1)))
	secondary := leaf("secondary", leastRequest, locality("z", 0, 1, endpoint("10.0.1.1:80", healthy, 1)))
	tertiary := leaf("tertiary", roundRobin, locality("z", 0, 1, endpoint("10.0.2.1:80", healthy, 1)))

	res := mustResolve(t, oneCluster(aggregate("agg", primary, secondary, tertiary)))
	gs := summarize(t, res.endpoints)
	if diff := cmp.Diff(addrsOf(gs), []string{"10.0.1.1:80"}); diff != "" {
		t.Errorf("endpoints (-got, +want):\n%s", diff)
	}
	if gs[0].Info.RouteCluster != "agg" || gs[0].Info.Cluster != "secondary" {
		t.Errorf("EndpointInfo clusters = %q, %q; want agg, secondary", gs[0].Info.RouteCluster, gs[0].Info.Cluster)
	}
	if want := `{"loadBalancingConfig":[{"least_request_experimental":{"choiceCount":3}}]}`; res.serviceConfig != want {
		t.Errorf("service config = %s, want %s (the leaf's policy)", res.serviceConfig, want)
	}

	// Healthy primary: back to it.
	primaryUp := leaf("primary", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1)))
	res = mustResolve(t, oneCluster(aggregate("agg", primaryUp, secondary)))
	if diff := cmp.Diff(addrsOf(summarize(t, res.endpoints)), []string{"10.0.0.1:80"}); diff != "" {
		t.Errorf("endpoints with a healthy primary (-got, +want):\n%s", diff)
	}

	// No leaf usable: an error naming each leaf and the skipped child.
	empty := leaf("empty", roundRobin)
	agg := aggregate("agg", primary, empty)
	agg.Skipped = []*depmgr.ClusterResult{{Name: "gone", Err: errors.New("resource does not exist")}}
	_, err := resolve(oneCluster(agg), randomHashHeader)
	if !errors.Is(err, ErrNoUsableEndpoints) {
		t.Fatalf("resolve = %v, want an error wrapping ErrNoUsableEndpoints", err)
	}
	for _, s := range []string{`aggregate cluster "agg"`, `leaf "primary"`, "1 UNHEALTHY", `leaf "empty"`, "no endpoint", `cluster "gone": resource does not exist`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

// TestResolver_State_LogicalDNS checks that a LOGICAL_DNS leaf, as depmgr
// gives it (one endpoint with every address, health UNKNOWN), is used,
// and that a failed lookup is reported with its note.
func TestResolver_State_LogicalDNS(t *testing.T) {
	dns := &depmgr.ClusterConfig{
		Name:    "dns",
		Cluster: &resources.Cluster{Name: "dns", Kind: resources.ClusterKindLogicalDNS, DNSHost: "example.com", DNSPort: 80, LBPolicy: roundRobin},
		Endpoints: &resources.Endpoints{ClusterName: "dns", Localities: []resources.Locality{{Weight: 1, Endpoints: []resources.Endpoint{
			{Addresses: []string{"192.0.2.1:80", "[2001:db8::1]:80"}, Weight: 1},
		}}}},
	}
	res := mustResolve(t, oneCluster(dns))
	if diff := cmp.Diff(addrsOf(summarize(t, res.endpoints)), []string{"192.0.2.1:80+[2001:db8::1]:80"}); diff != "" {
		t.Errorf("endpoints (-got, +want):\n%s", diff)
	}

	note := errors.New("lookup example.com: no such host")
	failed := &depmgr.ClusterConfig{Name: "dns", Cluster: dns.Cluster, Endpoints: &resources.Endpoints{ClusterName: "dns"}, ResolutionNote: note}
	_, err := resolve(oneCluster(failed), randomHashHeader)
	if !errors.Is(err, ErrNoUsableEndpoints) || !errors.Is(err, note) {
		t.Errorf("resolve = %v, want an error wrapping ErrNoUsableEndpoints and the resolution note", err)
	}
}

// TestResolver_State_WeightedClusters checks the union of the endpoints
// of weighted clusters: cluster weights in EndpointInfo and in the
// endpoints' weights, a failing cluster left out, duplicates removed, one
// policy required.
func TestResolver_State_WeightedClusters(t *testing.T) {
	a := leaf("a", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1), endpoint("10.0.0.2:80", healthy, 1)))
	b := leaf("b", roundRobin, locality("z", 0, 1, endpoint("10.0.1.1:80", healthy, 1), endpoint("10.0.0.1:80", healthy, 1)))
	broken := &depmgr.ClusterResult{Name: "broken", Err: errors.New(`xds: Cluster "broken": resource does not exist`)}
	weighted := func(ws ...resources.WeightedCluster) []resources.Route {
		return []resources.Route{catchAll(resources.RouteAction{Kind: resources.RouteActionWeightedClusters, WeightedClusters: ws})}
	}

	t.Run("union", func(t *testing.T) {
		res := mustResolve(t, snap(weighted(resources.WeightedCluster{Name: "a", Weight: 1}, resources.WeightedCluster{Name: "b", Weight: 3}), ok(a), ok(b)))
		gs := summarize(t, res.endpoints)
		// 10.0.0.1:80 is in both: kept once, as a's.
		if diff := cmp.Diff(addrsOf(gs), []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.1.1:80"}); diff != "" {
			t.Fatalf("endpoints (-got, +want):\n%s", diff)
		}
		one := float64(fixedPointOne)
		wantWeights := []uint32{uint32(one * 1 / 4 / 2), uint32(one * 1 / 4 / 2), uint32(one * 3 / 4 / 2)}
		wantClusters := []EndpointInfo{{RouteCluster: "a", ClusterWeight: 1}, {RouteCluster: "a", ClusterWeight: 1}, {RouteCluster: "b", ClusterWeight: 3}}
		for i, g := range gs {
			if g.Weight != wantWeights[i] {
				t.Errorf("endpoint %v: weight %d, want %d", g.Addrs, g.Weight, wantWeights[i])
			}
			if g.Info.RouteCluster != wantClusters[i].RouteCluster || g.Info.ClusterWeight != wantClusters[i].ClusterWeight {
				t.Errorf("endpoint %v: cluster %q weight %d, want %q weight %d", g.Addrs, g.Info.RouteCluster, g.Info.ClusterWeight, wantClusters[i].RouteCluster, wantClusters[i].ClusterWeight)
			}
		}
	})

	t.Run("a failing cluster is left out", func(t *testing.T) {
		res := mustResolve(t, snap(weighted(resources.WeightedCluster{Name: "broken", Weight: 3}, resources.WeightedCluster{Name: "b", Weight: 1}), broken, ok(b)))
		gs := summarize(t, res.endpoints)
		if diff := cmp.Diff(addrsOf(gs), []string{"10.0.1.1:80", "10.0.0.1:80"}); diff != "" {
			t.Errorf("endpoints (-got, +want):\n%s", diff)
		}
		if w := gs[0].Weight; w != fixedPointOne/2 {
			t.Errorf("weight of b's endpoint = %d, want %d (b has all the route's weight left)", w, fixedPointOne/2)
		}
	})

	t.Run("every cluster failing", func(t *testing.T) {
		unhealthyB := leaf("b", roundRobin, locality("z", 0, 1, endpoint("10.0.1.1:80", unhealthy, 1)))
		_, err := resolve(snap(weighted(resources.WeightedCluster{Name: "broken", Weight: 1}, resources.WeightedCluster{Name: "b", Weight: 1}), broken, ok(unhealthyB)), randomHashHeader)
		if !errors.Is(err, ErrNoUsableEndpoints) || !errors.Is(err, broken.Err) {
			t.Fatalf("resolve = %v, want an error wrapping both clusters' errors", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q spans lines", err)
		}
	})

	t.Run("a cluster listed twice gets both shares", func(t *testing.T) {
		res := mustResolve(t, snap(weighted(
			resources.WeightedCluster{Name: "a", Weight: 1},
			resources.WeightedCluster{Name: "b", Weight: 2},
			resources.WeightedCluster{Name: "a", Weight: 1},
		), ok(a), ok(b)))
		gs := summarize(t, res.endpoints)
		if diff := cmp.Diff(addrsOf(gs), []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.1.1:80"}); diff != "" {
			t.Fatalf("endpoints (-got, +want):\n%s", diff)
		}
		if g := gs[0]; g.Info.ClusterWeight != 2 || g.Weight != fixedPointOne/2/2 {
			t.Errorf("a's endpoint: cluster weight %d, weight %d; want 2, %d", g.Info.ClusterWeight, g.Weight, fixedPointOne/2/2)
		}
	})

	t.Run("different policies", func(t *testing.T) {
		lr := leaf("lr", resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 2}, locality("z", 0, 1, endpoint("10.0.2.1:80", healthy, 1)))
		_, err := resolve(snap(weighted(resources.WeightedCluster{Name: "a", Weight: 1}, resources.WeightedCluster{Name: "lr", Weight: 1}), ok(a), ok(lr)), randomHashHeader)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `clusters "a" and "lr" have different load balancing policies`) {
			t.Errorf("resolve = %v, want ErrUnsupported naming both clusters", err)
		}
	})
}

// TestResolver_State_DefaultRoute checks which route is used.
func TestResolver_State_DefaultRoute(t *testing.T) {
	c := leaf("c", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1)))
	d := leaf("d", roundRobin, locality("z", 0, 1, endpoint("10.0.9.1:80", healthy, 1)))
	prefix := func(p, cluster string) resources.Route {
		r := catchAll(toCluster(cluster))
		r.Match.Prefix = p
		return r
	}
	withHeader := prefix("", "d")
	withHeader.Match.Headers = []resources.HeaderMatcher{{Name: "x", Kind: resources.HeaderMatchPresent, Present: true}}
	half, all := uint32(500_000), uint32(1_000_000)
	halfFraction := prefix("/", "d")
	halfFraction.Match.FractionPerMillion = &half
	fullFraction := prefix("/", "c")
	fullFraction.Match.FractionPerMillion = &all
	exactPath := prefix("", "d")
	exactPath.Match.PathKind, exactPath.Match.Path = resources.PathKindPath, "/pkg.Svc/Method"

	tests := []struct {
		name   string
		routes []resources.Route
		want   string
	}{
		{"first catch-all", []resources.Route{prefix("", "c"), prefix("", "d")}, "10.0.0.1:80"},
		{"slash is catch-all", []resources.Route{prefix("/pkg.Svc/", "d"), prefix("/", "c")}, "10.0.0.1:80"},
		{"header matcher is not", []resources.Route{withHeader, prefix("", "c")}, "10.0.0.1:80"},
		{"partial runtime fraction is not", []resources.Route{halfFraction, prefix("", "c")}, "10.0.0.1:80"},
		{"full runtime fraction is", []resources.Route{fullFraction, prefix("", "d")}, "10.0.0.1:80"},
		{"exact path is not", []resources.Route{exactPath, prefix("", "c")}, "10.0.0.1:80"},
		{"no catch-all: the last route", []resources.Route{prefix("/a/", "d"), prefix("/b/", "c")}, "10.0.0.1:80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustResolve(t, snap(tt.routes, ok(c), ok(d)))
			if diff := cmp.Diff(addrsOf(summarize(t, res.endpoints)), []string{tt.want}); diff != "" {
				t.Errorf("endpoints (-got, +want):\n%s", diff)
			}
		})
	}
}

// TestResolver_State_Errors checks the configurations that cannot be
// used: each error wraps its cause and names where it comes from.
func TestResolver_State_Errors(t *testing.T) {
	c := leaf("c", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1)))
	notFound := errors.New(`xds: Cluster "c": resource does not exist`)
	named := catchAll(resources.RouteAction{Kind: resources.RouteActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "rls"})
	named.Name = "lookup"

	tests := []struct {
		name    string
		s       snapshot
		wantErr error
		want    []string // substrings of the message
	}{
		{
			name:    "no route",
			s:       snap(nil, ok(c)),
			wantErr: ErrNoRoute,
			want:    []string{`listener "svc", route configuration "rc", virtual host "vh"`},
		},
		{
			name:    "cluster specifier plugin",
			s:       snap([]resources.Route{named}, ok(c)),
			wantErr: ErrUnsupported,
			want:    []string{`virtual host "vh", route 0 ("lookup"): action cluster_specifier_plugin "rls"`},
		},
		{
			name:    "non forwarding",
			s:       snap([]resources.Route{catchAll(resources.RouteAction{Kind: resources.RouteActionNonForwarding})}, ok(c)),
			wantErr: ErrUnsupported,
			want:    []string{"route 0: action non_forwarding"},
		},
		{
			name:    "unsupported action",
			s:       snap([]resources.Route{catchAll(resources.RouteAction{Kind: resources.RouteActionUnsupported})}, ok(c)),
			wantErr: ErrUnsupported,
			want:    []string{"action unsupported"},
		},
		{
			name:    "cluster error",
			s:       snap([]resources.Route{catchAll(toCluster("c"))}, &depmgr.ClusterResult{Name: "c", Err: notFound}),
			wantErr: notFound,
			want:    []string{`route 0: cluster "c": xds: Cluster "c": resource does not exist`},
		},
		{
			name: "cluster not in the configuration",
			s:    snap([]resources.Route{catchAll(toCluster("other"))}, ok(c)),
			want: []string{`cluster "other" is not in the configuration`},
		},
		{
			name:    "no endpoints",
			s:       oneCluster(leaf("c", roundRobin)),
			wantErr: ErrNoUsableEndpoints,
			want:    []string{`cluster "c": no usable endpoints: the cluster has no endpoint`},
		},
		{
			name:    "all unhealthy",
			s:       oneCluster(leaf("c", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", unhealthy, 1), endpoint("10.0.0.2:80", draining, 1), endpoint("10.0.0.3:80", unhealthy, 1)))),
			wantErr: ErrNoUsableEndpoints,
			want:    []string{"none of the 3 endpoints is HEALTHY or UNKNOWN (2 UNHEALTHY, 1 DRAINING)"},
		},
		{
			name:    "EDS resource error",
			s:       oneCluster(&depmgr.ClusterConfig{Name: "c", Cluster: c.Cluster, Endpoints: &resources.Endpoints{}, ResolutionNote: notFound}),
			wantErr: notFound,
		},
		{
			name: "nil config",
			s:    snap([]resources.Route{catchAll(toCluster("c"))}, &depmgr.ClusterResult{Name: "c"}),
			want: []string{`cluster "c" has no configuration`},
		},
		{
			name:    "nil endpoints",
			s:       oneCluster(&depmgr.ClusterConfig{Name: "c", Cluster: c.Cluster}),
			wantErr: ErrNoUsableEndpoints,
		},
		{
			name: "no virtual host",
			s:    snapshot{listener: &resources.Listener{Name: "svc"}},
			want: []string{`listener "svc": no virtual host`},
		},
		{
			name:    "unknown policy",
			s:       oneCluster(leaf("c", resources.LBPolicy{Kind: 99}, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1)))),
			wantErr: ErrUnsupported,
			want:    []string{`cluster "c": load balancing policy LBPolicyKind(99)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := resolve(tt.s, randomHashHeader)
			if err == nil {
				t.Fatalf("resolve = %+v, want an error", res)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("resolve error %q does not wrap %q", err, tt.wantErr)
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("resolve error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// TestResolver_State_InlineRouteConfig checks that errors say the route
// configuration is inline when it is.
func TestResolver_State_InlineRouteConfig(t *testing.T) {
	s := snap(nil)
	s.routeConfig.Name = ""
	s.listener.RouteConfigName, s.listener.InlineRouteConfig = "", s.routeConfig
	_, err := resolve(s, randomHashHeader)
	if want := `listener "svc", inline route configuration "", virtual host "vh"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resolve = %v, want an error containing %q", err, want)
	}
}
