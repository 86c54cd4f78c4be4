// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// TestHTTPTransport_GoControlPlane: go-control-plane's snapshot cache
// serves an HTTP service (Listener "web" over RDS, a header route to
// cluster "v2", everything else to "v1", each with an httptest backend)
// to this library's net/http Transport: requests reach the backend their
// route names, with their Host; a new snapshot whose default route goes
// to "v2" moves them.
func TestHTTPTransport_GoControlPlane(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := startGCPServer(t)
	js := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)
	tr := xdshttp.NewTransport(newClientFromJSON(t, []byte(js)))
	t.Cleanup(func() { tr.Close() })
	hc := &http.Client{Transport: tr}

	backend := func(name string) uint32 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.Host)
		}))
		t.Cleanup(srv.Close)
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		return uint32(p)
	}
	p1, p2 := backend("v1"), backend("v2")
	routes := func(defaultCluster string) *v3routepb.RouteConfiguration {
		v2 := testutil.ClusterRoute("/", "v2")
		v2.Match.Headers = []*v3routepb.HeaderMatcher{{Name: "x-version", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{
			StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "2"}},
		}}}
		return testutil.RouteConfigWithVirtualHosts("rc-web", testutil.VirtualHost("web", []string{"web"}, v2, testutil.ClusterRoute("/", defaultCluster)))
	}
	snapshot := func(version, defaultCluster string) {
		s.setSnapshot(ctx, t, version, testutil.Resources{
			Listeners: []*v3listenerpb.Listener{testutil.Listener("web", "rc-web")},
			Routes:    []*v3routepb.RouteConfiguration{routes(defaultCluster)},
			Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("v1", ""), testutil.Cluster("v2", "")},
			Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("v1", "127.0.0.1", p1), testutil.Endpoints("v2", "127.0.0.1", p2)},
		})
	}
	get := func(version string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://web/x", nil)
		if version != "" {
			req.Header.Set("x-version", version)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET (x-version %q): %v", version, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	snapshot("1", "v1")
	if got := get(""); got != "v1 web" {
		t.Errorf("default route: %q, want \"v1 web\"", got)
	}
	if got := get("2"); got != "v2 web" {
		t.Errorf("header route: %q, want \"v2 web\"", got)
	}
	snapshot("2", "v2")
	deadline := time.Now().Add(10 * time.Second)
	for get("") != "v2 web" {
		if time.Now().After(deadline) {
			t.Fatal("the new snapshot's default route did not move the requests to v2")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
