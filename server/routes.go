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

	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/internal/serverroutes"
	"github.com/proxyless/xds/resources"
)

// routeTable is what the RPCs of one filter chain are checked against:
// the chain's serverroutes.Table (shared with the net/http server), with
// gRPC's statuses (gRFC A36). It is immutable.
type routeTable struct {
	*serverroutes.Table
	nodeID string // for status messages
}

// errorTable returns a table whose RPCs fail with err.
func errorTable(err error, nodeID string) *routeTable {
	return &routeTable{serverroutes.Error(err), nodeID}
}

// buildRouteTable compiles rc for the HTTP filters of a filter chain
// (serverroutes.Build).
func buildRouteTable(filters []resources.HTTPFilter, rc *resources.RouteConfig, auditors map[string]audit.LoggerBuilder, nodeID string) *routeTable {
	return &routeTable{serverroutes.Build(filters, rc, auditors), nodeID}
}

// problems describes what of rt fails RPCs, "" when nothing.
func (rt *routeTable) problems() string { return rt.Problems() }

// check routes the RPC of method and ctx (gRFC A36): the virtual host by
// :authority, the first route that matches as on a client (gRFC A28);
// then the route's RBAC filters (gRFC A41), denying with
// PERMISSION_DENIED; then the action, which must be non_forwarding_action.
// Every other failure is UNAVAILABLE.
func (rt *routeTable) check(ctx context.Context, method string) error {
	if err := rt.Err(); err != nil {
		return rt.unavailable(err.Error())
	}
	md, _ := metadata.FromIncomingContext(ctx)
	authority := ""
	if a := md.Get(":authority"); len(a) > 0 {
		authority = a[0]
	}
	vh, r, err := rt.Route(authority, method, &routing.Headers{MD: md})
	switch {
	case err != nil:
		return rt.unavailable(fmt.Sprintf("RouteConfiguration %q: authority %q: %v", rt.RouteConfigName(), authority, err))
	case r == nil:
		return rt.unavailable(fmt.Sprintf("the RPC matched no route of virtual host %q", vh.Name))
	}
	if r.Enforcing() {
		info := &rpcInfo{method: method, md: md}
		info.peer, _ = peer.FromContext(ctx)
		if e, policy := r.Authorize(info); e != nil {
			return denied(e, policy)
		}
	}
	if !r.NonForwarding() {
		return rt.unavailable(fmt.Sprintf("the RPC matched route %d of virtual host %q, whose action is not non_forwarding_action", r.Index, vh.Name))
	}
	return nil
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
