// SPDX-License-Identifier: Apache-2.0

package resources_test

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/anypb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

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

// Linting a control plane's output offline: Validate says whether a gRPC
// client would accept a resource, and which field it would reject.
func ExampleValidate() {
	rc := &v3routepb.RouteConfiguration{
		Name: "routes",
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    "svc",
			Domains: []string{"*"},
			Routes: []*v3routepb.Route{{
				Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_SafeRegex{
					SafeRegex: &v3matcherpb.RegexMatcher{Regex: "/pkg.Svc/(Get|List"},
				}},
				Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
					ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "backend"},
				}},
			}},
		}},
	}
	a, _ := anypb.New(rc)
	err := resources.Validate(a)
	fmt.Println(err)
	var ve *resources.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Field)
	}

	// Check gives the details: type, canonical name and decoded value.
	rc.VirtualHosts[0].Routes[0].Match.GetSafeRegex().Regex = "/pkg.Svc/(Get|List)"
	a, _ = anypb.New(rc)
	v := resources.Check(a)
	route := v.Value.(*resources.RouteConfig).VirtualHosts[0].Routes[0]
	fmt.Println(v.TypeName, v.Name, v.Err, route.Match.Regex.MatchString("/pkg.Svc/List"), route.Match.Regex.MatchString("/pkg.Svc/ListAll"))
	// Output:
	// RouteConfiguration "routes": virtual_hosts[0].routes[0].match.safe_regex.regex: invalid RE2 pattern "/pkg.Svc/(Get|List": error parsing regexp: missing closing ): `/pkg.Svc/(Get|List`
	// virtual_hosts[0].routes[0].match.safe_regex.regex
	// RouteConfiguration routes <nil> true false
}
