// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
)

// Cluster is what a route's cluster leads to: its priorities, highest
// first (for an aggregate cluster, the priorities of its leaf clusters in
// order, gRFC A37, A75), or the error that fails the requests routed to
// it.
type Cluster struct {
	// Name is the cluster's canonical name.
	Name string
	// Err, when set, fails the requests routed to the cluster; it names
	// the cluster. Priorities is then empty.
	Err error
	// Priorities are the priorities with a usable endpoint, highest
	// first; never empty when Err is nil.
	Priorities []*Priority
	// Audiences are the cluster's audiences of the GCP authentication
	// filter by filter instance name (gRFC A83, resources.Cluster.Audiences
	// of the route's cluster itself, aggregate or not); nil when none.
	Audiences map[string]string
}

// Priority is one priority of a leaf cluster: its localities with a
// usable endpoint, and the settings of the leaf cluster that apply to
// the requests sent to it.
type Priority struct {
	// Leaf is the leaf (EDS or LOGICAL_DNS) cluster's canonical name.
	Leaf string
	// EDSService is the EDS service name; Leaf when unset.
	EDSService string
	// Priority is the priority's number, 0 the highest.
	Priority uint32
	// Drops are the drop_overloads of the leaf's ClusterLoadAssignment
	// (gRFC A27); see PickDrop.
	Drops []resources.DropOverload
	// MaxRequests is the leaf's circuit breaking max_requests (gRFC A32,
	// 1024 when unset).
	MaxRequests uint32
	// LoadReported: the leaf has lrs_server "self"; its load is
	// recorded in lrs.Store.Cluster(Leaf, LRSService).
	LoadReported bool
	// LRSService is eds_cluster_config.service_name as received, for load
	// reports.
	LRSService string
	// Policy is the leaf's endpoint policy, and PolicyConfig what
	// Options.Policy returned for it (nil without Options.Policy).
	Policy       resources.LBPolicy
	PolicyConfig any
	// Security is the leaf's TLS configuration (gRFC A29); nil for
	// plaintext.
	Security *resources.SecurityConfig
	// HTTPConnect: the leaf's transport socket is the HTTP/1.1 proxy
	// transport socket (gRFC A86); its endpoints with a ProxyAddress are
	// reached through that proxy.
	HTTPConnect bool
	// Outlier is the leaf's outlier detection (gRFC A50); nil when it has
	// none, or one that ejects nothing (neither algorithm: gRFC A50's
	// no-op config, which only counts; with Options.HTTP, neither them
	// nor consecutive-failure ejection, ConsecutiveActive).
	Outlier *resources.OutlierDetection
	// BackendMetrics and NamedMetrics are the leaf's
	// lrs_report_endpoint_metrics (gRFC A85): the ORCA fields its load
	// reports carry (resources.Cluster.LRSReportEndpointMetrics and
	// LRSNamedMetrics).
	BackendMetrics resources.BackendMetrics
	NamedMetrics   []string
	// Sessions: the configuration has stateful sessions (gRFC A55); Hosts
	// lists the addresses sessions may be pinned to.
	Sessions bool
	Hosts    []SessionHost
	// Localities are the localities with a usable endpoint, in the order
	// of the ClusterLoadAssignment.
	Localities []Locality
	// HostCount is the number of the priority's endpoints in the
	// ClusterLoadAssignment whatever their health (those with an
	// address): Envoy's host count, against which the HTTP data path
	// weighs the priority's health (docs/http.md, "Load balancing").
	HostCount int
	// Res is the leaf cluster as decoded, for what only some data paths
	// read (the HTTP fields of: UpstreamProtocol, MaxRetries, the
	// consecutive-failure ejection of OutlierDetection).
	Res *resources.Cluster
}

// Locality is one locality of a priority.
type Locality struct {
	ID resources.LocalityID
	// Weight is the locality's load_balancing_weight, ≥ 1.
	Weight uint32
	// Endpoints are the locality's usable endpoints: HEALTHY or UNKNOWN,
	// with an address.
	Endpoints []Endpoint
}

// Endpoint is a usable endpoint of a locality.
type Endpoint struct {
	// Addresses are the endpoint's addresses ("host:port"), the first
	// being its primary (gRFC A61); never empty.
	Addresses []string
	// Weight is the endpoint's load_balancing_weight, ≥ 1.
	Weight uint32
	// PriorityShare is the endpoint's share of its priority: its share of
	// its locality times its locality's share of the priority, in UQ1.31
	// fixed point (1<<31 is the whole), at least 1: the weight of the
	// endpoint for a policy that balances over a whole priority, as gRPC
	// weights endpoints for ring hash (gRFC A42, A113).
	PriorityShare uint32
	// HealthStatus is HealthStatusHealthy or HealthStatusUnknown.
	HealthStatus resources.HealthStatus
	// Hostname is the endpoint's hostname, "" if unset; for a LOGICAL_DNS
	// cluster, its DNS name and port ("host:port", gRFC A81).
	Hostname string
	// ProxyAddress is the HTTP CONNECT proxy of the endpoint ("host:port",
	// gRFC A86): its own, else its locality's, when the leaf cluster has
	// the HTTP/1.1 proxy transport socket (Priority.HTTPConnect); "" for
	// a direct connection.
	ProxyAddress string
	// HashKey is the endpoint's ring hash key (gRFC A76); "" to hash the
	// address.
	HashKey string
}

// Key returns the endpoint's addresses joined with ",": how session
// cookies name it (gRFC A55, A60) and how outlier detection keys it.
func (e *Endpoint) Key() string { return AddressesKey(e.Addresses) }

// AddressesKey joins the addresses of an endpoint with ",".
func AddressesKey(addrs []string) string {
	if len(addrs) == 1 {
		return addrs[0]
	}
	return strings.Join(addrs, ",")
}

// SessionHost is an endpoint address that sessions may be pinned to
// (gRFC A55): UNKNOWN, HEALTHY or DRAINING.
type SessionHost struct {
	// Addr is the address, and Addrs its endpoint's addresses joined with
	// ",".
	Addr, Addrs string
	Health      resources.HealthStatus
	// Allowed: Health is in the cluster's override_host_status.
	Allowed  bool
	Locality resources.LocalityID
}

// BreakerKey is the key of the priority's circuit breaker counter in
// Breakers: its leaf and EDS service (gRFC A32).
func (p *Priority) BreakerKey() string { return p.Leaf + "\x00" + p.EDSService }

// GroupKey identifies the priority across configurations, by its leaf
// and number: the key of its outlier detection and its sessions.
func (p *Priority) GroupKey() string {
	return p.Leaf + "\x00" + strconv.FormatUint(uint64(p.Priority), 10)
}

// PickDrop decides whether a request to the priority is dropped (gRFC
// A27): each drop category drops its share of the requests, in order.
// It returns the index in Drops of the category that drops it.
func (p *Priority) PickDrop() (category int, dropped bool) {
	for i, d := range p.Drops {
		if d.PerMillion > 0 && rand.Uint32N(1_000_000) < d.PerMillion {
			return i, true
		}
	}
	return 0, false
}

// usable reports whether an endpoint of status h may be used: as in gRPC
// (gRFC A27; gRPC Go's cluster resolver), HEALTHY and UNKNOWN only.
func usable(h resources.HealthStatus) bool {
	return h == resources.HealthStatusHealthy || h == resources.HealthStatusUnknown
}

// buildCluster returns the Cluster of the route cluster name, whose
// result is r (nil when absent). Its error names the cluster.
func buildCluster(name string, r *depmgr.ClusterResult, opts Options, sessions bool) *Cluster {
	cc := &Cluster{Name: name}
	switch {
	case r == nil:
		cc.Err = fmt.Errorf("cluster %q is not in the configuration", name)
	case r.Err != nil:
		cc.Err = fmt.Errorf("cluster %q: %w", name, r.Err)
	case r.Config == nil || r.Config.Cluster == nil:
		cc.Err = fmt.Errorf("cluster %q has no configuration", name)
	}
	if cc.Err != nil {
		return cc
	}
	cc.Audiences = r.Config.Cluster.Audiences
	leaves := []*depmgr.ClusterConfig{r.Config}
	if r.Config.IsAggregate() {
		leaves = r.Config.Leaves
	}
	var errs []error
	for _, leaf := range leaves {
		if leaf == nil || leaf.Cluster == nil {
			continue
		}
		ps, err := leafPriorities(leaf, opts, sessions)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %q: %w", leaf.Name, err))
			continue
		}
		cc.Priorities = append(cc.Priorities, ps...)
	}
	if len(cc.Priorities) == 0 {
		for _, sk := range r.Config.Skipped {
			if sk != nil {
				errs = append(errs, fmt.Errorf("cluster %q: %w", sk.Name, sk.Err))
			}
		}
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("cluster %q: %w", name, ErrNoUsableEndpoints))
		}
		if r.Config.IsAggregate() {
			cc.Err = fmt.Errorf("aggregate cluster %q: %w", name, joinErrors(errs))
		} else {
			cc.Err = joinErrors(errs)
		}
	}
	return cc
}

// leafPriorities returns the priorities of a leaf cluster that have a
// usable endpoint, highest first; an error when no priority has a usable
// endpoint, when the data path cannot run the cluster's policy, or when
// its security config names a certificate provider instance that cannot
// be run. With sessions, each priority lists the addresses sessions may
// be pinned to, DRAINING ones included (gRFC A55).
func leafPriorities(leaf *depmgr.ClusterConfig, opts Options, sessions bool) ([]*Priority, error) {
	if _, err := usablePriority(leaf); err != nil {
		return nil, err
	}
	c := leaf.Cluster
	var policyConfig any
	if opts.Policy != nil {
		var err error
		if policyConfig, err = opts.Policy(c.LBPolicy); err != nil {
			return nil, err
		}
	}
	if err := checkSecurity(c.Security, opts.Providers); err != nil {
		return nil, err
	}
	var od *resources.OutlierDetection
	if outlierActive(c.OutlierDetection) || (opts.HTTP && ConsecutiveActive(c.OutlierDetection)) {
		od = c.OutlierDetection
	}
	eds := c.EDSServiceName
	if eds == "" {
		eds = leaf.Name
	}
	var drops []resources.DropOverload
	if leaf.Endpoints != nil {
		drops = leaf.Endpoints.DropOverloads
	}
	has := func(e *resources.Endpoint) bool { return usable(e.HealthStatus) && len(e.Addresses) > 0 }
	// The weight of the localities of each priority that have a usable
	// endpoint.
	localitySums := make(map[uint32]uint64)
	for _, l := range leaf.Endpoints.Localities {
		if slices.ContainsFunc(l.Endpoints, func(e resources.Endpoint) bool { return has(&e) }) {
			localitySums[l.Priority] += uint64(l.Weight)
		}
	}
	// A LOGICAL_DNS cluster's endpoint is its DNS name, with its port
	// (gRFC A81, A101).
	var dnsName string
	if c.Kind == resources.ClusterKindLogicalDNS {
		dnsName = net.JoinHostPort(c.DNSHost, strconv.FormatUint(uint64(c.DNSPort), 10))
	}
	hosts := make(map[uint32]int) // by priority, whatever their health
	for _, l := range leaf.Endpoints.Localities {
		for i := range l.Endpoints {
			if len(l.Endpoints[i].Addresses) > 0 {
				hosts[l.Priority]++
			}
		}
	}
	byPrio := make(map[uint32]*Priority)
	var out []*Priority
	for _, l := range leaf.Endpoints.Localities {
		var sum uint64
		for i := range l.Endpoints {
			if has(&l.Endpoints[i]) {
				sum += uint64(l.Endpoints[i].Weight)
			}
		}
		var eps []Endpoint
		for i := range l.Endpoints {
			e := &l.Endpoints[i]
			if !has(e) {
				continue
			}
			ep := Endpoint{
				Addresses: e.Addresses, Weight: e.Weight, HealthStatus: e.HealthStatus, Hostname: e.Hostname, HashKey: e.HashKey,
				PriorityShare: max(1, fixedPointMul(fraction(uint64(e.Weight), sum), fraction(uint64(l.Weight), localitySums[l.Priority]))),
			}
			if ep.Hostname == "" {
				ep.Hostname = dnsName
			}
			if c.HTTPConnect {
				// gRFC A86: the endpoint's proxy, else its locality's.
				if ep.ProxyAddress = e.ProxyAddress; ep.ProxyAddress == "" {
					ep.ProxyAddress = l.ProxyAddress
				}
			}
			eps = append(eps, ep)
		}
		if len(eps) == 0 {
			continue
		}
		p := byPrio[l.Priority]
		if p == nil {
			p = &Priority{
				Leaf: leaf.Name, EDSService: eds, Priority: l.Priority, Drops: drops, MaxRequests: c.MaxRequests,
				LoadReported: c.LRSServerSelf, LRSService: c.EDSServiceName, Policy: c.LBPolicy, PolicyConfig: policyConfig,
				Security: c.Security, HTTPConnect: c.HTTPConnect, Outlier: od, Sessions: sessions, Res: c, HostCount: hosts[l.Priority],
			}
			if c.LRSServerSelf && c.LRSReportEndpointMetrics != 0 {
				p.BackendMetrics, p.NamedMetrics = c.LRSReportEndpointMetrics, c.LRSNamedMetrics()
			}
			byPrio[l.Priority] = p
			out = append(out, p)
		}
		p.Localities = append(p.Localities, Locality{ID: l.ID, Weight: l.Weight, Endpoints: eps})
	}
	if sessions {
		addSessionHosts(leaf, byPrio)
	}
	// Priorities are numbered without gaps; those without a
	// usable endpoint are left out, which fails over at once, as their
	// child would report TRANSIENT_FAILURE.
	slices.SortStableFunc(out, func(a, b *Priority) int { return int(a.Priority) - int(b.Priority) })
	return out, nil
}

// addSessionHosts lists, in each priority of byPrio, the addresses of
// leaf's endpoints of that priority that are UNKNOWN, HEALTHY or DRAINING,
// with whether the cluster's override_host_status allows sessions to them
// (gRFC A55).
func addSessionHosts(leaf *depmgr.ClusterConfig, byPrio map[uint32]*Priority) {
	for _, l := range leaf.Endpoints.Localities {
		p := byPrio[l.Priority]
		if p == nil {
			continue
		}
		for _, e := range l.Endpoints {
			switch e.HealthStatus {
			case resources.HealthStatusUnknown, resources.HealthStatusHealthy, resources.HealthStatusDraining:
			default:
				continue
			}
			addrs := strings.Join(e.Addresses, ",")
			for _, a := range e.Addresses {
				p.Hosts = append(p.Hosts, SessionHost{Addr: a, Addrs: addrs, Health: e.HealthStatus, Allowed: leaf.Cluster.OverrideHostStatus.Contains(e.HealthStatus), Locality: l.ID})
			}
		}
	}
}

// usablePriority returns the highest priority (lowest number) of the
// endpoints of leaf that has a usable endpoint, or an error wrapping
// ErrNoUsableEndpoints that says why there is none.
func usablePriority(leaf *depmgr.ClusterConfig) (uint32, error) {
	var (
		best  uint32
		found bool
		total int
		bad   map[resources.HealthStatus]int
	)
	if leaf.Endpoints != nil {
		for _, l := range leaf.Endpoints.Localities {
			for _, ep := range l.Endpoints {
				total++
				if !usable(ep.HealthStatus) {
					if bad == nil {
						bad = make(map[resources.HealthStatus]int)
					}
					bad[ep.HealthStatus]++
					continue
				}
				if !found || l.Priority < best {
					best, found = l.Priority, true
				}
			}
		}
	}
	switch {
	case found:
		return best, nil
	case leaf.ResolutionNote != nil:
		return 0, fmt.Errorf("%w: %w", ErrNoUsableEndpoints, leaf.ResolutionNote)
	case total == 0:
		return 0, fmt.Errorf("%w: the cluster has no endpoint", ErrNoUsableEndpoints)
	}
	statuses := make([]resources.HealthStatus, 0, len(bad))
	for h := range bad {
		statuses = append(statuses, h)
	}
	slices.Sort(statuses)
	counts := make([]string, len(statuses))
	for i, h := range statuses {
		counts[i] = fmt.Sprintf("%d %s", bad[h], h)
	}
	return 0, fmt.Errorf("%w: none of the %d endpoints is HEALTHY or UNKNOWN (%s)", ErrNoUsableEndpoints, total, strings.Join(counts, ", "))
}

// checkSecurity returns an error when sc names a certificate provider
// instance that providers cannot run (not in the bootstrap, an unknown
// plugin, an invalid config): the leaf cluster's requests then fail with
// it. The client NACKs Clusters that name instances the bootstrap lacks
// so that is only seen with a store made from another
// bootstrap.
func checkSecurity(sc *resources.SecurityConfig, providers interface{ Check(string) error }) error {
	if sc == nil {
		return nil
	}
	if providers == nil {
		return errors.New("the cluster has a TLS configuration, and the channel no certificate provider store")
	}
	if !sc.SystemRootCerts {
		if err := providers.Check(sc.RootInstanceName); err != nil {
			return err
		}
	}
	if sc.IdentityInstanceName != "" {
		return providers.Check(sc.IdentityInstanceName)
	}
	return nil
}

// outlierActive reports whether od ejects anything: outlier detection with
// neither algorithm only counts (gRFC A50 "no-op" config), which data
// paths skip.
func outlierActive(od *resources.OutlierDetection) bool {
	return od != nil && (od.SuccessRate != nil || od.FailurePercentage != nil)
}

// Fixed-point shares, UQ1.31 (gRFC A113): 1<<31 is 1.
const fixedPointBits = 31

// fraction returns num/den in UQ1.31; num ≤ den; 0 when den is 0.
func fraction(num, den uint64) uint32 {
	if den == 0 {
		return 0
	}
	return uint32(num << fixedPointBits / den)
}

func fixedPointMul(a, b uint32) uint32 {
	return uint32(uint64(a) * uint64(b) >> fixedPointBits)
}
