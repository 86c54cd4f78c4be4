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

func newDecodeOptions(opts []DecodeOption) decodeOptions {
	var o decodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// clusterTypeWith returns ClusterType, or, when o checks certificate
// provider instances, a Cluster type that also does so.
func clusterTypeWith(o decodeOptions) Type[*Cluster] {
	if o.certProviders == nil {
		return ClusterType
	}
	cfg := clusterConfig
	instances := o.certProviders
	cfg.Decode = func(inner *anypb.Any) (string, *Cluster, error) {
		name, c, err := decodeCluster(inner)
		if err != nil {
			return name, c, err
		}
		if err := checkCertificateProviders(c.Security, instances); err != nil {
			return name, nil, err
		}
		return name, c, nil
	}
	return newTypeImpl(cfg)
}
