// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestPersistence_ServedWhenNoServerReachable checks last-known-good
// persistence end to end, SotW and delta, in fake time: a client persists
// what it accepts; a second client, started while the management server
// is down, serves the persisted value once the persistence timeout passed
// (ResourceChanged, then an AmbientError wrapping ErrStale; Dump and
// ResourceOrigin say it is stale); when the server comes back, its value
// replaces the stale one and is delivered although equal.
func TestPersistence_ServedWhenNoServerReachable(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ctx := testContext(t)
				dir := t.TempDir()
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
				ms.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "eds-a")}})
				opts := []client.Option{client.WithPersistence(dir), client.WithPersistenceTimeout(3 * time.Second)}
				if delta {
					opts = append(opts, client.WithDelta())
				}

				c1 := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
				w1 := newRecorder[*resources.Cluster]()
				cancel1 := client.Watch(c1, resources.ClusterType, "a", w1)
				w1.wantKind(ctx, t, changed, nil)
				cancel1()
				c1.Close() // writes what is pending

				ms.RejectStreams(errors.New("down"))
				c2 := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
				start := time.Now()
				w := newRecorder[*resources.Cluster]()
				defer client.Watch(c2, resources.ClusterType, "a", w)()
				var e event[*resources.Cluster]
				for e = w.next(ctx, t); errors.Is(e.err, client.ErrConnection); e = w.next(ctx, t) {
				}
				if e.kind != changed || e.value.EDSServiceName != "eds-a" {
					t.Fatalf("event = %v, want the persisted cluster", e)
				}
				if d := time.Since(start); d != 3*time.Second {
					t.Fatalf("persisted value served after %v, want the 3s timeout", d)
				}
				w.wantKind(ctx, t, ambientError, client.ErrStale)
				if o, ok := c2.ResourceOrigin(resources.ClusterType, "a"); !ok || !o.Stale || o.ServerURI != testutil.InMemoryAddress {
					t.Fatalf("ResourceOrigin = %+v, %v; want stale, from %s", o, ok, testutil.InMemoryAddress)
				}
				g := dumpEntry(c2, resources.ClusterTypeURL, "a")
				if g.GetClientStatus() != v3adminpb.ClientResourceStatus_ACKED || g.GetXdsConfig() == nil || !strings.Contains(g.GetErrorState().GetDetails(), "stale") {
					t.Fatalf("Dump entry = %v, want ACKED with the value and a stale error_state", g)
				}

				ms.RejectStreams(nil)
				for e = w.next(ctx, t); e.kind != changed; e = w.next(ctx, t) {
				}
				if o, _ := c2.ResourceOrigin(resources.ClusterType, "a"); o.Stale {
					t.Fatalf("ResourceOrigin = %+v after the server sent the resource, want not stale", o)
				}
				if g := dumpEntry(c2, resources.ClusterTypeURL, "a"); g.GetErrorState() != nil {
					t.Fatalf("Dump entry = %v, want no error_state", g)
				}
			})
		})
	}
}

// TestPersistence_NotServedWhenReachable checks that a server that answers
// within the timeout means persisted values are not used, even for a
// resource the server does not have (the does-not-exist timer decides).
func TestPersistence_NotServedWhenReachable(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := newMemStore()
		store.Save(client.PersistedResource{ServerURI: testutil.InMemoryAddress, TypeURL: resources.ClusterTypeURL, Name: "gone",
			Version: "1", Resource: testutil.MarshalAny(testutil.Cluster("gone", ""))})
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "")}})
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithStore(store), client.WithPersistenceTimeout(time.Second))
		wa, wg := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		defer client.Watch(c, resources.ClusterType, "gone", wg)()
		wa.wantKind(ctx, t, changed, nil)
		wg.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	})
}

// TestPersistence_MisnamedRecordNotServed checks that a stored value whose
// resource is named otherwise than the name it is stored under (a
// tampered or mixed-up store) is not served: it is skipped with a warning
// naming both names, and a correctly named one next to it is served. On
// the old client the resource named "b" was served to the watchers of "a".
func TestPersistence_MisnamedRecordNotServed(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		store := newMemStore()
		store.Save(client.PersistedResource{ServerURI: testutil.InMemoryAddress, TypeURL: resources.ClusterTypeURL, Name: "a",
			Version: "1", Resource: testutil.MarshalAny(testutil.Cluster("b", "eds-b"))})
		store.Save(client.PersistedResource{ServerURI: testutil.InMemoryAddress, TypeURL: resources.ClusterTypeURL, Name: "c",
			Version: "1", Resource: testutil.MarshalAny(testutil.Cluster("c", "eds-c"))})
		var logs testutil.LogBuffer
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		ms.RejectStreams(errors.New("down"))
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithStore(store), client.WithPersistenceTimeout(time.Second),
			client.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		wa, wc := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		defer client.Watch(c, resources.ClusterType, "c", wc)()
		var e event[*resources.Cluster]
		for e = wc.next(ctx, t); errors.Is(e.err, client.ErrConnection); e = wc.next(ctx, t) {
		}
		if e.kind != changed || e.value.Name != "c" {
			t.Fatalf("c: event %v, want its persisted value", e)
		}
		time.Sleep(time.Minute) // fake time
		for len(wa.events) > 0 {
			if e := <-wa.events; e.kind == changed {
				t.Fatalf("a: served %v, stored under another name", e.value.Name)
			}
		}
		if got := logs.String(); !strings.Contains(got, `named \"b\", not \"a\"`) {
			t.Fatalf("log %q does not say the stored resource is misnamed", got)
		}
	})
}

// TestPersistence_ServedToWatchAll checks that persisted values reach a
// WatchAll (and so a TYPE/* of xdsctl) as they reach a watch by name: a
// client persists what its wildcard received; a second one, started while
// the server is down, serves every stored resource of the type to its
// WatchAll after the persistence timeout, each with an AmbientError
// wrapping ErrStale, whether the WatchAll was made before the timeout or
// after; the server's answer replaces them, deleting (SotW Cluster) what
// it no longer has. On the old client a WatchAll got nothing.
func TestPersistence_ServedToWatchAll(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched-before-timeout", true: "watched-after-timeout"}[late], func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ctx := testContext(t)
				dir := t.TempDir()
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
				ms.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "eds-a"), testutil.Cluster("b", "eds-b")}})
				opts := []client.Option{client.WithPersistence(dir), client.WithPersistenceTimeout(3 * time.Second)}

				c1 := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
				w1 := newRecorder[*resources.Cluster]()
				cancel1 := client.WatchAll(c1, resources.ClusterType, w1)
				w1.wantKind(ctx, t, changed, nil)
				w1.wantKind(ctx, t, changed, nil)
				cancel1()
				c1.Close()

				ms.RejectStreams(errors.New("down"))
				c2 := newClient(t, ms, testutil.BootstrapOptions{}, opts...)
				if late {
					time.Sleep(5 * time.Second) // fake time: past the persistence timeout
				}
				w := newRecorder[*resources.Cluster]()
				defer client.WatchAll(c2, resources.ClusterType, w)()
				got := map[string]bool{}
				stale := 0
				for len(got) < 2 || stale < 2 {
					e := w.next(ctx, t)
					switch {
					case e.kind == changed:
						got[e.value.Name] = true
					case errors.Is(e.err, client.ErrStale):
						stale++
					case !errors.Is(e.err, client.ErrConnection):
						t.Fatalf("WatchAll event %v, want the persisted clusters", e)
					}
				}
				if !got["a"] || !got["b"] {
					t.Fatalf("WatchAll got %v, want a and b", got)
				}
				if o, ok := c2.ResourceOrigin(resources.ClusterType, "a"); !ok || !o.Stale {
					t.Fatalf("ResourceOrigin(a) = %+v, %v; want stale", o, ok)
				}

				ms.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "eds-a")}})
				ms.RejectStreams(nil)
				for {
					e := w.next(ctx, t)
					if e.kind == resourceError && errors.Is(e.err, client.ErrResourceNotFound) && strings.Contains(e.err.Error(), `"b"`) {
						break
					}
				}
				if o, _ := c2.ResourceOrigin(resources.ClusterType, "a"); o.Stale {
					t.Fatalf("ResourceOrigin(a) = %+v after the server answered, want not stale", o)
				}
			})
		})
	}
}

// TestPersistence_SavesAndDeletes checks what is written: each accepted
// value, keyed by server, type and name, with its version; its deletion
// when the server deletes the resource.
func TestPersistence_SavesAndDeletes(t *testing.T) {
	ctx := testContext(t)
	store := newMemStore()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Resources{Version: "1", Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", ""), testutil.Cluster("b", "")}})
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithStore(store))
	wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, "a", wa)()
	defer client.Watch(c, resources.ClusterType, "b", wb)()
	wa.wantKind(ctx, t, changed, nil)
	wb.wantKind(ctx, t, changed, nil)
	store.waitFor(t, func(m map[string]client.PersistedResource) bool { return len(m) == 2 })
	r := store.get(ms.Address(), resources.ClusterTypeURL, "a")
	if r == nil || r.Version != "1" || !proto.Equal(r.Resource, testutil.MarshalAny(testutil.Cluster("a", ""))) {
		t.Fatalf("stored a = %+v, want version 1 and the cluster", r)
	}
	ms.Update("", testutil.Resources{Version: "2", Clusters: []*v3clusterpb.Cluster{testutil.Cluster("a", "")}})
	wb.wantKind(ctx, t, resourceError, client.ErrResourceNotFound)
	store.waitFor(t, func(m map[string]client.PersistedResource) bool { return len(m) == 1 })
	if store.get(ms.Address(), resources.ClusterTypeURL, "b") != nil {
		t.Fatal("deleted cluster b is still stored")
	}
}

// TestDirStore_InterruptedWrites checks DirStore against what a crash can
// leave: a temporary file of an interrupted Save (the old value stays
// readable, nothing is mis-read), a truncated file, a corrupt file and a
// foreign file are skipped with a warning each; Delete removes; nothing
// panics.
func TestDirStore_InterruptedWrites(t *testing.T) {
	dir := t.TempDir()
	var logs testutil.LogBuffer
	s := client.DirStore(dir, client.WithDirStoreLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	rec := func(name, version string) client.PersistedResource {
		return client.PersistedResource{ServerURI: "xds.example.com:443", TypeURL: resources.ClusterTypeURL, Name: name,
			Version: version, Resource: testutil.MarshalAny(testutil.Cluster(name, "")), Updated: time.Unix(1700000000, 0).UTC()}
	}
	for _, r := range []client.PersistedResource{rec("a", "1"), rec("b", "1"), rec("c", "1")} {
		if err := s.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	paths := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		paths[n] = client.DirStorePath(s, "xds.example.com:443", resources.ClusterTypeURL, n)
		if _, err := os.Stat(paths[n]); err != nil {
			t.Fatalf("stored file of %s: %v", n, err)
		}
	}
	// A crash during a Save of a new version of a: the temporary file is
	// written halfway, never renamed.
	full, _ := os.ReadFile(paths["a"])
	if err := os.WriteFile(filepath.Join(dir, ".tmp-123"), full[:len(full)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	// b truncated, c with a flipped byte, and a foreign file.
	bb, _ := os.ReadFile(paths["b"])
	os.WriteFile(paths["b"], bb[:len(bb)-3], 0o600)
	cb, _ := os.ReadFile(paths["c"])
	cb[len(cb)-1] ^= 0xff
	os.WriteFile(paths["c"], cb, 0o600)
	os.WriteFile(filepath.Join(dir, "junk.xds"), []byte("XDS"), 0o600)

	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "a" || got[0].Version != "1" || !got[0].Updated.Equal(rec("a", "1").Updated) ||
		!proto.Equal(got[0].Resource, rec("a", "1").Resource) {
		t.Fatalf("Load() = %+v, want only a, version 1, intact", got)
	}
	for _, want := range []string{"interrupted write", "checksum mismatch", "truncated or not a persisted resource"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks a warning %q", logs.String(), want)
		}
	}
	if err := s.Delete("xds.example.com:443", resources.ClusterTypeURL, "a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(); len(got) != 0 {
		t.Fatalf("Load() after Delete = %+v, want nothing", got)
	}
}

// memStore is an in-memory client.Store.
type memStore struct {
	mu      sync.Mutex
	m       map[string]client.PersistedResource
	changed chan struct{}
}

func newMemStore() *memStore {
	return &memStore{m: map[string]client.PersistedResource{}, changed: make(chan struct{}, 100)}
}

func memKey(server, typeURL, name string) string { return server + "|" + typeURL + "|" + name }

func (s *memStore) Save(r client.PersistedResource) error {
	s.mu.Lock()
	s.m[memKey(r.ServerURI, r.TypeURL, r.Name)] = r
	s.mu.Unlock()
	s.changed <- struct{}{}
	return nil
}

func (s *memStore) Delete(server, typeURL, name string) error {
	s.mu.Lock()
	delete(s.m, memKey(server, typeURL, name))
	s.mu.Unlock()
	s.changed <- struct{}{}
	return nil
}

func (s *memStore) Load() ([]client.PersistedResource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []client.PersistedResource
	for _, r := range s.m {
		out = append(out, r)
	}
	return out, nil
}

func (s *memStore) get(server, typeURL, name string) *client.PersistedResource {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[memKey(server, typeURL, name)]; ok {
		return &r
	}
	return nil
}

func (s *memStore) waitFor(t *testing.T, cond func(map[string]client.PersistedResource) bool) {
	t.Helper()
	ctx := testContext(t)
	for {
		s.mu.Lock()
		ok := cond(s.m)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			t.Fatal("timed out waiting for the store")
		}
	}
}
