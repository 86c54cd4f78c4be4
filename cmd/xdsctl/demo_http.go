// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/mgmtserver/xdsbuild"
)

// The HTTP service of the demo, for package xdshttp's Transport
// (examples/http): requests to http://web go to Listener "web".
const (
	demoWebListener      = "web"
	demoWebRoute         = "route-web"
	demoWebCluster       = "cluster-web"
	demoWebCanaryCluster = "cluster-web-canary"
	demoWebEDS           = "eds-web"
	demoWebCanaryEDS     = "eds-web-canary"
	// demoWebPortOffset is the offset from --base-port of the first HTTP
	// backend: 50071 to 50073 by default.
	demoWebPortOffset = 20
)

// demoWeb are the HTTP backends of the demo's web service: plain net/http
// servers (with demo --mtls, TLS servers that require the mesh's client
// certificates) that answer every request with their name, the request's
// method, path and protocol, and the client's SPIFFE ID when there is one;
// their name also in the X-Backend header.
type demoWeb struct {
	ports []uint32 // web-1, web-2, web-canary
	srvs  []*http.Server
}

// demoWebNames are the names of the HTTP backends, in the order of their
// ports.
var demoWebNames = []string{"web-1", "web-2", "web-canary"}

// startDemoWeb starts the HTTP backends on base+20 to base+22, or free
// ports when base is 0; with sec, over TLS with the backends' certificate,
// requiring client certificates of the mesh.
func startDemoWeb(base int, sec *demoMTLS) (*demoWeb, error) {
	w := &demoWeb{}
	var tlsConfig *tls.Config
	if sec != nil {
		tlsConfig = sec.mesh.ServerTLS()
	}
	for i, name := range demoWebNames {
		addr := "127.0.0.1:0"
		if base != 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", base+demoWebPortOffset+i)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			w.stop()
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("serving the demo's HTTP endpoint %s: the port is in use (another demo?); --base-port chooses other ports, 0 free ones", addr)
			}
			return nil, fmt.Errorf("serving the demo's HTTP endpoint %s: %w", addr, err)
		}
		if tlsConfig != nil {
			l = tls.NewListener(l, tlsConfig)
		}
		srv := &http.Server{Handler: demoWebHandler(name), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		go srv.Serve(l)
		_, port, _ := net.SplitHostPort(l.Addr().String())
		p, _ := strconv.Atoi(port)
		w.ports = append(w.ports, uint32(p))
		w.srvs = append(w.srvs, srv)
	}
	return w, nil
}

// demoWebHandler answers with the backend's name.
func demoWebHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		peer := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && len(r.TLS.PeerCertificates[0].URIs) > 0 {
			peer = ", client " + r.TLS.PeerCertificates[0].URIs[0].String()
		}
		fmt.Fprintf(w, "%s: %s %s (%s, Host %s%s)\n", name, r.Method, r.URL.RequestURI(), r.Proto, r.Host, peer)
	})
}

// stop closes the servers.
func (w *demoWeb) stop() {
	for _, s := range w.srvs {
		s.Close()
	}
}

// demoWebResources are the client-side resources of the web service:
// Listener "web" -> RouteConfiguration "route-web", whose virtual host
// sends requests with "x-canary: always" to cluster-web-canary and
// splits the others 90/10 between cluster-web and cluster-web-canary,
// retrying 5xx answers and resets twice; the clusters' endpoints are the
// HTTP backends (eds-web: web-1 and web-2; eds-web-canary: web-canary),
// with mutual TLS when sec is set.
func demoWebResources(ports []uint32, sec *demoMTLS) ([]*v3listenerpb.Listener, []*v3routepb.RouteConfiguration, []*v3clusterpb.Cluster, []*v3endpointpb.ClusterLoadAssignment) {
	canary := &v3routepb.Route{
		Match: &v3routepb.RouteMatch{
			PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"},
			Headers: []*v3routepb.HeaderMatcher{{Name: "x-canary", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{
				StringMatch: xdsbuild.ExactSAN("always"),
			}}},
		},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: demoWebCanaryCluster}}},
	}
	split := &v3routepb.Route{
		Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
			ClusterSpecifier: &v3routepb.RouteAction_WeightedClusters{WeightedClusters: &v3routepb.WeightedCluster{
				Clusters: []*v3routepb.WeightedCluster_ClusterWeight{
					{Name: demoWebCluster, Weight: wrapperspb.UInt32(90)},
					{Name: demoWebCanaryCluster, Weight: wrapperspb.UInt32(10)},
				},
			}},
			Timeout:     durationpb.New(5 * time.Second),
			RetryPolicy: &v3routepb.RetryPolicy{RetryOn: "5xx,reset", NumRetries: wrapperspb.UInt32(2)},
		}},
	}
	rc := &v3routepb.RouteConfiguration{
		Name: demoWebRoute,
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    demoWebListener,
			Domains: []string{demoWebListener},
			Routes:  []*v3routepb.Route{canary, split},
		}},
	}
	clusters := []*v3clusterpb.Cluster{xdsbuild.Cluster(demoWebCluster, demoWebEDS), xdsbuild.Cluster(demoWebCanaryCluster, demoWebCanaryEDS)}
	if sec != nil {
		for _, c := range clusters {
			xdsbuild.WithUpstreamTLS(c, sec.tlsOptions())
		}
	}
	eps := []*v3endpointpb.ClusterLoadAssignment{
		demoAssignment(demoWebEDS, []demoEndpoint{
			{port: ports[0], health: v3corepb.HealthStatus_HEALTHY, locality: demoEast},
			{port: ports[1], health: v3corepb.HealthStatus_HEALTHY, locality: demoEast},
		}),
		demoAssignment(demoWebCanaryEDS, []demoEndpoint{{port: ports[2], health: v3corepb.HealthStatus_HEALTHY, locality: demoEast}}),
	}
	return []*v3listenerpb.Listener{xdsbuild.Listener(demoWebListener, demoWebRoute)}, []*v3routepb.RouteConfiguration{rc}, clusters, eps
}
