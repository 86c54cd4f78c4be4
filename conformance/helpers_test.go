// SPDX-License-Identifier: Apache-2.0

package conformance_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/proxyless/xds/conformance"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// world is a management server's resources for the kit's tests: three
// Listeners l0..l2, each naming RouteConfiguration r<i>, which routes to
// Cluster c<i>, whose ClusterLoadAssignment is c<i>. Change (the kit's
// Config.Change) updates, deletes and restores them and gives the server
// the new resources through update.
type world struct {
	update func(testutil.Resources) error

	// Guarded by mu.
	mu      sync.Mutex
	gen     map[string]int  // "type/name" → generation: each Update adds one
	deleted map[string]bool // "type/name" → deleted
}

func newWorld(update func(testutil.Resources) error) *world {
	return &world{update: update, gen: make(map[string]int), deleted: make(map[string]bool)}
}

const worldSize = 3

// resources returns the resources as they are now.
func (w *world) resources() testutil.Resources {
	w.mu.Lock()
	defer w.mu.Unlock()
	var r testutil.Resources
	for i := range worldSize {
		name := func(p string) string { return fmt.Sprintf("%s%d", p, i) }
		if key := resources.ListenerTypeURL + "/" + name("l"); !w.deleted[key] {
			l := testutil.Listener(name("l"), name("r"))
			l.StatPrefix = fmt.Sprint(w.gen[key])
			r.Listeners = append(r.Listeners, l)
		}
		if key := resources.RouteConfigTypeURL + "/" + name("r"); !w.deleted[key] {
			rc := testutil.RouteConfig(name("r"), "*", name("c"))
			rc.ResponseHeadersToRemove = []string{fmt.Sprintf("x-gen-%d", w.gen[key])}
			r.Routes = append(r.Routes, rc)
		}
		if key := resources.ClusterTypeURL + "/" + name("c"); !w.deleted[key] {
			c := testutil.Cluster(name("c"), "")
			c.AltStatName = fmt.Sprint(w.gen[key])
			r.Clusters = append(r.Clusters, c)
		}
		if key := resources.EndpointsTypeURL + "/" + name("c"); !w.deleted[key] {
			r.Endpoints = append(r.Endpoints, testutil.Endpoints(name("c"), "10.0.0.1", uint32(8000+w.gen[key])))
		}
	}
	return r
}

// change is the kit's Config.Change.
func (w *world) change(_ context.Context, c conformance.Change) error {
	key := c.TypeURL + "/" + c.Name
	w.mu.Lock()
	switch c.Op {
	case conformance.Update:
		w.gen[key]++
	case conformance.Delete:
		w.deleted[key] = true
	case conformance.Restore:
		delete(w.deleted, key)
	}
	w.mu.Unlock()
	return w.update(w.resources())
}

// handlerClient is an http.Client that serves requests with h in
// process, without a network, so that REST-JSON polls work inside a
// testing/synctest bubble.
func handlerClient(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h}}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// inMemoryConfig starts an in-memory testutil server loaded with a world
// and returns the kit's Config for it, every variant included (REST
// through handler, which wraps the server's RESTHandler; nil: the handler
// itself), with Change. It must be called inside the synctest bubble.
func inMemoryConfig(t *testing.T, handler func(http.Handler) http.Handler) (conformance.Config, *testutil.ManagementServer) {
	t.Helper()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	w := newWorld(func(r testutil.Resources) error { return ms.Update("", r) })
	if err := ms.Update("", w.resources()); err != nil {
		t.Fatal(err)
	}
	tr, err := ms.Dialer().Dial(nil, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	h := ms.RESTHandler()
	if handler != nil {
		h = handler(h)
	}
	return conformance.Config{
		Transport:  tr,
		REST:       "http://in-process",
		HTTPClient: handlerClient(h),
		Variants:   conformance.Variants(),
		Change:     w.change,
	}, ms
}
