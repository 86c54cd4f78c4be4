// SPDX-License-Identifier: Apache-2.0

// Package lrs reports load to a management server with the Load Reporting
// Service (LRS, R-22; gRFC A27 for what gRPC clients report).
//
// A Store collects load: for each cluster and EDS service name, the RPCs
// dropped by category (drop_overloads, gRFC A27) or without category
// (circuit breaking, gRFC A32), and for each locality the RPCs issued,
// succeeded, errored and in progress. A Client sends it on the
// StreamLoadStats stream of a transport.Transport:
//
//	store := lrs.NewStore()
//	c := lrs.NewClient(t, node, store)         // t: a transport.Transport to the management server
//	defer c.Close()                            // sends a final report
//	loc := store.Cluster("cluster-a", "").Locality(id)
//	loc.Start()                                // an RPC is sent to locality id
//	loc.Finish(err)                            // it ended
//
// The Client follows every LoadStatsResponse, not only the first:
// the clusters list, send_all_clusters and load_reporting_interval, which
// is raised to MinInterval (1 s) when shorter or absent. Each report holds
// the counts since the previous report of the cluster and the actual
// interval (load_report_interval); clusters with nothing to report are
// left out.
//
// With a Cluster's lrs_report_endpoint_metrics (gRFC A85), the backends'
// per-call ORCA load reports (gRFC A51) are summed per locality with
// LocalityLoad.AddBackendMetrics and reported in cpu_utilization,
// mem_utilization, application_utilization and load_metric_stats
// ("named_metrics.KEY"), as gRPC sends them (gRFC A64); see
// NewBackendMetrics.
//
// Package xdsresolver feeds a Store from its channels' pickers when a
// cluster has lrs_server set to self, and reports it on the xDS client's
// ADS connection by default (R-22.1; see xdsresolver.WithLoadReportTransport).
// Nothing in this package needs a gRPC channel: any program that records
// load in a Store can report it.
//
// # Concurrency
//
// Store, ClusterLoad and LocalityLoad are safe for concurrent use, and
// recording (Start, Finish, DropCounter().Add) takes no lock. A Client
// runs one goroutine, ended by Close.
package lrs
