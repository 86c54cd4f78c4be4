// SPDX-License-Identifier: Apache-2.0

package resources

import "google.golang.org/protobuf/types/known/anypb"

// DecodeOption configures the validation of the built-in types that
// BuiltinTypes returns, and that of Check and Validate, with what a client
// knows beyond the resource itself: its bootstrap.
type DecodeOption func(*decodeOptions)

// decodeOptions are the options of the built-in types; the zero value is
// that of the constants ListenerType, ….
type decodeOptions struct {
	// certProviders is the set of certificate provider instance names of
	// the bootstrap; nil when instance names are not checked.
	certProviders map[string]bool
	// httpConnect accepts the HTTP/1.1 proxy transport socket and reads
	// proxy addresses from endpoint metadata (gRFC A86).
	httpConnect bool
}

// WithCertificateProviderInstances makes Cluster validation check, as a
// gRPC client does, that each certificate provider instance a Cluster's
// transport socket names (the root one, and the identity one if any) is
// one of names: the instances of the bootstrap's certificate_providers
// (gRFC A29; bootstrap.Config.CertificateProviderNames). A Cluster naming
// another is invalid (NACKed), the error naming the instance; with no
// names, every Cluster with a transport socket that names an instance is.
// The same holds for the filter chains of a server-side Listener.
// Without this option instance names are not checked, as there is no
// bootstrap to check them against.
func WithCertificateProviderInstances(names ...string) DecodeOption {
	return func(o *decodeOptions) {
		o.certProviders = make(map[string]bool, len(names))
		for _, n := range names {
			o.certProviders[n] = true
		}
	}
}

// WithHTTPConnect makes Cluster and ClusterLoadAssignment validation
// accept HTTP CONNECT (gRFC A86), as grpc-go does with
// GRPC_EXPERIMENTAL_XDS_HTTP_CONNECT=true: a Cluster's transport_socket
// may be the HTTP/1.1 proxy transport socket
// (envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport,
// whatever its name), whose own transport_socket, if any, is validated
// as a Cluster's (Cluster.HTTPConnect, Cluster.Security); and the
// typed_filter_metadata of endpoints and localities is read: an entry of
// type envoy.config.core.v3.Address, whatever its key, must be a
// socket_address with an IPv4 or IPv6 address and a port, else the
// resource is invalid; the one under the key
// "envoy.http11_proxy_transport_socket.proxy_address" is the proxy
// address (Endpoint.ProxyAddress, Locality.ProxyAddress).
//
// Without this option, as grpc-go by default, such a Cluster is invalid
// (NACKed), with the error grpc-go gives it: the transport socket's name
// is not "envoy.transport_sockets.tls", or else its type is not
// UpstreamTlsContext; endpoint metadata other than the hash key of gRFC
// A76 is not read. client.WithHTTPConnect gives this option to a client.
func WithHTTPConnect() DecodeOption {
	return func(o *decodeOptions) { o.httpConnect = true }
}

func newDecodeOptions(opts []DecodeOption) decodeOptions {
	var o decodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// clusterTypeWith returns ClusterType, or, when o changes Cluster
// validation, a Cluster type that decodes with o.
func clusterTypeWith(o decodeOptions) Type[*Cluster] {
	if o.certProviders == nil && !o.httpConnect {
		return ClusterType
	}
	cfg := clusterConfig
	cfg.Decode = func(inner *anypb.Any) (string, *Cluster, error) { return decodeCluster(inner, o) }
	return newTypeImpl(cfg)
}

// endpointsTypeWith returns EndpointsType, or, when o changes
// ClusterLoadAssignment validation, an Endpoints type that decodes with
// o.
func endpointsTypeWith(o decodeOptions) Type[*Endpoints] {
	if !o.httpConnect {
		return EndpointsType
	}
	cfg := endpointsConfig
	cfg.Decode = func(inner *anypb.Any) (string, *Endpoints, error) { return decodeEndpoints(inner, o) }
	return newTypeImpl(cfg)
}
