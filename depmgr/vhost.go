// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"github.com/proxyless/xds/resources"
)

// routeClusters returns the clusters the routes of vh name (a cluster, or
// the clusters of weighted_clusters), canonical. Routes that use
// a cluster specifier plugin name none: their clusters are chosen per RPC
// and subscribed to with SubscribeToCluster.
func routeClusters(vh *resources.VirtualHost) map[string]struct{} {
	out := make(map[string]struct{}, len(vh.Routes))
	for _, r := range vh.Routes {
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
