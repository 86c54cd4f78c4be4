// SPDX-License-Identifier: Apache-2.0

package otelxds

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats/opentelemetry"

	"github.com/proxyless/xds/server"
)

// DialOption returns a dial option that records the metrics and traces of
// a grpc.ClientConn as grpc-go's OpenTelemetry plugin does for the same
// Options (google.golang.org/grpc/stats/opentelemetry.DialOption: the
// per-call and per-attempt metrics of gRFC A66 and, with
// o.MetricsOptions.Metrics, the metrics of gRPC's balancers and
// subchannels; traces with o.TraceOptions), with one addition: on a
// channel made with xdsresolver.DialOptions, the optional labels
// grpc.lb.locality (gRFC A78) and grpc.lb.backend_service (gRFC A89)
// carry the locality and cluster of the endpoint each attempt went to,
// when o.MetricsOptions.OptionalLabels asks for them, on the instruments
// and with the values gRPC's own xDS channel gives:
//
//	grpc.client.attempt.duration                            s   grpc.method, grpc.target, grpc.status [, grpc.lb.locality, grpc.lb.backend_service]
//	grpc.client.attempt.sent_total_compressed_message_size  By  grpc.method, grpc.target, grpc.status [, grpc.lb.locality, grpc.lb.backend_service]
//	grpc.client.attempt.rcvd_total_compressed_message_size  By  grpc.method, grpc.target, grpc.status [, grpc.lb.locality, grpc.lb.backend_service]
//
// and not on grpc.client.attempt.started or grpc.client.call.duration.
// The locality reads {region="r1", zone="z1", sub_zone="s1"}, the backend
// service is the cluster's name, and both are "" for an attempt that
// reached no endpoint, and on other channels (package calllabels).
//
// It is grpc-go's plugin itself, given o with its MeterProvider wrapped:
// the three attempt instruments take the labels of the attempt's
// calllabels.Holder, which the plugin's own label hook cannot get (gRPC
// fills it from its internal xDS balancers only). Everything else,
// instrument names, units, descriptions, buckets, the meter ("grpc-go"),
// the other metrics and the traces, is the plugin's, so that moving from
// opentelemetry.DialOption to this one changes only those labels.
func DialOption(o opentelemetry.Options) grpc.DialOption {
	if o.MetricsOptions.MeterProvider != nil {
		o.MetricsOptions.MeterProvider = &meterProvider{MeterProvider: o.MetricsOptions.MeterProvider}
	}
	return opentelemetry.DialOption(o)
}

// ServerOption returns an option of server.NewGRPCServer that records the
// server metrics of gRFC A66 (grpc.server.call.started, .duration,
// .sent_total_compressed_message_size, .rcvd_total_compressed_message_size,
// labelled grpc.method and grpc.status) and traces of every grpc.Server it
// makes, as grpc-go's OpenTelemetry plugin does
// (opentelemetry.ServerOption(o) given through server.WithServerOptions).
// gRPC defines no xDS labels for server metrics.
func ServerOption(o opentelemetry.Options) server.Option {
	return server.WithServerOptions(opentelemetry.ServerOption(o))
}
