// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/internal/serverroutes"
)

// routeTable is what the RPCs of one filter chain are checked against:
// the chain's serverroutes.Table (shared with the net/http server), with
// gRPC's statuses (gRFC A36). It is immutable.
type routeTable struct {
	*serverroutes.Table
	nodeID string // for status messages
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
