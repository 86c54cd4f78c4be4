// SPDX-License-Identifier: Apache-2.0

// Package balance picks the endpoint of an HTTP request among the
// priorities of a cluster (a dataplane.Cluster), as docs/http.md "Load
// balancing" says, with Envoy's documented behaviour as the reference
// where gRPC's gRFCs are silent:
//
//   - a priority is picked at random by Envoy's priority load, from the
//     health of each priority: the share of its endpoints that outlier
//     detection has not ejected, times the overprovisioning factor 1.4
//     (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/priority);
//   - a priority whose healthy share is below the cluster's
//     healthy_panic_threshold balances over all of its endpoints, ejected
//     ones included, when the priorities together are not healthy enough
//     (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/panic_threshold);
//   - under wrr_locality (resources.LBPolicy.WeightedByLocality), a
//     locality is picked at random by its weight times its availability
//     (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/locality_weight);
//   - an endpoint by the cluster's endpoint policy (Policy): round_robin,
//     least_request (Envoy's and gRFC A48's power of choices), ring_hash
//     (gRPC's ring, gRFC A42, A61, A76), pick_first (gRFC A62), and
//     weighted round robin by endpoint weight for weighted_round_robin and
//     custom policies.
//
// # Use
//
// dataplane.Options.Policy is Policy; a transport keeps one Host per
// endpoint address (dataplane.Endpoint.Key) across configurations, builds a
// Cluster with New for each dataplane.Cluster of a new configuration, and
// calls Pick for each attempt of a request, with Host.Begin and Host.End
// around it. Outlier detection marks its ejections with Host.SetEjected.
//
// # Concurrency
//
// A Cluster is immutable once New returns; Pick is safe for concurrent use,
// takes no lock and allocates nothing, but once after ejections change,
// when the first Pick of each Cluster recomputes the priority loads. A
// Host's methods are safe for concurrent use.
package balance
