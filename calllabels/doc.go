// SPDX-License-Identifier: Apache-2.0

// Package calllabels hands the xDS labels of an RPC attempt from the
// channel's picker to the stats handlers that record it: the locality of
// the endpoint the attempt was sent to (grpc.lb.locality, gRFC A78) and
// the cluster it was picked in (grpc.lb.backend_service, gRFC A89).
//
// gRPC's own xDS channel does this through a hook internal to grpc-go: its
// cluster_impl picker writes the labels into a map that grpc-go's
// OpenTelemetry plugin put in the attempt's context, under a key no other
// module can reach. This package is the public equivalent. On a channel
// made with xdsresolver.DialOptions, every RPC's context holds a Holder
// (its interceptors add one), which the router's picker sets on each pick;
// a stats handler reads it when an attempt ends:
//
//	func (h *handler) HandleRPC(ctx context.Context, s stats.RPCStats) {
//		if end, ok := s.(*stats.End); ok && end.Client {
//			l := calllabels.FromContext(ctx).Labels() // "" and "" when unknown
//			h.record(l.Locality, l.BackendService, end)
//		}
//	}
//
// Package otelxds puts them on the per-attempt metrics of gRFC A66, as
// grpc-go's OpenTelemetry plugin does on gRPC's own xDS channels.
//
// # Values
//
// As gRPC's xDS channel gives them: Locality is the endpoint's locality as
// resources.LocalityID.String formats it (gRFC A76's form,
// {region="r1", zone="z1", sub_zone="s1"}); BackendService is the name of
// the leaf cluster (for an aggregate cluster, the cluster of the priority
// the endpoint is in). An attempt whose pick did not reach an endpoint
// (dropped, refused by circuit breaking, failed, queued until its
// deadline) has neither, and reads "" for both, as with gRPC.
//
// # Concurrency
//
// A Holder is per RPC, not per attempt: the picker clears it at the start
// of each pick and sets it when it picked an endpoint, so that when an
// attempt ends the Holder has the labels of that attempt (gRPC makes the
// attempts of an RPC one after the other: an attempt ends before the next
// one is picked). Holder is safe for concurrent use and takes no lock.
package calllabels
