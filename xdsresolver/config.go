// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver/internal/router"
)

// buildConfig compiles the virtual host of s (package dataplane) and
// what the router runs of it: for each priority, the children of its
// endpoint policy and their endpoints. ringHashHeader is the header
// hashed when a route to a RING_HASH cluster has no hash policy ("" for
// a random hash). Errors concern the whole virtual host; cluster errors
// are kept in the cluster's config and fail only the RPCs routed there.
func buildConfig(s dataplane.Snapshot, ringHashHeader string, providers *xdscreds.ProviderStore) (*router.Config, error) {
	opts := dataplane.Options{DefaultHashHeader: ringHashHeader, Policy: childPolicyOf, HeaderMutations: grpcHeaderMutations}
	if providers != nil {
		opts.Providers = providers
	}
	dp, err := dataplane.Build(s, opts)
	if err != nil {
		return nil, err
	}
	cfg := &router.Config{DP: dp, Clusters: make(map[string]*router.Cluster, len(dp.Clusters)), Providers: providers, Plugins: plugins(dp, s.RouteConfig)}
	for name, c := range dp.Clusters {
		rc := &router.Cluster{DP: c}
		for _, p := range c.Priorities {
			rc.Priorities = append(rc.Priorities, routerPriority(p))
		}
		cfg.Clusters[name] = rc
	}
	return cfg, nil
}

// routerPriority returns what the router runs of priority p: a child per
// locality, or, for a policy over the whole priority (ring_hash), one
// child holding every endpoint of the priority, each weighted by its
// share of the priority (gRFC A42, A113). Every endpoint carries its
// EndpointInfo, its weight and its ring hash key.
func routerPriority(p *dataplane.Priority) *router.Priority {
	policy := p.PolicyConfig.(router.ChildPolicy) // childPolicyOf's
	rp := &router.Priority{Priority: p, Policy: policy, Labels: make(map[resources.LocalityID]*calllabels.Labels, len(p.Localities)),
		BackendMetrics: lrs.NewBackendMetrics(p.BackendMetrics, p.NamedMetrics)}
	sec := securityKey(p.Security)
	if p.Outlier != nil {
		sec += "\x00outlier-detection"
	}
	if p.Sessions {
		sec += "\x00sessions"
	}
	for _, l := range p.Localities {
		// As gRPC's cluster_impl picker labels an RPC: the leaf cluster,
		// the locality in gRFC A76's form.
		lbl := rp.Labels[l.ID]
		if lbl == nil {
			lbl = &calllabels.Labels{Locality: l.ID.String(), BackendService: p.Leaf}
			rp.Labels[l.ID] = lbl
		}
		eps := make([]resolver.Endpoint, 0, len(l.Endpoints))
		for i := range l.Endpoints {
			e := &l.Endpoints[i]
			ep := resolver.Endpoint{Addresses: make([]resolver.Address, len(e.Addresses))}
			for j, a := range e.Addresses {
				// The connection's needs: the endpoint's host name (SNI,
				// gRFC A101) and its HTTP CONNECT proxy (gRFC A86).
				ep.Addresses[j] = handshake.SetProxyAddress(handshake.SetHostname(resolver.Address{Addr: a}, e.Hostname), e.ProxyAddress)
			}
			w := e.Weight
			if policy.PerPriority {
				w = e.PriorityShare
			}
			ep = weight.Set(ep, weight.EndpointInfo{Weight: w})
			ep = ringhash.SetHashKey(ep, e.HashKey)
			ep = setEndpointInfo(ep, EndpointInfo{
				Cluster: p.Leaf, Locality: l.ID, Priority: p.Priority,
				LocalityWeight: l.Weight, Weight: e.Weight, HealthStatus: e.HealthStatus, Hostname: e.Hostname,
			})
			eps = append(eps, ep)
		}
		if policy.PerPriority {
			if len(rp.Children) == 0 {
				rp.Children = []router.ChildConfig{{Weight: 1, Key: childKey(p.Leaf, p.Priority, "*", policy.Name, sec), AddrLocality: make(map[string]resources.LocalityID)}}
			}
			rp.Children[0].Endpoints = append(rp.Children[0].Endpoints, eps...)
			for _, e := range l.Endpoints {
				for _, a := range e.Addresses {
					rp.Children[0].AddrLocality[a] = l.ID
				}
			}
			continue
		}
		rp.Children = append(rp.Children, router.ChildConfig{Locality: l.ID, Weight: l.Weight, Key: childKey(p.Leaf, p.Priority, l.ID.String(), policy.Name, sec), Endpoints: eps, Labels: lbl})
	}
	return rp
}

// childKey is the key of the child balancer of a locality (or of a whole
// priority) of a leaf cluster with an endpoint policy and a security
// config (securityKey, with outlier detection and sessions).
func childKey(leaf string, prio uint32, locality, policy, security string) string {
	return leaf + "\x00" + strconv.FormatUint(uint64(prio), 10) + "\x00" + locality + "\x00" + policy + "\x00" + security
}

// childPolicyOf returns the grpc balancer and its parsed config for the
// endpoint policy p of a leaf cluster, as a router.ChildPolicy (see the
// package doc, "Load balancing"): dataplane.Options.Policy. A ring_hash
// child hashes the header the router sets from the route's hash policies
// (requestHashHeader, gRFC A76).
func childPolicyOf(p resources.LBPolicy) (any, error) {
	name, cfg, err := policyConfig(p, router.HashHeader)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the config of %s: %w", name, err)
	}
	b := balancer.Get(name)
	// As in gRPC's xDS LB tree: a policy inside wrr_locality (lb_policy
	// ROUND_ROBIN, or load_balancing_policy WrrLocality) runs per
	// locality, under a pick by locality weight; any other (ring_hash,
	// lb_policy LEAST_REQUEST, a policy of load_balancing_policy on its
	// own, a custom one) over every endpoint of the priority.
	perPriority := name == lbRingHash || !p.WeightedByLocality
	cp := router.ChildPolicy{Name: name, JSON: string(js), PerPriority: perPriority, RingHash: name == lbRingHash}
	if parser, ok := b.(balancer.ConfigParser); ok {
		if cp.Config, err = parser.ParseConfig(js); err != nil {
			return nil, fmt.Errorf("load balancing policy %s: grpc's %s rejects %s: %w", p.Kind, name, js, err)
		}
	}
	return cp, nil
}
