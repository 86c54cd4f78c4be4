// SPDX-License-Identifier: Apache-2.0

package csds_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/csds"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/watcher"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

const defaultTestTimeout = 10 * time.Second

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// newClient creates a client of ms with node ID nodeID, closed at the end
// of the test.
func newClient(t *testing.T, ms *testutil.ManagementServer, nodeID string) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{NodeID: nodeID}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// watch watches typ/name on c until the end of the test and returns a
// channel that receives once the watcher heard anything.
func watch[T any](t *testing.T, c *client.Client, typ resources.Type[T], name string) <-chan struct{} {
	heard := make(chan struct{}, 1)
	signal := func() {
		select {
		case heard <- struct{}{}:
		default:
		}
	}
	t.Cleanup(client.Watch(c, typ, name, watcher.Funcs[T]{
		OnChanged:       func(T) { signal() },
		OnResourceError: func(error) { signal() },
		OnAmbientError:  func(error) { signal() },
	}))
	return heard
}

// startCSDS serves CSDS on a loopback port with register, and returns a
// CSDS client of grpc-go's generated types.
func startCSDS(t *testing.T, register func(*grpc.Server)) v3statuspb.ClientStatusDiscoveryServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return v3statuspb.NewClientStatusDiscoveryServiceClient(cc)
}

// statuses maps "type_url name" to the client_status of every entry.
func statuses(cfg *v3statuspb.ClientConfig) map[string]v3adminpb.ClientResourceStatus {
	m := make(map[string]v3adminpb.ClientResourceStatus)
	for _, g := range cfg.GetGenericXdsConfigs() {
		m[g.GetTypeUrl()+" "+g.GetName()] = g.GetClientStatus()
	}
	return m
}

// TestCSDS_AckedAndNacked reads the service over real gRPC with the
// generated CSDS client (gRFC A40, R-20.1, R-20.2):
//  1. Client "good" watches the four resource types of a valid chain; its
//     ClientConfig lists them ACKED with version, raw resource and
//     last_updated, and the node.
//  2. Client "bad", added with a client_scope, watches a Cluster the
//     server sends invalid; its ClientConfig lists it NACKED with the
//     validation error in error_state.
//  3. FetchClientStatus and StreamClientStatus (two requests on one
//     stream) agree; exclude_resource_contents drops xds_config.
func TestCSDS_AckedAndNacked(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	bad := testutil.Cluster("bad", "")
	bad.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC} // no load assignment: invalid
	ms.Update("bad-node", testutil.Resources{Clusters: []*v3clusterpb.Cluster{bad}})

	good := newClient(t, ms, "good-node")
	for _, heard := range []<-chan struct{}{
		watch(t, good, resources.ListenerType, "svc"),
		watch(t, good, resources.RouteConfigType, "route-svc"),
		watch(t, good, resources.ClusterType, "cluster-svc"),
		watch(t, good, resources.EndpointsType, "eds-svc"),
	} {
		select {
		case <-heard:
		case <-ctx.Done():
			t.Fatal("timed out waiting for the good client's resources")
		}
	}
	badClient := newClient(t, ms, "bad-node")
	select {
	case <-watch(t, badClient, resources.ClusterType, "bad"):
	case <-ctx.Done():
		t.Fatal("timed out waiting for the bad client's NACK")
	}

	csdsClient := startCSDS(t, func(s *grpc.Server) {
		srv := csds.Register(s, good)
		srv.Add("xds:///bad", badClient)
	})
	resp, err := csdsClient.FetchClientStatus(ctx, &v3statuspb.ClientStatusRequest{})
	if err != nil {
		t.Fatalf("FetchClientStatus: %v", err)
	}
	if n := len(resp.GetConfig()); n != 2 {
		t.Fatalf("FetchClientStatus returned %d client configs, want 2: %v", n, resp)
	}

	// Step 1.
	goodCfg := resp.GetConfig()[0]
	if goodCfg.GetNode().GetId() != "good-node" || goodCfg.GetClientScope() != "" {
		t.Errorf("first config: node %q, scope %q; want good-node and no scope", goodCfg.GetNode().GetId(), goodCfg.GetClientScope())
	}
	wantGood := map[string]v3adminpb.ClientResourceStatus{
		resources.ListenerTypeURL + " svc":          v3adminpb.ClientResourceStatus_ACKED,
		resources.RouteConfigTypeURL + " route-svc": v3adminpb.ClientResourceStatus_ACKED,
		resources.ClusterTypeURL + " cluster-svc":   v3adminpb.ClientResourceStatus_ACKED,
		resources.EndpointsTypeURL + " eds-svc":     v3adminpb.ClientResourceStatus_ACKED,
	}
	if got := statuses(goodCfg); fmt.Sprint(got) != fmt.Sprint(wantGood) {
		t.Errorf("good client statuses = %v, want %v", got, wantGood)
	}
	for _, g := range goodCfg.GetGenericXdsConfigs() {
		if g.GetVersionInfo() == "" || g.GetXdsConfig() == nil || g.GetLastUpdated() == nil {
			t.Errorf("ACKED entry %s %s lacks version_info, xds_config or last_updated: %v", g.GetTypeUrl(), g.GetName(), g)
		}
	}

	// Step 2.
	badCfg := resp.GetConfig()[1]
	if badCfg.GetNode().GetId() != "bad-node" || badCfg.GetClientScope() != "xds:///bad" {
		t.Errorf("second config: node %q, scope %q; want bad-node and xds:///bad", badCfg.GetNode().GetId(), badCfg.GetClientScope())
	}
	gs := badCfg.GetGenericXdsConfigs()
	if len(gs) != 1 || gs[0].GetName() != "bad" || gs[0].GetClientStatus() != v3adminpb.ClientResourceStatus_NACKED ||
		gs[0].GetErrorState().GetDetails() == "" || gs[0].GetErrorState().GetVersionInfo() == "" {
		t.Fatalf("bad client configs = %v, want cluster \"bad\" NACKED with error_state details and version", gs)
	}
	t.Logf("NACK details: %s", gs[0].GetErrorState().GetDetails())

	// Step 3.
	st, err := csdsClient.StreamClientStatus(ctx)
	if err != nil {
		t.Fatalf("StreamClientStatus: %v", err)
	}
	for _, exclude := range []bool{false, true} {
		if err := st.Send(&v3statuspb.ClientStatusRequest{ExcludeResourceContents: exclude}); err != nil {
			t.Fatalf("Send: %v", err)
		}
		sresp, err := st.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		want := proto.Clone(resp).(*v3statuspb.ClientStatusResponse)
		for _, cfg := range want.GetConfig() {
			for _, g := range cfg.GetGenericXdsConfigs() {
				if exclude {
					g.XdsConfig = nil
				}
			}
		}
		if !proto.Equal(sresp, want) {
			t.Errorf("stream response (exclude_resource_contents %v) = %v, want %v", exclude, sresp, want)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Recv after CloseSend: %v, want io.EOF", err)
	}
}

// TestCSDS_NodeMatchersRejected checks: node_matchers in a request
// fail with InvalidArgument, on Fetch and on the stream.
func TestCSDS_NodeMatchersRejected(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	c := newClient(t, ms, "n")
	csdsClient := startCSDS(t, func(s *grpc.Server) { csds.Register(s, c) })
	req := &v3statuspb.ClientStatusRequest{NodeMatchers: []*v3matcherpb.NodeMatcher{{}}}
	if _, err := csdsClient.FetchClientStatus(ctx, req); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("FetchClientStatus with node_matchers: %v, want InvalidArgument", err)
	}
	st, err := csdsClient.StreamClientStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(req); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("stream with node_matchers: %v, want InvalidArgument", err)
	}
}

// TestServer_AddRemove checks that clients can be added and removed while
// the server runs, and that removing twice is harmless.
func TestServer_AddRemove(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	a, b := newClient(t, ms, "a"), newClient(t, ms, "b")
	s := csds.NewServer(a, nil)
	remove := s.Add("scope-b", b)
	ids := func() []string {
		resp, err := s.FetchClientStatus(t.Context(), &v3statuspb.ClientStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range resp.GetConfig() {
			out = append(out, c.GetNode().GetId()+"/"+c.GetClientScope())
		}
		return out
	}
	if got := fmt.Sprint(ids()); got != "[a/ b/scope-b]" {
		t.Fatalf("clients = %s, want [a/ b/scope-b]", got)
	}
	remove()
	remove()
	if got := fmt.Sprint(ids()); got != "[a/]" {
		t.Fatalf("clients after remove = %s, want [a/]", got)
	}
}
