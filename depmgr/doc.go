// SPDX-License-Identifier: Apache-2.0

// Package depmgr is the xDS dependency manager of gRFC A74: given one
// Listener name, it watches everything the Listener leads to and publishes
// complete, consistent configurations (snapshots), so that application
// code never sees a half-resolved tree.
//
//	m := depmgr.New(c, "svc", watcher.Funcs[*depmgr.XDSConfig]{
//		OnChanged:       func(cfg *depmgr.XDSConfig) { ... }, // a complete config
//		OnResourceError: func(err error) { ... },             // stop using the last one
//		OnAmbientError:  func(err error) { ... },             // keep using it
//	})
//	defer m.Close()
//
// The Manager's watcher is a watcher.Watcher[*XDSConfig], the interface
// the client's watches use (package watcher): ResourceChanged delivers a
// snapshot, ResourceError makes the whole configuration unusable,
// AmbientError reports a problem that leaves the last snapshot valid.
//
// From the Listener it follows, as a gRPC channel does (rule IDs refer to
// the repository's docs/protocol.md):
//
//   - the RouteConfiguration, inline in the Listener or fetched with RDS
//
//   - the virtual host of the RouteConfiguration selected for the
//     data-plane authority: an exact domain beats a suffix wildcard
//     ("*.example.com"), which beats a prefix wildcard ("example.*"),
//     which beats "*"; within a kind the longest pattern wins; matching
//     ignores ASCII case, as gRPC C++ and Envoy do;
//   - every cluster a route of that virtual host names (a cluster, or the
//     clusters of weighted_clusters), plus the clusters subscribed to with
//     SubscribeToCluster;
//   - per cluster: for EDS, the ClusterLoadAssignment named by
//     the EDS service name, or else by the cluster name; for LOGICAL_DNS,
//     the addresses of host:port from a DNSResolver; for aggregate
//     clusters, their children, recursively, in priority order.
//
// # Snapshots
//
// An XDSConfig holds the Listener, the RouteConfiguration, the selected
// VirtualHost and a ClusterResult per top-level cluster: the clusters of
// the route table and the dynamically subscribed ones. A cluster found only
// under an aggregate cluster has no entry of its own; it is in the Leaves
// of the aggregate's ClusterConfig (gRFC A74). A ClusterResult holds either
// a ClusterConfig or an error; a leaf ClusterConfig holds the cluster's
// endpoints, or an empty set and a ResolutionNote saying why.
//
// A snapshot is published only when it is complete: the Listener,
// its RouteConfiguration and a matching virtual host are known, and every
// cluster of the route table, with everything under it, has either data
// or an error. Dynamically subscribed clusters do not hold publication
// back: they appear once their subtree is complete.
//
// Snapshots are immutable and share what did not change with the
// previous one: the decoded resources are the client's values, and a
// ClusterResult is reused for as long as nothing under its cluster
// changed, so comparing pointers tells what changed. A snapshot that would
// equal the previous one (same resources, by identity, and same errors)
// is not published.
//
// Every resource carries the version_info of the response that delivered
// its value: the client hands each value over with its version
// (client.WatchVersioned), so a value is never paired with another
// version.
// A later response that repeats the same value changes neither the
// version nor the snapshot: in SotW, responses resend unchanged resources
// with the new version_info, and after a NACK the client hands the same
// value over again. An inline RouteConfiguration and the
// addresses of a LOGICAL_DNS cluster have no version.
//
// # Aggregate clusters
//
// An aggregate cluster's ClusterConfig lists its leaf clusters (EDS and
// LOGICAL_DNS) in priority order, depth first, each once, at its first
// position. A child cluster that has an error (does not exist,
// invalid) contributes no leaves and is listed in Skipped; an aggregate
// with no leaves at all is an error wrapping ErrNoLeafClusters. An
// aggregate graph deeper than 16 levels (the top-level cluster is level
// 0, so a cluster at level 16 is one too many) is an error wrapping
// ErrMaxDepthExceeded, and a cycle an error wrapping ErrAggregateCycle
// that names the clusters of the cycle, for example "aggregate cluster
// cycle: a -> b -> a" (R-16.5; gRPC Go reports a cycle as "no leaf
// clusters" instead). Either makes the top-level cluster's result an
// error.
//
// # LOGICAL_DNS clusters
//
// The host of a LOGICAL_DNS cluster is resolved with the DNSResolver given
// to WithDNSResolver (a *net.Resolver by default). The addresses found
// make one endpoint with every address (gRFC A61), in one locality of
// priority 0 and weight 1. The name is resolved when the cluster appears,
// then again every refresh interval (WithDNSRefreshInterval, 30 s by
// default) and whenever ResolveNow is called. A failed lookup is retried
// after 1 s, then 1.6 times longer each time, each delay within ± 20 %, at
// most the refresh interval (so every retry waits the refresh interval
// when it is under a second). A failure before any address was found gives the cluster an
// empty endpoint set and a ResolutionNote; a failure after that keeps the
// addresses found last and is only logged.
//
// # Lifecycle
//
// New starts the Listener watch at once and returns; Close cancels every
// watch, stops every DNS lookup and waits for the goroutines the Manager
// started. A watch whose resource is no longer reachable from the
// Listener is cancelled as soon as it becomes unreachable, which
// unsubscribes the client from it when no one else watches it. When the
// Listener names another RouteConfiguration, the old one keeps being
// used, with the Listener that named it, until the new one arrives
//
//
// # Delivery
//
// The watcher's methods are called serially, on a goroutine the Manager
// owns (never on the client's callback goroutine), in the order the
// events happened. Each call gets a done func, which paces the Manager's
// deliveries: the Manager makes its next call only after done of the
// previous one was called. done may be called from any goroutine, at any
// later time, including before the method returns (watcher.Funcs calls
// it when its function returns); calling it more than once has no effect.
// A method may call SubscribeToCluster, the cancel funcs it returns and
// ResolveNow, but not Close.
//
// Snapshots coalesce while the watcher has not called done: a newer
// state (a snapshot or a whole-configuration error) replaces the state
// queued and not yet delivered, and a newer ambient error the queued
// ambient error; each goes after what happened before it. So a slow
// watcher gets the latest state, never a stale one after a newer one,
// and at most two calls wait for it, however long it takes.
//
// done paces only the deliveries to the watcher, not the client's
// streams. The Manager handles the client's callbacks on the client's
// goroutine and computes the next snapshot there, then releases the
// client's flow control (the done of the client's call) at once: the
// client reads the next response from the management server, and ACKs
// it, whether or not the Manager's watcher has called done. A
// watcher that holds done delays its own snapshots, never the stream
// that other watches of the client share. A change of one
// ClusterLoadAssignment, or of one cluster, recomputes only the
// top-level clusters that lead to it, and the next snapshot shares all
// but a small part of its cluster index with the previous one, so the
// cost of an update does not grow with the number of clusters.
//
// Close waits for a method in progress to return, but not for its done;
// no call is made after Close, and a done called after it does nothing.
//
// Every method of a Manager is safe for concurrent use.
//
// # Errors
//
// ResourceError gets the errors that make the whole configuration
// unusable: a resource error of the Listener or of its RouteConfiguration
// (the client's *client.ResourceError, wrapping client.ErrResourceNotFound,
// client.ErrResourceInvalid or client.ErrConnection), a server-side
// Listener (ErrServerListener), and a RouteConfiguration without a virtual
// host for the data-plane authority (ErrNoVirtualHost): the last
// snapshot must no longer be used, and RPCs should fail until the next
// ResourceChanged (gRFC A88, "Propagating Status to Data Plane RPCs").
// AmbientError gets the client's ambient errors of the Listener and the
// RouteConfiguration in use, for example a rejected (NACKed) update: the
// last snapshot stays valid. Errors of clusters, endpoints and DNS lookups
// never fail the whole configuration: they are in the cluster's
// ClusterResult.Err or ClusterConfig.ResolutionNote.
package depmgr
