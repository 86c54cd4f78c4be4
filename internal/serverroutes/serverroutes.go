// SPDX-License-Identifier: Apache-2.0

// Package serverroutes is the routing of the requests of an xDS-enabled
// server (gRFC A36): a filter chain's RouteConfiguration compiled into a
// Table that gives a request its virtual host and route, with the RBAC
// engines of the chain's HTTP filters for that route (gRFC A39, A41). The
// gRPC server (package server) and the net/http server (package xdshttp)
// share it and differ only in how they fail a request.
package serverroutes

import (
	"fmt"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

const (
	// RBACTypeURL is the type URL of the RBAC HTTP filter's config.
	RBACTypeURL = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
	// RBACPerRouteTypeURL is the type URL of its per-route override.
	RBACPerRouteTypeURL = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
)

// Table is what the requests of one filter chain are routed with: its
// RouteConfiguration (inline or from RDS) with, per route, the compiled
// match and the RBAC engines of the chain's HTTP filters with the
// route's overrides (gRFC A36, A39, A41). It is immutable and safe for
// concurrent use; a chain swaps in a new one when its RouteConfiguration
// changes.
type Table struct {
	err    error                  // non-nil: every request fails with this error
	rc     *resources.RouteConfig // nil when err is set
	vhosts [][]Route              // by index of rc.VirtualHosts
}

// Route is one route of a Table.
type Route struct {
	// Index is the route's index in its virtual host.
	Index         int
	match         routing.Match
	nonForwarding bool           // the action is non_forwarding_action
	engines       []*rbac.Engine // the enforcing RBAC filters, in chain order
}

// NonForwarding reports whether the route's action is
// non_forwarding_action, the only one a server serves (gRFC A36).
func (r *Route) NonForwarding() bool { return r.nonForwarding }

// Enforcing reports whether an RBAC filter enforces rules on the route:
// otherwise Authorize allows every request without looking at it.
func (r *Route) Enforcing() bool { return len(r.engines) > 0 }

// Authorize applies the route's RBAC filters in chain order (gRFC A41)
// to req, and returns the first engine that denies it, with the policy it
// matched ("" for an ALLOW engine, which matched none); nil when every
// filter allows it.
func (r *Route) Authorize(req rbac.Request) (denied *rbac.Engine, policy string) {
	for _, e := range r.engines {
		if ok, policy := e.Authorize(req); !ok {
			return e, policy
		}
	}
	return nil, ""
}

// Error returns a table whose requests all fail with err (a
// RouteConfiguration that does not exist or was NACKed without a
// previous version, gRFC A36).
func Error(err error) *Table {
	return &Table{err: err}
}

// Build compiles rc for the HTTP filters of a filter chain, with the
// audit loggers by name. A configuration the server cannot apply (an RBAC
// filter naming an audit logger it does not have, an override of the
// wrong type) gives a table whose requests fail with the error.
func Build(filters []resources.HTTPFilter, rc *resources.RouteConfig, auditors map[string]audit.LoggerBuilder) *Table {
	b := tableBuilder{auditors: auditors, overrides: make(map[*anypb.Any]*rbac.Engine)}
	t := &Table{rc: rc, vhosts: make([][]Route, len(rc.VirtualHosts))}
	idx := routing.NewIndex()
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		routes := make([]Route, len(vh.Routes))
		for j := range vh.Routes {
			r := &vh.Routes[j]
			routes[j] = Route{Index: j, match: routing.Compile(&r.Match, idx), nonForwarding: r.Action.Kind == resources.RouteActionNonForwarding}
			for _, f := range filters {
				if f.TypeURL != RBACTypeURL {
					continue // the router: the end of the chain
				}
				e, err := b.engine(f, r.FilterOverrides, vh.FilterOverrides)
				if err != nil {
					return Error(fmt.Errorf("RouteConfiguration %q, virtual host %q, route %d, HTTP filter %q: %w", rc.Name, vh.Name, j, f.Name, err))
				}
				if e != nil {
					routes[j].engines = append(routes[j].engines, e)
				}
			}
		}
		t.vhosts[i] = routes
	}
	return t
}

// Err returns the error every request of the table fails with, nil for a
// table built from a RouteConfiguration.
func (t *Table) Err() error { return t.err }

// RouteConfigName returns the name of the table's RouteConfiguration, ""
// for an error table.
func (t *Table) RouteConfigName() string {
	if t.rc == nil {
		return ""
	}
	return t.rc.Name
}

// Problems describes what of t fails requests, "" when nothing: its
// error, or routes whose action is not non_forwarding_action (gRFC A36
// "configuration error logging").
func (t *Table) Problems() string {
	if t.err != nil {
		return t.err.Error()
	}
	n := 0
	for _, routes := range t.vhosts {
		for _, r := range routes {
			if !r.nonForwarding {
				n++
			}
		}
	}
	if n > 0 {
		return fmt.Sprintf("RouteConfiguration %q has %d routes whose action is not non_forwarding_action", t.rc.Name, n)
	}
	return ""
}

// Route routes a request of authority (":authority", "Host") and path
// (an RPC's full method name, an HTTP request's path without the query)
// whose headers are h (gRFC A36): the virtual host by authority (an error
// when none matches), then the first route of it that matches as on a
// client (gRFC A28; nil when none). It must not be called on a table
// whose Err is not nil.
func (t *Table) Route(authority, path string, h *routing.Headers) (*resources.VirtualHost, *Route, error) {
	vh, err := routing.SelectVirtualHost(authority, t.rc)
	if err != nil {
		return nil, nil, err
	}
	var routes []Route
	for i := range t.rc.VirtualHosts {
		if &t.rc.VirtualHosts[i] == vh {
			routes = t.vhosts[i]
		}
	}
	for i := range routes {
		if routes[i].match.Matches(path, h) {
			return vh, &routes[i], nil
		}
	}
	return vh, nil, nil
}

// tableBuilder builds the RBAC engines of one Table, once per filter and
// once per override.
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
	if o.TypeURL != RBACPerRouteTypeURL {
		return nil, fmt.Errorf("typed_per_filter_config of type %q for an RBAC filter, want RBACPerRoute", o.TypeURL)
	}
	e, err := rbac.NewEngine(f.Name, o.RBAC, b.auditors)
	if err != nil {
		return nil, err
	}
	b.overrides[o.Config] = e
	return e, nil
}
