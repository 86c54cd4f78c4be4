// SPDX-License-Identifier: Apache-2.0

package mixed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/mixed"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	clusterName = "xdstp://mgmt/envoy.config.cluster.v3.Cluster/c1"
	edsName     = "xdstp://mgmt/envoy.config.endpoint.v3.ClusterLoadAssignment/e1"
)

func writeResponse(t *testing.T, path, typeURL string, msgs ...proto.Message) {
	t.Helper()
	resp := &v3discoverypb.DiscoveryResponse{TypeUrl: typeURL}
	for _, m := range msgs {
		resp.Resources = append(resp.Resources, testutil.MarshalAny(m))
	}
	b, err := protojson.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestDepMgr checks that the dependency manager resolves a Listener and
// RouteConfiguration read from files and a Cluster and its endpoints from
// a management server over per-type streams ("xds_per_type"), and follows
// updates from both sources.
func TestDepMgr(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("test-node", testutil.Resources{
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster(clusterName, edsName)},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints(edsName, "10.0.0.1", 8080, 8081, 8082)},
	})
	dir := t.TempDir()
	writeResponse(t, filepath.Join(dir, "lds.json"), "type.googleapis.com/envoy.config.listener.v3.Listener", testutil.Listener("svc", "route-svc"))
	rdsPath := filepath.Join(dir, "rds.json")
	writeResponse(t, rdsPath, "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", testutil.RouteConfig("route-svc", "svc", clusterName))

	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{
		"xds_servers": [{"server_uri": "file://%s", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "test-node"},
		"authorities": {"mgmt": {"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_per_type"]}]}}
	}`, dir, ms.Address()))
	if err != nil {
		t.Fatal(err)
	}
	rec := &clienttest.Dialer{Inner: grpctransport.NewBuilder()} // the gRPC streams
	c, err := client.New(cfg, client.WithTransportBuilder(mixed.NewBuilder(mixed.WithGRPC(rec))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	configs := make(chan *depmgr.XDSConfig, 10)
	m := depmgr.New(c, "svc", watcher.Funcs[*depmgr.XDSConfig]{
		OnChanged:       func(cfg *depmgr.XDSConfig) { configs <- cfg },
		OnResourceError: func(err error) { t.Errorf("depmgr error: %v", err) },
	})
	defer m.Close()
	next := func() *depmgr.XDSConfig {
		t.Helper()
		select {
		case cfg := <-configs:
			return cfg
		case <-ctx.Done():
			t.Fatal("no config")
		}
		return nil
	}
	addrs := func(x *depmgr.XDSConfig) []string {
		r := x.Cluster(clusterName)
		if r == nil || r.Err != nil || r.Config.Endpoints == nil {
			return nil
		}
		var out []string
		for _, l := range r.Config.Endpoints.Localities {
			for _, ep := range l.Endpoints {
				out = append(out, ep.Addresses...)
			}
		}
		return out
	}
	x := next()
	if x.Listener.Name != "svc" || x.RouteConfig.Name != "route-svc" || len(addrs(x)) != 3 {
		t.Fatalf("config: listener %q route %q endpoints %v", x.Listener.Name, x.RouteConfig.Name, addrs(x))
	}
	methods := rec.Methods()
	if !slices.Contains(methods, "/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters") || slices.Contains(methods, transport.ADSMethod) {
		t.Errorf("gRPC streams opened: %v; want per-type streams only", methods)
	}

	// An update from the management server.
	ms.Update("test-node", testutil.Resources{
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster(clusterName, edsName)},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints(edsName, "10.0.0.2", 9090)},
	})
	for x = next(); !slices.Equal(addrs(x), []string{"10.0.0.2:9090"}); x = next() {
	}
	// An update from the file: the route now has a second domain.
	writeResponse(t, rdsPath, "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", testutil.RouteConfigWithVirtualHosts("route-svc",
		testutil.VirtualHost("vh", []string{"svc", "svc.example"}, testutil.ClusterRoute("/", clusterName))))
	for x = next(); !slices.Contains(x.VirtualHost.Domains, "svc.example"); x = next() {
	}
}

// The names of the Cluster stream of each transport (transport.XDS.StreamName).
const (
	fileCDS    = "filesystem subscription of " + resources.ClusterTypeURL
	restCDS    = "REST-JSON polling of /v3/discovery:clusters"
	perTypeCDS = "ClusterDiscoveryService.StreamClusters stream"
	adsCDS     = "ADS stream"
)

// streamName returns the name of the Cluster stream of x.
func streamName(x transport.XDS) string {
	return x.StreamName(transport.StreamSpec{TypeURL: resources.ClusterTypeURL})
}

// TestBuild checks the choice of transport by server_uri and features,
// by the name each gives its Cluster stream, and that file and REST
// sources have no load reporting stream.
func TestBuild(t *testing.T) {
	b := mixed.NewBuilder()
	for _, tc := range []struct {
		uri      string
		features []string
		want     string
	}{
		{"file:///etc/xds/lds.yaml", nil, fileCDS},
		{"http://127.0.0.1:8080", nil, restCDS},
		{"HTTPS://xds.example.com", nil, restCDS},
		{"127.0.0.1:18000", []string{mixed.FeaturePerType}, perTypeCDS},
		{"dns:///xds.example.com:443", nil, adsCDS},
	} {
		tr, err := b.Build(&bootstrap.ServerConfig{ServerURI: tc.uri, ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}, ServerFeatures: tc.features}, transport.BuildOptions{})
		if err != nil {
			t.Fatalf("Build(%q) = %v", tc.uri, err)
		}
		if got := streamName(tr); got != tc.want {
			t.Errorf("Build(%q, %v): %q, want %q", tc.uri, tc.features, got, tc.want)
		}
		if tc.want == fileCDS || tc.want == restCDS {
			if _, err := tr.NewLRSStream(t.Context()); !errors.Is(err, transport.ErrLRSUnsupported) {
				t.Errorf("Build(%q).NewLRSStream: %v, want an error wrapping transport.ErrLRSUnsupported", tc.uri, err)
			}
		}
		tr.Close()
	}
}

// TestBuild_WithPerType checks that WithPerType makes every gRPC server
// per-type, whatever its features, and leaves file and REST servers
// alone.
func TestBuild_WithPerType(t *testing.T) {
	b := mixed.NewBuilder(mixed.WithPerType())
	for _, tc := range []struct{ uri, want string }{
		{"127.0.0.1:18000", perTypeCDS},
		{"dns:///xds.example.com:443", perTypeCDS},
		{"file:///etc/xds/lds.yaml", fileCDS},
		{"http://127.0.0.1:8080", restCDS},
	} {
		tr, err := b.Build(&bootstrap.ServerConfig{ServerURI: tc.uri, ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}}, transport.BuildOptions{})
		if err != nil {
			t.Fatalf("Build(%q) = %v", tc.uri, err)
		}
		if got := streamName(tr); got != tc.want {
			t.Errorf("WithPerType: Build(%q): %q, want %q", tc.uri, got, tc.want)
		}
		tr.Close()
	}
}
