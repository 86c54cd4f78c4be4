// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resources"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// builtinTypes are the types the kit works with, in the order of the
// protocol's tree: Listener, RouteConfiguration, Cluster,
// ClusterLoadAssignment.
var builtinTypes = []string{resources.ListenerTypeURL, resources.RouteConfigTypeURL, resources.ClusterTypeURL, resources.EndpointsTypeURL}

// wildcardTypes are the types with a wildcard subscription and complete
// SotW responses.
var wildcardTypes = []string{resources.ListenerTypeURL, resources.ClusterTypeURL}

func isWildcardType(typeURL string) bool { return slices.Contains(wildcardTypes, typeURL) }

// absentName is a resource name of typeURL that no server has.
func absentName(typeURL string) string {
	return "xds-conformance-absent-" + typeName(typeURL)
}

// fetcher gets resources of one type for discovery, in one variant.
// names nil asks for the legacy wildcard. It returns the resources
// received, by name; an error wrapping errNotAnswered when nothing came.
type fetcher func(typeURL string, names []string) (map[string]*anypb.Any, error)

// discover finds the resources the checks work with (Config.Listeners
// and the others, or the wildcard and the references between them) with
// the first variant of the run that the server implements, and notes the
// variants it does not implement. It returns an error when the server
// cannot be reached.
func (k *kit) discover(ctx context.Context) error {
	order := []Variant{SotW, SotWPerType, Delta, DeltaPerType, REST}
	var tried []string
	for _, v := range order {
		if !slices.Contains(k.cfg.Variants, v) {
			continue
		}
		err := k.discoverWith(ctx, v)
		if err == nil {
			k.probe(ctx, v)
			return nil
		}
		if v.grpc() && unimplemented(err) {
			k.unavailable[v] = unavailableReason(v)
			tried = append(tried, string(v))
			continue
		}
		return fmt.Errorf("conformance: reaching the management server (%s): %w", v, err)
	}
	return fmt.Errorf("conformance: the management server implements none of the variants asked for (%v)", tried)
}

// unavailableReason is the detail of the checks of a variant whose
// service the server does not implement.
func unavailableReason(v Variant) string {
	switch v {
	case SotW:
		return "the server does not implement AggregatedDiscoveryService.StreamAggregatedResources"
	case Delta:
		return "the server does not implement AggregatedDiscoveryService.DeltaAggregatedResources (no incremental ADS)"
	case SotWPerType:
		return "the server does not implement the per-type SotW services (StreamListeners, …)"
	default:
		return "the server does not implement the per-type incremental services (DeltaListeners, …)"
	}
}

// discoverWith discovers with variant v.
func (k *kit) discoverWith(ctx context.Context, v Variant) error {
	s := k.newSession(ctx, v)
	defer s.close()
	fetch := k.fetcher(ctx, s)
	found := make(map[string]map[string]*anypb.Any)
	get := func(typeURL string, names []string) error {
		got, err := fetch(typeURL, names)
		switch {
		case errors.Is(err, errNotAnswered):
			what := "the wildcard (an empty resource_names)"
			if names != nil {
				what = nameList(names)
			}
			k.notes = append(k.notes, fmt.Sprintf("%s: a request for %s was not answered within %v", typeName(typeURL), what, k.cfg.Timeout))
			return nil
		case err != nil:
			return err
		}
		if found[typeURL] == nil {
			found[typeURL] = make(map[string]*anypb.Any)
		}
		for n, a := range got {
			if names == nil || slices.Contains(names, n) {
				found[typeURL][n] = a
			}
		}
		if names == nil {
			k.wild[typeURL] = sortedKeys(got)
		}
		for _, n := range names {
			if got[n] == nil {
				k.notes = append(k.notes, fmt.Sprintf("%s %q: requested, not served", typeName(typeURL), n))
			}
		}
		return nil
	}
	given := func(names []string) []string {
		if len(names) == 0 {
			return nil
		}
		return names
	}

	if err := get(resources.ListenerTypeURL, given(k.cfg.Listeners)); err != nil {
		return err
	}
	routes := slices.Clone(k.cfg.Routes)
	for _, a := range found[resources.ListenerTypeURL] {
		routes = appendNew(routes, rdsNames(a)...)
	}
	if len(routes) > 0 {
		if err := get(resources.RouteConfigTypeURL, routes); err != nil {
			return err
		}
	}
	if err := get(resources.ClusterTypeURL, given(k.cfg.Clusters)); err != nil {
		return err
	}
	if len(k.cfg.Clusters) == 0 && len(found[resources.ClusterTypeURL]) == 0 {
		var referenced []string
		for _, a := range found[resources.RouteConfigTypeURL] {
			referenced = appendNew(referenced, routeClusters(a)...)
		}
		if len(referenced) > 0 {
			if err := get(resources.ClusterTypeURL, referenced); err != nil {
				return err
			}
		}
	}
	endpoints := slices.Clone(k.cfg.Endpoints)
	for _, a := range found[resources.ClusterTypeURL] {
		endpoints = appendNew(endpoints, edsName(a)...)
	}
	if len(endpoints) > 0 {
		if err := get(resources.EndpointsTypeURL, endpoints); err != nil {
			return err
		}
	}
	for _, t := range builtinTypes {
		k.names[t] = sortedKeys(found[t])
	}
	return nil
}

// fetcher returns the fetcher of s's variant, or of REST-JSON polls when
// s is of REST.
func (k *kit) fetcher(ctx context.Context, s *session) fetcher {
	byName := func(rs []*response) map[string]*anypb.Any {
		out := make(map[string]*anypb.Any)
		for _, r := range rs {
			for i, n := range r.names {
				if r.sotw != nil {
					out[n] = r.sotw.GetResources()[i]
				} else if res := r.delta.GetResources()[i]; res.GetResource() != nil {
					out[n] = res.GetResource()
				}
			}
		}
		return out
	}
	switch {
	case s.v == REST:
		return func(typeURL string, names []string) (map[string]*anypb.Any, error) {
			pr, err := k.poll(ctx, typeURL, "", k.cfg.Timeout, names...)
			switch {
			case err != nil:
				return nil, err
			case pr.resp == nil:
				return nil, fmt.Errorf("%w within %v (HTTP status %d)", errNotAnswered, k.cfg.Timeout, pr.code)
			}
			return byName([]*response{pr.resp}), nil
		}
	case s.v.delta():
		return func(typeURL string, names []string) (map[string]*anypb.Any, error) {
			if err := s.subscribe(typeURL, names, nil); err != nil {
				return nil, err
			}
			rs, err := s.until(typeURL, true, func(got []*response) bool {
				if len(got) == 0 {
					return false
				}
				return names == nil || covers(append(union(got), removedIn(got)...), names)
			})
			if err != nil {
				return nil, err
			}
			more, err := s.settle(true, typeURL)
			return byName(append(rs, more...)), err
		}
	default:
		return func(typeURL string, names []string) (map[string]*anypb.Any, error) {
			if err := s.sotw(typeURL, names...); err != nil {
				return nil, err
			}
			r, err := s.next(typeURL)
			if err != nil {
				return nil, err
			}
			return byName([]*response{r}), s.ack(r)
		}
	}
}

// probe finds out which of the gRPC variants of the run other than done
// (the one discovery used) the server does not implement: a stream of
// each (of each type, per type) is opened and asked for what discovery
// found, and a stream that fails with UNIMPLEMENTED within Config.Quiet
// marks the variant unavailable.
func (k *kit) probe(ctx context.Context, done Variant) {
	for _, v := range k.cfg.Variants {
		if v == done || !v.grpc() {
			continue
		}
		s := k.newSession(ctx, v)
		types := []string{resources.ListenerTypeURL}
		if v.perType() {
			types = builtinTypes
		}
		for _, t := range types {
			var err error
			if v.delta() {
				err = s.subscribe(t, k.names[t], nil)
			} else {
				err = s.sotw(t, k.names[t]...)
			}
			if err == nil {
				_, err = s.wait(t, k.cfg.Quiet)
			}
			if err != nil && unimplemented(err) {
				k.unavailable[v] = unavailableReason(v)
				break
			}
		}
		s.close()
	}
}

// rdsNames returns the RouteConfiguration names a Listener's
// HttpConnectionManagers name (its API listener's, and its filter
// chains').
func rdsNames(a *anypb.Any) []string {
	l := &v3listenerpb.Listener{}
	if inner, err := resources.Unwrap(a); err != nil || proto.Unmarshal(inner.GetValue(), l) != nil {
		return nil
	}
	var names []string
	hcm := func(a *anypb.Any) {
		h := &v3httppb.HttpConnectionManager{}
		if a.MessageIs(h) && a.UnmarshalTo(h) == nil && h.GetRds().GetRouteConfigName() != "" {
			names = appendNew(names, h.GetRds().GetRouteConfigName())
		}
	}
	hcm(l.GetApiListener().GetApiListener())
	chains := append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain())
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			hcm(f.GetTypedConfig())
		}
	}
	return names
}

// routeClusters returns the clusters a RouteConfiguration's routes name.
func routeClusters(a *anypb.Any) []string {
	rc := &v3routepb.RouteConfiguration{}
	if inner, err := resources.Unwrap(a); err != nil || proto.Unmarshal(inner.GetValue(), rc) != nil {
		return nil
	}
	var names []string
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if c := r.GetRoute().GetCluster(); c != "" {
				names = appendNew(names, c)
			}
			for _, wc := range r.GetRoute().GetWeightedClusters().GetClusters() {
				if wc.GetName() != "" {
					names = appendNew(names, wc.GetName())
				}
			}
		}
	}
	return names
}

// edsName returns the ClusterLoadAssignment an EDS Cluster names, if it
// is one.
func edsName(a *anypb.Any) []string {
	c := &v3clusterpb.Cluster{}
	if inner, err := resources.Unwrap(a); err != nil || proto.Unmarshal(inner.GetValue(), c) != nil {
		return nil
	}
	if c.GetType() != v3clusterpb.Cluster_EDS {
		return nil
	}
	if n := c.GetEdsClusterConfig().GetServiceName(); n != "" {
		return []string{n}
	}
	return []string{c.GetName()}
}

// appendNew appends the names of add that names lacks.
func appendNew(names []string, add ...string) []string {
	for _, n := range add {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
