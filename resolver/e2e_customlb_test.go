// SPDX-License-Identifier: Apache-2.0

package resolver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/balancer"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/proxyless/xds/testutil"

	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// pinPolicy is a custom LB policy for tests (gRFC A52): pick_first over
// the endpoints whose port is its config's "port".
const pinPolicy = "proxyless_test_pin"

var registerPin sync.Once

type pinBuilder struct{}

type pinConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`
	Port                              int `json:"port"`
}

func (pinBuilder) Name() string { return pinPolicy }

func (pinBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &pinBalancer{Balancer: balancer.Get("pick_first").Build(cc, opts)}
}

func (pinBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var c pinConfig
	if err := json.Unmarshal(js, &c); err != nil || c.Port == 0 {
		return nil, fmt.Errorf("%s: config %s: want a port (%v)", pinPolicy, js, err)
	}
	return c, nil
}

type pinBalancer struct{ balancer.Balancer }

func (b *pinBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	port := fmt.Sprintf(":%d", s.BalancerConfig.(pinConfig).Port)
	var eps []grpcresolver.Endpoint
	for _, ep := range s.ResolverState.Endpoints {
		if strings.HasSuffix(ep.Addresses[0].Addr, port) {
			eps = append(eps, ep)
		}
	}
	return b.Balancer.UpdateClientConnState(balancer.ClientConnState{ResolverState: grpcresolver.State{Endpoints: eps}})
}

// withCustomPolicy sets c's load_balancing_policy to an unknown policy,
// then pinPolicy pinned to port, in a TypedStruct.
func withCustomPolicy(t *testing.T, c *v3clusterpb.Cluster, port uint32) *v3clusterpb.Cluster {
	t.Helper()
	registerPin.Do(func() { balancer.Register(pinBuilder{}) })
	v, err := structpb.NewStruct(map[string]any{"port": port})
	if err != nil {
		t.Fatal(err)
	}
	c.LoadBalancingPolicy = &v3clusterpb.LoadBalancingPolicy{Policies: []*v3clusterpb.LoadBalancingPolicy_Policy{
		{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "unknown", TypedConfig: testutil.MarshalAny(&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/not_registered"})}},
		{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "pin", TypedConfig: testutil.MarshalAny(&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/" + pinPolicy, Value: v})}},
	}}
	return c
}

// TestResolver_E2E_CustomLBPolicy checks that a custom LB policy (gRFC
// A52), a balancer the program registered with gRPC and that a Cluster
// names in a TypedStruct, gets the endpoints of the cluster and its JSON
// config, and picks their RPCs.
//
//  1. Register proxyless_test_pin (pick_first over the endpoints of the port its config names).
//  2. Serve a cluster of A, B and C whose load_balancing_policy is an unregistered TypedStruct, then proxyless_test_pin with B's port.
//  3. Every RPC reaches B.
func TestResolver_E2E_CustomLBPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a, b, c)
	r.Clusters = []*v3clusterpb.Cluster{withCustomPolicy(t, testutil.Cluster("cluster-svc", "eds-svc"), b.port)}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "B", 50); err != nil {
		t.Error(err)
	}
}
