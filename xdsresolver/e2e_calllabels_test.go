// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// labelsHandler is a client stats handler that notes, for each attempt
// that ends, the xDS labels of its calllabels.Holder, by the server that
// answered ("" when none did).
type labelsHandler struct {
	mu  sync.Mutex
	got []calllabels.Labels
}

func (h *labelsHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h *labelsHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h *labelsHandler) HandleConn(context.Context, stats.ConnStats) {}
func (h *labelsHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.End); ok {
		h.mu.Lock()
		h.got = append(h.got, calllabels.FromContext(ctx).Labels())
		h.mu.Unlock()
	}
}

func (h *labelsHandler) take() []calllabels.Labels {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}

// TestResolver_E2E_CallLabels checks the xDS labels the picker hands to
// stats handlers (package calllabels, gRFC A78, A89), on a channel made
// with DialOptions: every attempt that reached an endpoint of cluster-svc
// has that endpoint's locality, {region="r", zone="z1", sub_zone=""} or
// z2, and the cluster; an RPC dropped by its cluster (drop_overloads)
// has neither; on a channel made with NewBuilder alone (no interceptors, so no
// Holder) a handler reads "" for both.
func TestResolver_E2E_CallLabels(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	res := chain(a)
	res.Endpoints = []*v3endpointpb.ClusterLoadAssignment{{
		ClusterName: "eds-svc",
		Endpoints: []*v3endpointpb.LocalityLbEndpoints{
			localityEndpoints("z1", 0, lbEndpoint(a.port, v3corepb.HealthStatus_HEALTHY)),
			localityEndpoints("z2", 0, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY)),
		},
	}}
	drop := testutil.Endpoints("eds-drop", "127.0.0.1", b.port)
	drop.Policy = &v3endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "all", DropPercentage: &v3typepb.FractionalPercent{Numerator: 100, Denominator: v3typepb.FractionalPercent_HUNDRED},
	}}}
	res.Endpoints = append(res.Endpoints, drop)
	res.Clusters = append(res.Clusters, testutil.Cluster("cluster-drop", "eds-drop"))
	res.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("svc", []string{"svc"},
		testutil.ClusterRoute("/grpc.testing.TestService/EmptyCall", "cluster-drop"),
		testutil.ClusterRoute("", "cluster-svc"),
	))}
	e.ms.Update("", res)

	h := &labelsHandler{}
	cc, err := grpc.NewClient("xds:///svc", append(xdsresolver.DialOptions(e.client), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(h))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)
	want := map[string]calllabels.Labels{
		"A": {Locality: `{region="r", zone="z1", sub_zone=""}`, BackendService: "cluster-svc"},
		"B": {Locality: `{region="r", zone="z2", sub_zone=""}`, BackendService: "cluster-svc"},
	}
	seen := map[string]int{}
	for range 40 {
		resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
		if err != nil {
			t.Fatal(err)
		}
		got := h.take()
		if len(got) != 1 || got[0] != want[resp.GetServerId()] {
			t.Fatalf("RPC answered by %s: attempts' labels %+v, want [%+v]", resp.GetServerId(), got, want[resp.GetServerId()])
		}
		seen[resp.GetServerId()]++
	}
	if seen["A"] == 0 || seen["B"] == 0 {
		t.Errorf("RPCs by backend %v; want both localities", seen)
	}
	if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}); err == nil {
		t.Fatal("EmptyCall to a cluster dropping every RPC succeeded")
	}
	if got := h.take(); len(got) != 1 || got[0] != (calllabels.Labels{}) {
		t.Errorf("an RPC that reached no endpoint: labels %+v, want one attempt without labels", got)
	}

	// NewBuilder alone: no Holder, nothing to read.
	h2 := &labelsHandler{}
	cc2, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(xdsresolver.NewBuilder(e.client)), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(h2))
	if err != nil {
		t.Fatal(err)
	}
	defer cc2.Close()
	if _, err := testgrpc.NewTestServiceClient(cc2).UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	if got := h2.take(); len(got) != 1 || got[0] != (calllabels.Labels{}) {
		t.Errorf("NewBuilder alone: labels %+v, want one attempt without labels", got)
	}
}
