// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gcptypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	gcpcache "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	gcplog "github.com/envoyproxy/go-control-plane/pkg/log"
	gcpresource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gcpserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	"github.com/proxyless/xds/conformance"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	v3discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
)

// This file runs the conformance kit (package conformance) against the
// management servers docs/conformance.md reports on, and expects exactly
// the results the document's tables give (kit_docs_test.go reads them),
// so that a change in a server's behaviour, or in the kit, is noticed.

// kitQuiet and kitTimeout are the kit's waits here: loopback servers
// answer within milliseconds.
const (
	kitQuiet   = 750 * time.Millisecond
	kitTimeout = 3 * time.Second
)

// kitWorld is the resources the kit works with on every server: three
// Listeners l0..l2, each naming RouteConfiguration r<i>, which routes to
// Cluster c<i>, whose ClusterLoadAssignment is c<i>; with what the kit's
// Change callback did to them.
type kitWorld struct {
	mu      sync.Mutex
	gen     map[string]int  // "type/name" → generation (Update adds one)
	deleted map[string]bool // "type/name" → deleted
}

func newKitWorld() *kitWorld {
	return &kitWorld{gen: make(map[string]int), deleted: make(map[string]bool)}
}

// apply records c.
func (w *kitWorld) apply(c conformance.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := c.TypeURL + "/" + c.Name
	switch c.Op {
	case conformance.Update:
		w.gen[key]++
	case conformance.Delete:
		w.deleted[key] = true
	case conformance.Restore:
		delete(w.deleted, key)
	}
}

// resources returns the world as it is now.
func (w *kitWorld) resources() testutil.Resources {
	w.mu.Lock()
	defer w.mu.Unlock()
	var r testutil.Resources
	keep := func(typeURL, name string) (int, bool) {
		key := typeURL + "/" + name
		return w.gen[key], !w.deleted[key]
	}
	for i := range 3 {
		l, rn, c := fmt.Sprint("l", i), fmt.Sprint("r", i), fmt.Sprint("c", i)
		if gen, ok := keep(resources.ListenerTypeURL, l); ok {
			lis := testutil.Listener(l, rn)
			lis.StatPrefix = fmt.Sprint(gen)
			r.Listeners = append(r.Listeners, lis)
		}
		if gen, ok := keep(resources.RouteConfigTypeURL, rn); ok {
			rc := testutil.RouteConfig(rn, "*", c)
			rc.ResponseHeadersToRemove = []string{fmt.Sprint("x-gen-", gen)}
			r.Routes = append(r.Routes, rc)
		}
		if gen, ok := keep(resources.ClusterTypeURL, c); ok {
			cl := testutil.Cluster(c, "")
			cl.AltStatName = fmt.Sprint(gen)
			r.Clusters = append(r.Clusters, cl)
		}
		if gen, ok := keep(resources.EndpointsTypeURL, c); ok {
			r.Endpoints = append(r.Endpoints, testutil.Endpoints(c, "10.0.0.1", uint32(8000+gen)))
		}
	}
	return r
}

// gcpResources returns r as go-control-plane's resources, by type URL
// and then name.
func gcpResources(r testutil.Resources) map[gcpresource.Type]map[string]gcptypes.Resource {
	out := map[gcpresource.Type]map[string]gcptypes.Resource{}
	add := func(typeURL string, rs []gcptypes.Resource) {
		out[typeURL] = map[string]gcptypes.Resource{}
		for _, res := range rs {
			out[typeURL][gcpcache.GetResourceName(res)] = res
		}
	}
	add(gcpresource.ListenerType, toResources(r.Listeners))
	add(gcpresource.RouteType, toResources(r.Routes))
	add(gcpresource.ClusterType, toResources(r.Clusters))
	add(gcpresource.EndpointType, toResources(r.Endpoints))
	return out
}

// kitTargets are the servers docs/conformance.md reports on, by the name
// its tables use; each returns the kit's Config for a server started for
// t.
var kitTargets = []struct {
	name  string
	start func(t *testing.T) conformance.Config
}{
	{"testutil", startKitTestutil},
	{"go-control-plane SnapshotCache (ADS)", startKitSnapshotCache},
	{"go-control-plane LinearCache", startKitLinearCache},
}

// kitConfig is the part of the kit's Config every target shares.
func kitConfig(c conformance.Config) conformance.Config {
	c.Quiet, c.Timeout = kitQuiet, kitTimeout
	if c.Variants == nil {
		c.Variants = conformance.Variants()
	}
	return c
}

func startKitTestutil(t *testing.T) conformance.Config {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	w := newKitWorld()
	ms.Update("", w.resources())
	web := httptest.NewServer(ms.RESTHandler())
	t.Cleanup(web.Close)
	return kitConfig(conformance.Config{
		Server: ms.Address(),
		REST:   web.URL,
		Change: func(_ context.Context, c conformance.Change) error {
			w.apply(c)
			return ms.Update("", w.resources())
		},
	})
}

func startKitSnapshotCache(t *testing.T) conformance.Config {
	cache := gcpcache.NewSnapshotCache(true, gcpcache.IDHash{}, gcplog.LoggerFuncs{})
	w := newKitWorld()
	var (
		mu      sync.Mutex
		version int
	)
	set := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		version++
		r := w.resources()
		snap, err := gcpcache.NewSnapshot(fmt.Sprint(version), map[gcpresource.Type][]gcptypes.Resource{
			gcpresource.ListenerType: toResources(r.Listeners),
			gcpresource.RouteType:    toResources(r.Routes),
			gcpresource.ClusterType:  toResources(r.Clusters),
			gcpresource.EndpointType: toResources(r.Endpoints),
		})
		if err != nil {
			return err
		}
		return cache.SetSnapshot(ctx, conformance.DefaultNodeID, snap)
	}
	if err := set(t.Context()); err != nil {
		t.Fatal(err)
	}
	addr, restURL := serveGCP(t, cache, true)
	return kitConfig(conformance.Config{
		Server: addr,
		REST:   restURL,
		Change: func(ctx context.Context, c conformance.Change) error {
			w.apply(c)
			return set(ctx)
		},
	})
}

func startKitLinearCache(t *testing.T) conformance.Config {
	w := newKitWorld()
	caches := map[string]*gcpcache.LinearCache{}
	mux := &gcpcache.MuxCache{
		Classify:      func(r *gcpcache.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *gcpcache.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        map[string]gcpcache.Cache{},
	}
	for typeURL, initial := range gcpResources(w.resources()) {
		caches[typeURL] = gcpcache.NewLinearCache(typeURL, gcpcache.WithInitialResources(initial))
		mux.Caches[typeURL] = caches[typeURL]
	}
	addr, _ := serveGCP(t, mux, false)
	return kitConfig(conformance.Config{
		Server: addr,
		// A LinearCache has no Fetch: go-control-plane's REST gateway
		// cannot serve it.
		Variants: []conformance.Variant{conformance.SotW, conformance.Delta, conformance.SotWPerType, conformance.DeltaPerType},
		Change: func(_ context.Context, c conformance.Change) error {
			w.apply(c)
			cache := caches[c.TypeURL]
			if c.Op == conformance.Delete {
				return cache.DeleteResource(c.Name)
			}
			return cache.UpdateResource(c.Name, gcpResources(w.resources())[c.TypeURL][c.Name])
		},
	})
}

// serveGCP serves go-control-plane's server over cache: ADS and the
// per-type services over gRPC on loopback, and with rest its REST-JSON
// gateway over HTTP. It returns the gRPC address and the REST base URL
// ("" without rest); both stop in t.Cleanup.
func serveGCP(t *testing.T, cache gcpcache.Cache, rest bool) (addr, restURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	t.Cleanup(cancel) // runs last: after the servers below stopped
	xds := gcpserver.NewServer(ctx, cache, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	gs := grpc.NewServer(grpc.WaitForHandlers(true))
	v3discoverygrpc.RegisterAggregatedDiscoveryServiceServer(gs, xds)
	v3listenerpb.RegisterListenerDiscoveryServiceServer(gs, xds)
	v3routepb.RegisterRouteDiscoveryServiceServer(gs, xds)
	v3clusterpb.RegisterClusterDiscoveryServiceServer(gs, xds)
	v3endpointpb.RegisterEndpointDiscoveryServiceServer(gs, xds)
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-serveDone; err != nil {
			t.Errorf("grpc.Server.Serve: %v", err)
		}
	})
	if rest {
		gw := &gcpserver.HTTPGateway{Server: xds}
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, code, err := gw.ServeHTTP(r)
			if err != nil {
				http.Error(w, err.Error(), code)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write(b)
		}))
		t.Cleanup(hs.Close)
		restURL = hs.URL
	}
	return lis.Addr().String(), restURL
}

// TestKit_MatchesDocs runs the kit against each server of kitTargets
// and checks that every result is the one docs/conformance.md gives in
// the server's table ("n/a" where the check does not apply to the
// variant or the server does not serve it). On a difference it prints
// the table the document should have.
func TestKit_MatchesDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range kitTargets {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			want, err := docTable(string(doc), target.name)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := conformance.Check(t.Context(), target.start(t))
			if err != nil {
				t.Fatal(err)
			}
			got := resultTable(rep)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results differ from docs/conformance.md, section %q (-doc +got):\n%s\nthe section's table should be:\n%s\nthe run:\n%s",
					target.name, diff, renderTable(got), rep)
			}
		})
	}
}

// resultTable is a report as docs/conformance.md tabulates it: check →
// variant → result, "n/a" for a check not run on a variant.
func resultTable(rep *conformance.Report) map[string]map[conformance.Variant]string {
	out := map[string]map[conformance.Variant]string{}
	for _, c := range conformance.Catalog() {
		out[c.Name] = map[conformance.Variant]string{}
		for _, v := range conformance.Variants() {
			out[c.Name][v] = "n/a"
		}
	}
	for _, r := range rep.Results {
		out[r.Check][r.Variant] = string(r.Status)
	}
	return out
}

// docTable reads the results table under the heading "### name" of doc.
func docTable(doc, name string) (map[string]map[conformance.Variant]string, error) {
	_, section, ok := strings.Cut(doc, "\n### "+name+"\n")
	if !ok {
		return nil, fmt.Errorf("docs/conformance.md has no section %q", name)
	}
	if next := strings.Index(section, "\n### "); next >= 0 {
		section = section[:next]
	}
	var header []conformance.Variant
	out := map[string]map[conformance.Variant]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if header != nil {
				break // the end of the table
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch {
		case cells[0] == "check":
			for _, c := range cells[1:] {
				header = append(header, conformance.Variant(c))
			}
		case strings.HasPrefix(cells[0], "---"):
		default:
			if len(cells) != len(header)+1 {
				return nil, fmt.Errorf("section %q: row %q has %d cells, want %d", name, line, len(cells), len(header)+1)
			}
			out[cells[0]] = map[conformance.Variant]string{}
			for i, v := range header {
				out[cells[0]][v] = cells[i+1]
			}
		}
	}
	return out, nil
}

// renderTable renders a result table as docs/conformance.md writes it.
func renderTable(tab map[string]map[conformance.Variant]string) string {
	var b strings.Builder
	b.WriteString("| check |")
	for _, v := range conformance.Variants() {
		fmt.Fprintf(&b, " %s |", v)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(conformance.Variants())) + "\n")
	for _, c := range conformance.Catalog() {
		fmt.Fprintf(&b, "| %s |", c.Name)
		for _, v := range conformance.Variants() {
			fmt.Fprintf(&b, " %s |", tab[c.Name][v])
		}
		b.WriteString("\n")
	}
	return b.String()
}
