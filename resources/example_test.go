// SPDX-License-Identifier: Apache-2.0

package resources_test

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/proxyless/xds/resources"
)

// Validating a management server's output offline: decode a Cluster as the
// client would, and find the offending field of an invalid one.
func ExampleType_DecodeTyped() {
	c := &v3clusterpb.Cluster{
		Name:                 "xdstp://auth/envoy.config.cluster.v3.Cluster/backend?zone=b&env=prod",
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_EDS},
		EdsClusterConfig: &v3clusterpb.Cluster_EdsClusterConfig{
			EdsConfig:   &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Ads{Ads: &v3corepb.AggregatedConfigSource{}}},
			ServiceName: "backend-eds",
		},
	}
	a, _ := anypb.New(c)
	name, cluster, err := resources.ClusterType.DecodeTyped(a)
	fmt.Println(name)
	fmt.Println(cluster.Kind, cluster.EDSServiceName, cluster.LBPolicy.Kind, cluster.MaxRequests, err)

	c.LbPolicy = v3clusterpb.Cluster_MAGLEV
	a, _ = anypb.New(c)
	_, _, err = resources.ClusterType.DecodeTyped(a)
	var ve *resources.ValidationError
	if errors.As(err, &ve) {
		fmt.Printf("field %s: %s\n", ve.Field, ve.Reason)
	}
	// Output:
	// xdstp://auth/envoy.config.cluster.v3.Cluster/backend?env=prod&zone=b
	// EDS backend-eds ROUND_ROBIN 1024 <nil>
	// field lb_policy: unsupported policy MAGLEV
}

// The canonical form of a resource name sorts the context parameters
// (gRFC A47); other names are left alone.
func ExampleCanonicalName() {
	fmt.Println(resources.CanonicalName("xdstp:///envoy.config.listener.v3.Listener/svc?b=2&a=1"))
	fmt.Println(resources.CanonicalName("foo://host/not/xdstp?b=2&a=1"))
	// Output:
	// xdstp:///envoy.config.listener.v3.Listener/svc?a=1&b=2
	// foo://host/not/xdstp?b=2&a=1
}
