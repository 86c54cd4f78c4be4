// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

const (
	rbacTypeURL         = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
	rbacPerRouteTypeURL = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
)

// routeTable is what the RPCs of one filter chain are checked against:
// its RouteConfiguration (inline or from RDS) with, per route, the
// compiled match and the RBAC engines of the chain's HTTP filters with the
// route's overrides (gRFC A36, A39, A41). It is immutable; a chain swaps
// in a new one when its RouteConfiguration changes.
type routeTable struct {
	err    error                  // non-nil: every RPC fails with UNAVAILABLE and this error
	rc     *resources.RouteConfig // nil when err is set
	vhosts [][]serverRoute        // by index of rc.VirtualHosts
	nodeID string                 // for status messages
}

// serverRoute is one route of a routeTable.
type serverRoute struct {
	match   routing.Match
	forward bool           // the action is non_forwarding_action
	engines []*rbac.Engine // the enforcing RBAC filters, in chain order
}

// errorTable returns a table whose RPCs fail with err.
func errorTable(err error, nodeID string) *routeTable {
	return &routeTable{err: err, nodeID: nodeID}
}

// buildRouteTable compiles rc for the HTTP filters fc of a filter chain.
// A configuration the server cannot apply (an RBAC filter naming an audit
// logger it does not have, an override of the wrong type) gives a table
// whose RPCs fail with the error.
func buildRouteTable(filters []resources.HTTPFilter, rc *resources.RouteConfig, auditors map[string]audit.LoggerBuilder, nodeID string) *routeTable {
	b := tableBuilder{auditors: auditors, overrides: make(map[*anypb.Any]*rbac.Engine)}
	rt := &routeTable{rc: rc, vhosts: make([][]serverRoute, len(rc.VirtualHosts)), nodeID: nodeID}
	idx := routing.NewIndex()
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		routes := make([]serverRoute, len(vh.Routes))
		for j := range vh.Routes {
			r := &vh.Routes[j]
			routes[j] = serverRoute{match: routing.Compile(&r.Match, idx), forward: r.Action.Kind == resources.RouteActionNonForwarding}
			for _, f := range filters {
				if f.TypeURL != rbacTypeURL {
					continue // the router: the end of the chain
				}
				e, err := b.engine(f, r.FilterOverrides, vh.FilterOverrides)
				if err != nil {
					return errorTable(fmt.Errorf("RouteConfiguration %q, virtual host %q, route %d, HTTP filter %q: %w", rc.Name, vh.Name, j, f.Name, err), nodeID)
				}
				if e != nil {
					routes[j].engines = append(routes[j].engines, e)
				}
			}
		}
		rt.vhosts[i] = routes
	}
	return rt
}

// problems describes what of rt fails RPCs, "" when nothing: its error,
// or routes whose action is not non_forwarding_action (gRFC A36
// "configuration error logging").
func (rt *routeTable) problems() string {
	if rt.err != nil {
		return rt.err.Error()
	}
	n := 0
	for _, routes := range rt.vhosts {
		for _, r := range routes {
			if !r.forward {
				n++
			}
		}
	}
	if n > 0 {
		return fmt.Sprintf("RouteConfiguration %q has %d routes whose action is not non_forwarding_action: their RPCs fail with UNAVAILABLE", rt.rc.Name, n)
	}
	return ""
}

// tableBuilder builds the RBAC engines of one routeTable, once per
// filter and once per override.
type tableBuilder struct {
	auditors  map[string]audit.LoggerBuilder
	base      map[string]*rbac.Engine // by filter name
	baseErr   map[string]error
	overrides map[*anypb.Any]*rbac.Engine
}

// engine returns the engine of RBAC filter f for a route: the route's
// override, else the virtual host's, else the filter's own config (gRFC
// A39; a server has no cluster level). An RBACPerRoute replaces the
// filter's config; without rbac, it disables the filter on the route.
// Package resources decoded the filter's rules and the overrides'.
func (b *tableBuilder) engine(f resources.HTTPFilter, route, vhost map[string]resources.FilterOverride) (*rbac.Engine, error) {
	o, ok := route[f.Name]
	if !ok {
		o, ok = vhost[f.Name]
	}
	if !ok {
		if b.base == nil {
			b.base, b.baseErr = make(map[string]*rbac.Engine), make(map[string]error)
		}
		if e, done := b.base[f.Name]; done {
			return e, b.baseErr[f.Name]
		}
		e, err := rbac.NewEngine(f.Name, f.RBAC, b.auditors)
		b.base[f.Name], b.baseErr[f.Name] = e, err
		return e, err
	}
	if e, done := b.overrides[o.Config]; done {
		return e, nil
	}
	if o.TypeURL != rbacPerRouteTypeURL {
		return nil, fmt.Errorf("typed_per_filter_config of type %q for an RBAC filter, want RBACPerRoute", o.TypeURL)
	}
	e, err := rbac.NewEngine(f.Name, o.RBAC, b.auditors)
	if err != nil {
		return nil, err
	}
	b.overrides[o.Config] = e
	return e, nil
}

// check routes the RPC of method and ctx (gRFC A36): the virtual host by
// :authority, the first route that matches as on a client (gRFC A28);
// then the route's RBAC filters (gRFC A41), denying with
// PERMISSION_DENIED; then the action, which must be non_forwarding_action.
// Every other failure is UNAVAILABLE.
func (rt *routeTable) check(ctx context.Context, method string) error {
	if rt.err != nil {
		return rt.unavailable(rt.err.Error())
	}
	md, _ := metadata.FromIncomingContext(ctx)
	authority := ""
	if a := md.Get(":authority"); len(a) > 0 {
		authority = a[0]
	}
	vh, err := routing.SelectVirtualHost(authority, rt.rc)
	if err != nil {
		return rt.unavailable(fmt.Sprintf("RouteConfiguration %q: authority %q: %v", rt.rc.Name, authority, err))
	}
	var routes []serverRoute
	for i := range rt.rc.VirtualHosts {
		if &rt.rc.VirtualHosts[i] == vh {
			routes = rt.vhosts[i]
		}
	}
	h := routing.Headers{MD: md}
	for i := range routes {
		r := &routes[i]
		if !r.match.Matches(method, &h) {
			continue
		}
		if len(r.engines) > 0 {
			info := &rpcInfo{method: method, md: md}
			info.peer, _ = peer.FromContext(ctx)
			for _, e := range r.engines {
				if ok, policy := e.Authorize(info); !ok {
					return denied(e, policy)
				}
			}
		}
		if !r.forward {
			return rt.unavailable(fmt.Sprintf("the RPC matched route %d of virtual host %q, whose action is not non_forwarding_action", i, vh.Name))
		}
		return nil
	}
	return rt.unavailable(fmt.Sprintf("the RPC matched no route of virtual host %q", vh.Name))
}

func (rt *routeTable) unavailable(msg string) error {
	return status.Errorf(codes.Unavailable, "xds: %s (node %q)", msg, rt.nodeID)
}

// denied is the status of an RPC that RBAC filter e denied.
func denied(e *rbac.Engine, policy string) error {
	if e.Allow() {
		return status.Errorf(codes.PermissionDenied, "RBAC: the RPC matched no policy of the ALLOW filter %q", e.Filter())
	}
	return status.Errorf(codes.PermissionDenied, "RBAC: the RPC matched policy %q of the DENY filter %q", policy, e.Filter())
}

// errNoRouteConfig is the error of a chain whose RouteConfiguration has
// not been received; it never reaches an RPC (a Listener is applied once
// its RouteConfigurations have arrived or failed).
var errNoRouteConfig = errors.New("no RouteConfiguration yet")
