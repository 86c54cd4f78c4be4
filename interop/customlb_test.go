// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/proxyless/xds/testutil"

	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// pinPolicy is a custom LB policy (gRFC A52) registered by the test:
// pick_first over the endpoints of the port its JSON config names.
const pinPolicy = "interop_test_pin"

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
		if len(ep.Addresses) > 0 && strings.HasSuffix(ep.Addresses[0].Addr, port) {
			eps = append(eps, ep)
		}
	}
	return b.Balancer.UpdateClientConnState(balancer.ClientConnState{ResolverState: grpcresolver.State{Endpoints: eps}})
}

// TestCustomLBPolicy_SideBySide_GRPCGo serves one go-control-plane
// configuration, a cluster of three endpoints whose load_balancing_policy
// is an unregistered TypedStruct, then one naming a policy the test
// registered with gRPC (gRFC A52) with the port of B in its config, to
// this library's channel and to grpc-go's xDS channel, and checks that
// both send every RPC to B.
func TestCustomLBPolicy_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	registerPin.Do(func() { balancer.Register(pinBuilder{}) })
	a, b, c := startIDServer(t, "A"), startIDServer(t, "B"), startIDServer(t, "C")
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{a.port, b.port, c.port}})
	v, err := structpb.NewStruct(map[string]any{"port": b.port})
	if err != nil {
		t.Fatal(err)
	}
	cl := testutil.Cluster("cluster-svc", "eds-svc")
	cl.LoadBalancingPolicy = &v3clusterpb.LoadBalancingPolicy{Policies: []*v3clusterpb.LoadBalancingPolicy_Policy{
		{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "unknown", TypedConfig: testutil.MarshalAny(&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/not_registered"})}},
		{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "pin", TypedConfig: testutil.MarshalAny(&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/" + pinPolicy, Value: v})}},
	}}
	res.Clusters = []*v3clusterpb.Cluster{cl}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	for _, ch := range bothChannels(t, s, "xds:///svc") {
		tc := testgrpc.NewTestServiceClient(ch.cc)
		got := map[string]int{}
		for i := 0; i < 100; {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
			rcancel()
			if err != nil {
				if ctx.Err() != nil || i > 0 {
					t.Fatalf("%s: RPC %d: %v", ch.name, i, err)
				}
				continue // the first RPCs may wait for the configuration
			}
			got[resp.GetServerId()]++
			i++
		}
		if got["B"] != 100 {
			t.Errorf("%s: RPCs per server %v; want all 100 on B", ch.name, got)
		}
	}
}
