// SPDX-License-Identifier: Apache-2.0

package mixed_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/transport/rest"
	"github.com/proxyless/xds/watcher"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

const (
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// mesh returns n EDS Clusters and their ClusterLoadAssignments with eps
// endpoints each: the load of client's BenchmarkE2E_1000Clusters.
func mesh(n, eps int) (testutil.Resources, []string) {
	var res testutil.Resources
	names := make([]string, n)
	ports := make([]uint32, eps)
	for i := range ports {
		ports[i] = uint32(8080 + i)
	}
	for i := range n {
		names[i] = fmt.Sprintf("cluster-%04d", i)
		res.Clusters = append(res.Clusters, testutil.Cluster(names[i], "eds-"+names[i]))
		res.Endpoints = append(res.Endpoints, testutil.Endpoints("eds-"+names[i], "10.0.0.1", ports...))
	}
	return res, names
}

// responses returns the SotW responses of res by type URL.
func responses(res testutil.Resources) map[string]*v3discoverypb.DiscoveryResponse {
	out := map[string]*v3discoverypb.DiscoveryResponse{
		clusterType:  {TypeUrl: clusterType, VersionInfo: "1"},
		endpointType: {TypeUrl: endpointType, VersionInfo: "1"},
	}
	for _, m := range res.Clusters {
		out[clusterType].Resources = append(out[clusterType].Resources, testutil.MarshalAny(m))
	}
	for _, m := range res.Endpoints {
		out[endpointType].Resources = append(out[endpointType].Resources, testutil.MarshalAny(m))
	}
	return out
}

// runMesh measures, per iteration, the time from client.New to every
// watcher of the mesh's Clusters and ClusterLoadAssignments having its
// first value.
func runMesh(b *testing.B, cfg *bootstrap.Config, names []string, opts ...client.Option) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := client.New(cfg, opts...)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2 * len(names))
		cancels := make([]func(), 0, 2*len(names))
		for _, name := range names {
			var once, onceE sync.Once
			cancels = append(cancels,
				client.Watch(c, resources.ClusterType, name, watcher.Funcs[*resources.Cluster]{
					OnChanged: func(*resources.Cluster) { once.Do(wg.Done) },
				}),
				client.Watch(c, resources.EndpointsType, "eds-"+name, watcher.Funcs[*resources.Endpoints]{
					OnChanged: func(*resources.Endpoints) { onceE.Do(wg.Done) },
				}))
		}
		wg.Wait()
		b.StopTimer()
		for _, cancel := range cancels {
			cancel()
		}
		c.Close()
		b.StartTimer()
	}
}

// BenchmarkMesh1000x3 is mesh(1000, 3) over each transport: ADS (the
// baseline, as client's BenchmarkE2E_1000Clusters), per-type streams SotW
// and delta against testutil over gRPC on loopback, REST-JSON polling
// against an httptest server, and a filesystem directory (binary files).
func BenchmarkMesh1000x3(b *testing.B) {
	res, names := mesh(1000, 3)
	grpcCase := func(b *testing.B, tb func() transport.Builder, opts ...client.Option) {
		ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
		ms.Update("", res)
		cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
		if err != nil {
			b.Fatal(err)
		}
		runMesh(b, cfg, names, append(opts, client.WithTransportBuilder(tb()))...)
	}
	b.Run("ADS", func(b *testing.B) {
		grpcCase(b, func() transport.Builder { return grpctransport.NewBuilder() })
	})
	b.Run("DeltaADS", func(b *testing.B) {
		grpcCase(b, func() transport.Builder { return grpctransport.NewBuilder() }, client.WithDelta())
	})
	b.Run("PerType", func(b *testing.B) {
		grpcCase(b, func() transport.Builder { return pertype.NewBuilder(grpctransport.NewBuilder()) })
	})
	b.Run("PerTypeDelta", func(b *testing.B) {
		grpcCase(b, func() transport.Builder { return pertype.NewBuilder(grpctransport.NewBuilder()) }, client.WithDelta())
	})
	b.Run("REST", func(b *testing.B) {
		bodies := map[string][]byte{}
		for typ, resp := range responses(res) {
			j, err := protojson.Marshal(resp)
			if err != nil {
				b.Fatal(err)
			}
			bodies[typ] = j
		}
		byPath := map[string]string{"/v3/discovery:clusters": clusterType, "/v3/discovery:endpoints": endpointType}
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			req := &v3discoverypb.DiscoveryRequest{}
			if err := protojson.Unmarshal(body, req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if req.GetVersionInfo() == "1" {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Write(bodies[byPath[r.URL.Path]])
		}))
		defer hs.Close()
		cfg := &bootstrap.Config{Servers: []*bootstrap.ServerConfig{{ServerURI: hs.URL}}}
		runMesh(b, cfg, names, client.WithTransportBuilder(rest.NewBuilder()))
	})
	b.Run("File", func(b *testing.B) {
		dir := b.TempDir()
		for typ, resp := range responses(res) {
			pb, err := proto.Marshal(resp)
			if err != nil {
				b.Fatal(err)
			}
			name := map[string]string{clusterType: "cds.pb", endpointType: "eds.pb"}[typ]
			if err := os.WriteFile(filepath.Join(dir, name), pb, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		cfg, fb, err := file.Bootstrap(dir)
		if err != nil {
			b.Fatal(err)
		}
		runMesh(b, cfg, names, client.WithTransportBuilder(fb))
	})
}
