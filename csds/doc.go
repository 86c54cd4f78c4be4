// SPDX-License-Identifier: Apache-2.0

// Package csds serves the Client Status Discovery Service (CSDS,
// envoy.service.status.v3.ClientStatusDiscoveryService; gRFC A40, R-20)
// for xDS clients of package client, so that tools such as grpcdebug, or
// `xdsctl status --csds`, can inspect a running application: what each
// client watches, the version and raw bytes of every cached resource, and
// whether it was ACKED, NACKED (with the error), REQUESTED or
// DOES_NOT_EXIST.
//
// Register it on the application's own gRPC server, usually an admin port:
//
//	s := grpc.NewServer()
//	csds.Register(s, xdsClient)
//	go s.Serve(adminListener)
//
// A response has one ClientConfig per client, as client.Client.Dump
// returns it (node, generic_xds_configs with type_url, name, version_info,
// xds_config, last_updated, client_status and error_state), plus its
// client_scope when one was given (gRFC A71: the data plane target the
// client serves). This is the shape grpc-go serves, so grpc-go's CSDS
// clients read it unchanged.
package csds
