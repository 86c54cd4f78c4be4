// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"fmt"
	"strconv"

	"google.golang.org/grpc/balancer"
	grpcrls "google.golang.org/grpc/balancer/rls"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdsresolver/internal/router"
)

// Cluster specifier plugins (gRFC A28, "RLS in xDS"): package resources
// accepts the route lookup plugin (and leaves out the routes of unknown
// optional ones, NACKing the others); its route_lookup_config becomes the
// config of gRPC's RLS LB policy, whose children are the router's RLS
// targets (router/rls.go), as gRPC's xDS channel makes it with its cds
// policy. Importing google.golang.org/grpc/balancer/rls registers the RLS
// policy and the grpc.lookup.v1 messages, which the plugin's config is
// read with.

// plugins returns the plugins the routes of dp use, by name, as the
// router runs them; nil when there are none. A plugin gRPC's RLS policy
// rejects gets an Err, which fails its routes' RPCs.
func plugins(dp *dataplane.Config, rc *resources.RouteConfig) map[string]*router.Plugin {
	var out map[string]*router.Plugin
	for i := range dp.Routes {
		rt := &dp.Routes[i]
		if rt.Action != resources.RouteActionClusterSpecifierPlugin || out[rt.Plugin] != nil {
			continue
		}
		if out == nil {
			out = make(map[string]*router.Plugin)
		}
		pl := &router.Plugin{Key: rt.Plugin}
		out[rt.Plugin] = pl
		var csp *resources.ClusterSpecifierPlugin
		if rc != nil {
			for j := range rc.ClusterSpecifierPlugins {
				if rc.ClusterSpecifierPlugins[j].Name == rt.Plugin {
					csp = &rc.ClusterSpecifierPlugins[j]
				}
			}
		}
		if csp == nil {
			pl.Err = fmt.Errorf("cluster_specifier_plugin %q is not in the route configuration", rt.Plugin)
			continue
		}
		pl.Policy, pl.Err = rlsPolicy(csp)
		pl.Key = strconv.Quote(rt.Plugin) + pl.Policy.JSON
	}
	return out
}

// rlsPolicy returns the RLS LB policy config of the route lookup plugin
// p: its route_lookup_config in proto JSON, the RLS targets as children,
// the target in their "cluster" field.
func rlsPolicy(p *resources.ClusterSpecifierPlugin) (router.ChildPolicy, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(p.TypeURL)
	if err != nil {
		return router.ChildPolicy{}, fmt.Errorf("cluster_specifier_plugin %q: %w", p.Name, err)
	}
	m := mt.New()
	if err := proto.Unmarshal(p.Config.GetValue(), m.Interface()); err != nil {
		return router.ChildPolicy{}, fmt.Errorf("cluster_specifier_plugin %q: %w", p.Name, err)
	}
	fd := m.Descriptor().Fields().ByName("route_lookup_config")
	if fd == nil {
		return router.ChildPolicy{}, fmt.Errorf("cluster_specifier_plugin %q: type %s has no route_lookup_config", p.Name, p.TypeURL)
	}
	rlc, err := protojson.Marshal(m.Get(fd).Message().Interface())
	if err != nil {
		return router.ChildPolicy{}, fmt.Errorf("cluster_specifier_plugin %q: %w", p.Name, err)
	}
	js := fmt.Sprintf(`{"routeLookupConfig":%s,"childPolicy":[{%q:{}}],"childPolicyConfigTargetFieldName":"cluster"}`, rlc, router.TargetName)
	parser, _ := balancer.Get(grpcrls.Name).(balancer.ConfigParser)
	if parser == nil {
		return router.ChildPolicy{}, fmt.Errorf("cluster_specifier_plugin %q: gRPC's %s balancer is not registered", p.Name, grpcrls.Name)
	}
	cfg, err := parser.ParseConfig([]byte(js))
	if err != nil {
		return router.ChildPolicy{}, fmt.Errorf("cluster_specifier_plugin %q: %w", p.Name, err)
	}
	return router.ChildPolicy{Name: grpcrls.Name, JSON: js, Config: cfg}, nil
}
