// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/balancer"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/types/known/structpb"

	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// PinPolicyName is the name of a custom load balancing policy for tests
// of gRFC A52, which RegisterPinPolicy registers with gRPC: pick_first
// over the endpoints whose port is its config's "port" (a JSON number).
const PinPolicyName = "testutil_pin"

var registerPin sync.Once

// RegisterPinPolicy registers the PinPolicyName balancer with gRPC's
// global balancer registry, once per process; call it before a Cluster
// naming it is decoded (package resources looks custom policies up in
// gRPC's registry, as grpc-go does). Nothing registers it otherwise.
func RegisterPinPolicy() {
	registerPin.Do(func() { balancer.Register(pinBuilder{}) })
}

// PinPolicy returns a load_balancing_policy whose first policy is a
// TypedStruct that names no registered balancer (skipped), and whose
// second is PinPolicyName pinned to port, in a TypedStruct (gRFC A52).
func PinPolicy(port uint32) *v3clusterpb.LoadBalancingPolicy {
	v, err := structpb.NewStruct(map[string]any{"port": port})
	if err != nil { // cannot happen: a number
		panic(fmt.Sprintf("testutil: PinPolicy: %v", err))
	}
	return &v3clusterpb.LoadBalancingPolicy{Policies: []*v3clusterpb.LoadBalancingPolicy_Policy{
		{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "unknown", TypedConfig: MarshalAny(&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/testutil_not_registered"})}},
		{TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "pin", TypedConfig: MarshalAny(&v3xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/" + PinPolicyName, Value: v})}},
	}}
}

type pinBuilder struct{}

type pinConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`
	Port                              int `json:"port"`
}

func (pinBuilder) Name() string { return PinPolicyName }

func (pinBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &pinBalancer{Balancer: balancer.Get("pick_first").Build(cc, opts)}
}

func (pinBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var c pinConfig
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, fmt.Errorf("%s: config %s: %w", PinPolicyName, js, err)
	}
	if c.Port == 0 {
		return nil, fmt.Errorf("%s: config %s: want a port", PinPolicyName, js)
	}
	return c, nil
}

// pinBalancer is pick_first over the endpoints of its port.
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
