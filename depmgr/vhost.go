// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"github.com/proxyless/xds/resources"
)

// routeClusters returns the clusters the routes of vh name (a cluster, or
// the clusters of weighted_clusters), canonical: the routes of
// gRPC, or with http those of an HTTP data plane (R-17.7,
// WithHTTPRoutes). Routes that use a cluster specifier plugin name none:
// their clusters are chosen per RPC and subscribed to with
// SubscribeToCluster.
func routeClusters(vh *resources.VirtualHost, http bool) map[string]struct{} {
	routes := vh.Routes
	if http {
		routes = vh.RoutesForHTTP()
	}
	out := make(map[string]struct{}, len(routes))
	for _, r := range routes {
		switch r.Action.Kind {
		case resources.RouteActionCluster:
			out[resources.CanonicalName(r.Action.Cluster)] = struct{}{}
		case resources.RouteActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				out[resources.CanonicalName(wc.Name)] = struct{}{}
			}
		}
	}
	return out
}
