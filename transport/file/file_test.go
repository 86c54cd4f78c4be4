// SPDX-License-Identifier: Apache-2.0

package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// response returns a DiscoveryResponse holding msgs, of type typeURL.
func response(typeURL string, msgs ...proto.Message) *v3discoverypb.DiscoveryResponse {
	resp := &v3discoverypb.DiscoveryResponse{TypeUrl: typeURL}
	for _, m := range msgs {
		resp.Resources = append(resp.Resources, testutil.MarshalAny(m))
	}
	return resp
}

// encode serializes resp in the format of path's extension.
func encode(t *testing.T, path string, resp *v3discoverypb.DiscoveryResponse) []byte {
	t.Helper()
	var (
		b   []byte
		err error
	)
	switch filepath.Ext(path) {
	case ".json":
		b, err = protojson.Marshal(resp)
	case ".yaml", ".yml":
		if b, err = protojson.Marshal(resp); err == nil {
			b, err = yaml.JSONToYAML(b)
		}
	case ".textpb", ".txtpb":
		b, err = prototext.Marshal(resp)
	case ".pb":
		b, err = proto.Marshal(resp)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replace writes b to path atomically: a hidden temporary file in the same
// directory, renamed over path.
func replace(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func newClient(t *testing.T, path string, opts ...file.Option) *client.Client {
	t.Helper()
	cfg, b, err := file.Bootstrap(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// wantRoute waits for a Listener update naming route.
func wantRoute(ctx context.Context, t *testing.T, w *clienttest.Recorder[*resources.Listener], route string) {
	t.Helper()
	e := w.Want(ctx, t, clienttest.Changed, nil)
	if e.Value.RouteConfigName != route {
		t.Fatalf("Listener routes via %q, want %q", e.Value.RouteConfigName, route)
	}
}

// checkReplaced writes a Listener file at name, of the format of its
// extension, watches it, replaces the file and checks that both versions
// reach the watcher.
func checkReplaced(t *testing.T, name string, opts ...file.Option) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), name)
	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "route-v1"))))
	c := newClient(t, path, opts...)
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	wantRoute(ctx, t, w, "route-v1")
	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "route-v2"))))
	wantRoute(ctx, t, w, "route-v2")
}

// TestFormats checks that each format is read, and that a replacement is
// picked up.
func TestFormats(t *testing.T) {
	for _, ext := range []string{".json", ".yaml", ".yml", ".textpb", ".txtpb", ".pb"} {
		t.Run(ext, func(t *testing.T) { checkReplaced(t, "lds"+ext) })
	}
}

// TestReplacements is the scenario: the file is replaced with v1,
// v2, an invalid resource, a truncated file and a file of another type;
// the watcher sees v1, v2, then keeps v2 with ambient errors; Dump shows
// the invalid one NACKED with its error. A good file afterwards is picked
// up again at once.
func TestReplacements(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "lds.yaml")
	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "route-v1"))))
	c := newClient(t, path)
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	wantRoute(ctx, t, w, "route-v1")

	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "route-v2"))))
	wantRoute(ctx, t, w, "route-v2")

	// An invalid resource: NACKed, v2 kept.
	replace(t, path, encode(t, path, response(listenerType, &v3listenerpb.Listener{Name: "svc"})))
	e := w.Want(ctx, t, clienttest.AmbientError, nil)
	t.Logf("invalid resource: %v", e.Err)
	var found bool
	for _, gc := range c.Dump().GetGenericXdsConfigs() {
		if gc.GetName() != "svc" {
			continue
		}
		found = true
		if gc.GetClientStatus() != v3adminpb.ClientResourceStatus_NACKED || gc.GetErrorState().GetDetails() == "" {
			t.Errorf("Dump of svc: status %v, error state %v; want NACKED with the error", gc.GetClientStatus(), gc.GetErrorState())
		}
		var l v3listenerpb.Listener
		if err := gc.GetXdsConfig().UnmarshalTo(&l); err != nil || !strings.Contains(prototext.Format(&l), "route-v2") {
			t.Errorf("Dump of svc holds %v (%v), want the v2 Listener", &l, err)
		}
	}
	if !found {
		t.Fatal("Dump has no svc")
	}

	// A truncated file: the load fails, v2 kept, connection error.
	good := encode(t, path, response(listenerType, testutil.Listener("svc", "route-v3")))
	replace(t, path, good[:len(good)/2])
	e = w.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
	if !strings.Contains(e.Err.Error(), "lds.yaml") {
		t.Errorf("truncated file: error %v does not name the file", e.Err)
	}
	// One error per distinct failure: the client's retries (after 1 s,
	// then 1.6 s) do not report it again while the file stays as it is.
	w.WantNone(t, 2500*time.Millisecond)

	// A file of another type: the load fails, v2 kept.
	replace(t, path, encode(t, path, response("type.googleapis.com/envoy.config.cluster.v3.Cluster", testutil.Cluster("c", "e"))))
	e = w.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
	if !strings.Contains(e.Err.Error(), "type_url changed") {
		t.Errorf("file of another type: error %v, want one saying the type changed", e.Err)
	}
	if got := c.ResourceVersion(resources.ListenerType, "svc"); got == "" {
		t.Error("svc lost its cached version")
	}

	// A good file again: picked up (after the client's backoff of the
	// second consecutive failure at most, 1.6 s ± 20 %).
	replace(t, path, good)
	wantRoute(ctx, t, w, "route-v3")
}

// TestRecoveryWithin2s checks that a good file replacing a bad one is
// picked up within 2 s: the client's retry after the reported error finds
// the same error and waits for the next change instead of failing again,
// so the fix is seen as soon as it is written.
func TestRecoveryWithin2s(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "lds.json")
	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "route-v1"))))
	c := newClient(t, path)
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	wantRoute(ctx, t, w, "route-v1")

	replace(t, path, []byte("{not json"))
	w.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
	// Past the client's retry (1.6 s ± 20 % after the report), which
	// meets the same error: not reported again.
	w.WantNone(t, 2500*time.Millisecond)

	start := time.Now()
	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "route-v2"))))
	wantRoute(ctx, t, w, "route-v2")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("recovery took %v, want < 2s", d)
	}
}

// TestDirectory checks a watched directory: one file per type, the full
// chain, and a replacement of one file.
func TestDirectory(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	ch := testutil.Chain(testutil.ChainOptions{})
	replace(t, filepath.Join(dir, "lds.json"), encode(t, "x.json", response(listenerType, ch.Listeners[0])))
	replace(t, filepath.Join(dir, "rds.yaml"), encode(t, "x.yaml", response("type.googleapis.com/envoy.config.route.v3.RouteConfiguration", ch.Routes[0])))
	replace(t, filepath.Join(dir, "cds.textpb"), encode(t, "x.textpb", response("type.googleapis.com/envoy.config.cluster.v3.Cluster", ch.Clusters[0])))
	edsPath := filepath.Join(dir, "eds.pb")
	replace(t, edsPath, encode(t, "x.pb", response("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", ch.Endpoints[0])))
	if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte("skipped"), 0o600); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, dir)
	w := clienttest.WatchChain(t, c, "svc")
	w.WantChain(ctx, t)

	replace(t, edsPath, encode(t, "x.pb", response("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", testutil.Endpoints("eds-svc", "127.0.0.1", 9090))))
	w.WantEndpoint(ctx, t, "127.0.0.1:9090")
	w.L.WantNone(t, 50*time.Millisecond) // other types unchanged: not resent
}

// TestPolling checks the polling fallback.
func TestPolling(t *testing.T) {
	checkReplaced(t, "lds.json", file.WithPolling(20*time.Millisecond))
}

// TestMissingFile checks that a source that does not exist is a
// connection error to watchers without a value.
func TestMissingFile(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t, filepath.Join(t.TempDir(), "missing.json"))
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
	if !errors.Is(e.Err, os.ErrNotExist) && !strings.Contains(e.Err.Error(), "missing.json") {
		t.Errorf("error %v does not name the file", e.Err)
	}
}

// TestDeltaUnsupported checks the error for delta.
func TestDeltaUnsupported(t *testing.T) {
	ctx := testContext(t)
	cfg, b, err := file.Bootstrap(filepath.Join(t.TempDir(), "x.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(b), client.WithDelta())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.Want(ctx, t, clienttest.ResourceError, transport.ErrDeltaUnsupported)
}
