// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
)

// Errors of the conversion of a configuration into a State. The errors
// reported to the channel wrap them; test with errors.Is.
var (
	// ErrNoRoute is wrapped when the selected virtual host has no route.
	ErrNoRoute = errors.New("virtual host has no route")

	// ErrNoUsableEndpoints is wrapped by the error of a cluster that has
	// no endpoint the router may use: none at all, or none HEALTHY or
	// UNKNOWN. RPCs routed to it fail.
	ErrNoUsableEndpoints = errors.New("no usable endpoints")

	// ErrUnsupported is wrapped by the error of a cluster whose load
	// balancing policy cannot be run (unknown, or its grpc balancer not
	// registered), and of a route whose fault filter has an override of
	// another filter's type; their RPCs fail. See the package doc,
	// "What is honoured".
	ErrUnsupported = errors.New("not supported by the xds resolver")

	// ErrServiceConfigDisabled is wrapped by the error of Build on a
	// channel made with grpc.WithDisableServiceConfig: the resolver hands
	// the channel its LB policy (the router) in the service config, so
	// it needs service configs; the channel's RPCs fail with this error.
	ErrServiceConfigDisabled = errors.New("the xds resolver needs service configs: the router LB policy is set by the service config it produces; remove grpc.WithDisableServiceConfig")
)

// snapshot is what buildConfig reads of a depmgr.XDSConfig. It exists so that
// tests can make one: an XDSConfig can only be made by depmgr.
type snapshot struct {
	listener    *resources.Listener
	routeConfig *resources.RouteConfig
	virtualHost *resources.VirtualHost
	cluster     func(name string) *depmgr.ClusterResult // by canonical name; nil when absent
}

func snapshotOf(cfg *depmgr.XDSConfig) snapshot {
	return snapshot{listener: cfg.Listener, routeConfig: cfg.RouteConfig, virtualHost: cfg.VirtualHost, cluster: cfg.Cluster}
}

// usable reports whether an endpoint of status h may be used: as in gRPC
// (gRFC A27; gRPC Go's cluster resolver), HEALTHY and UNKNOWN only.
func usable(h resources.HealthStatus) bool {
	return h == resources.HealthStatusHealthy || h == resources.HealthStatusUnknown
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

// describeVH names where a configuration's virtual host comes from, for
// errors.
func describeVH(s snapshot) string {
	var b strings.Builder
	if s.listener != nil {
		fmt.Fprintf(&b, "listener %q, ", s.listener.Name)
	}
	switch {
	case s.routeConfig == nil:
	case s.listener != nil && s.listener.InlineRouteConfig == s.routeConfig:
		fmt.Fprintf(&b, "inline route configuration %q, ", s.routeConfig.Name)
	default:
		fmt.Fprintf(&b, "route configuration %q, ", s.routeConfig.Name)
	}
	if s.virtualHost != nil {
		fmt.Fprintf(&b, "virtual host %q", s.virtualHost.Name)
	}
	return strings.TrimSuffix(b.String(), ", ")
}

func describeRoute(i int, r *resources.Route) string {
	if r.Name != "" {
		return fmt.Sprintf("route %d (%q)", i, r.Name)
	}
	return fmt.Sprintf("route %d", i)
}

// joinErrors joins errs in one line (errors.Join would use newlines, which
// read badly in an RPC status), keeping them all for errors.Is.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	format := strings.TrimSuffix(strings.Repeat("%w; ", len(errs)), "; ")
	args := make([]any, len(errs))
	for i, e := range errs {
		args[i] = e
	}
	return fmt.Errorf(format, args...)
}
