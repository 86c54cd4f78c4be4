// SPDX-License-Identifier: Apache-2.0

package resources

// BuiltinTypes returns the four types a gRPC client uses, in the order LDS,
// RDS, CDS, EDS: the constants ListenerType, RouteConfigType, ClusterType
// and EndpointsType, except that an option that changes validation (a
// client's bootstrap, WithCertificateProviderInstances, WithHTTPConnect)
// gives Listener, Cluster and Endpoints types of their own in place of
// ListenerType, ClusterType and EndpointsType, with the same type URLs
// and Go types, so that Watch(c, ClusterType, …) works with them.
func BuiltinTypes(opts ...DecodeOption) []ResourceType {
	o := newDecodeOptions(opts)
	return []ResourceType{listenerTypeWith(o), RouteConfigType, clusterTypeWith(o), endpointsTypeWith(o)}
}
