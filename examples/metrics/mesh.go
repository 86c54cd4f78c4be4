// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"time"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/xdsbackend"
	"github.com/proxyless/xds/mgmtserver"
	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/server"
)

// meshListenerTemplate is the backends' server_listener_resource_name_template.
const meshListenerTemplate = "grpc/server?xds.resource.listening_address=%s"

// mesh is the self-contained mesh of --mesh: a management server and
// three xDS-enabled gRPC backends in the process, each recording the
// server metrics of gRFC A66 (otelxds.ServerOption) on the same
// MeterProvider as the client, so that /metrics has both ends.
type mesh struct {
	ms       *mgmtserver.Server
	clients  []*client.Client
	backends []*xdsbackend.Backend
}

// meshBackend is one backend of the mesh: its ID, cluster and locality.
type meshBackend struct {
	id, cluster string
	locality    *v3corepb.Locality
}

var meshBackends = []meshBackend{
	{"east-1", "cluster-east", &v3corepb.Locality{Region: "us-east1", Zone: "us-east1-b"}},
	{"east-2", "cluster-east", &v3corepb.Locality{Region: "us-east1", Zone: "us-east1-b"}},
	{"west-1", "cluster-west", &v3corepb.Locality{Region: "us-west1", Zone: "us-west1-a"}},
}

// startMesh starts the mesh: Listener "svc" whose route splits every RPC
// 80/20 between cluster-east (east-1, east-2 in us-east1) and
// cluster-west (west-1 in us-west1). It returns the mesh and the bootstrap
// of its clients.
func startMesh(ctx context.Context, mp metric.MeterProvider) (*mesh, []byte, error) {
	ms, err := mgmtserver.Start(mgmtserver.Options{OnRequest: func(*mgmtserver.Request) {}})
	if err != nil {
		return nil, nil, err
	}
	m := &mesh{ms: ms}
	ports := map[string][]uint32{}
	for _, mb := range meshBackends {
		node := "metrics-backend-" + mb.id
		raw, err := xdsbuild.WithServerListenerTemplate(ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: node}), meshListenerTemplate)
		if err != nil {
			m.stop()
			return nil, nil, err
		}
		cfg, err := bootstrap.Parse(raw)
		if err != nil {
			m.stop()
			return nil, nil, err
		}
		c, err := client.New(cfg)
		if err != nil {
			m.stop()
			return nil, nil, err
		}
		m.clients = append(m.clients, c)
		b, err := xdsbackend.Start(c, xdsbackend.Options{
			ID:            mb.id,
			ServerOptions: []server.Option{otelxds.ServerOption(opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp}})},
		})
		if err != nil {
			m.stop()
			return nil, nil, fmt.Errorf("backend %s: %w", mb.id, err)
		}
		m.backends = append(m.backends, b)
		lis := xdsbuild.ServerListener(b.Name(meshListenerTemplate), b.Address, xdsbuild.ServerFilterChain(xdsbuild.FilterChainOptions{}))
		if err := ms.Update(node, mgmtserver.Resources{Listeners: []*v3listenerpb.Listener{lis}}); err != nil {
			m.stop()
			return nil, nil, err
		}
		ports[mb.cluster] = append(ports[mb.cluster], b.Port)
	}
	if err := ms.Update("", meshResources(ports)); err != nil {
		m.stop()
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, b := range m.backends {
		if err := b.WaitForMode(wctx, server.ServingModeServing); err != nil {
			m.stop()
			return nil, nil, fmt.Errorf("backend %s is not serving: %w", b.ID, err)
		}
	}
	return m, ms.Bootstrap(mgmtserver.BootstrapOptions{NodeID: "metrics-example"}), nil
}

// meshResources is the client-side configuration of the mesh.
func meshResources(ports map[string][]uint32) mgmtserver.Resources {
	rc := &v3routepb.RouteConfiguration{
		Name: "route-svc",
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    "svc",
			Domains: []string{"svc"},
			Routes: []*v3routepb.Route{{
				Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
				Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
					ClusterSpecifier: &v3routepb.RouteAction_WeightedClusters{WeightedClusters: &v3routepb.WeightedCluster{
						Clusters: []*v3routepb.WeightedCluster_ClusterWeight{
							{Name: "cluster-east", Weight: wrapperspb.UInt32(80)},
							{Name: "cluster-west", Weight: wrapperspb.UInt32(20)},
						},
					}},
				}},
			}},
		}},
	}
	r := mgmtserver.Resources{
		Listeners: []*v3listenerpb.Listener{xdsbuild.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{rc},
	}
	for _, cluster := range []string{"cluster-east", "cluster-west"} {
		r.Clusters = append(r.Clusters, xdsbuild.Cluster(cluster, ""))
		cla := xdsbuild.Endpoints(cluster, "127.0.0.1", ports[cluster]...)
		for _, mb := range meshBackends {
			if mb.cluster == cluster {
				cla.Endpoints[0].Locality = mb.locality
			}
		}
		r.Endpoints = append(r.Endpoints, cla)
	}
	return r
}

// stop stops the backends, their clients and the management server.
func (m *mesh) stop() {
	for _, b := range m.backends {
		b.Stop()
	}
	for _, c := range m.clients {
		c.Close()
	}
	m.ms.Stop()
}
