// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/transport/rest"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestTransportBuilder checks that Client.TransportBuilder returns the
// builder given to WithTransportBuilder, and by default the client's own
// grpctransport.Builder, one per client.
func TestTransportBuilder(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	b := ms.TransportBuilder()
	if got := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(b)).TransportBuilder(); got != b {
		t.Errorf("TransportBuilder() = %v; want the builder given to WithTransportBuilder", got)
	}
	tcp := testutil.NewManagementServer(t, testutil.ServerOptions{})
	c1, c2 := newClient(t, tcp, testutil.BootstrapOptions{}), newClient(t, tcp, testutil.BootstrapOptions{})
	g1, ok := c1.TransportBuilder().(*grpctransport.Builder)
	if !ok {
		t.Fatalf("default TransportBuilder() = %T; want *grpctransport.Builder", c1.TransportBuilder())
	}
	if g1 == c2.TransportBuilder() {
		t.Errorf("two clients share a default TransportBuilder; want one each")
	}
}

// newClientOf returns a client, closed at the end of the test, of the one
// management server serverURI (node "test-node", listener template "%s"),
// reached through b.
func newClientOf(t *testing.T, serverURI string, b transport.Builder, opts ...client.Option) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "test-node"}
	}`, serverURI))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, append([]client.Option{client.WithTransportBuilder(b)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// writeListenerFile writes a DiscoveryResponse holding the Listener svc
// to dir/lds.json, a filesystem source.
func writeListenerFile(t *testing.T, dir string) {
	t.Helper()
	b, err := protojson.Marshal(&v3discoverypb.DiscoveryResponse{
		TypeUrl:   resources.ListenerTypeURL,
		Resources: []*anypb.Any{testutil.MarshalAny(testutil.Listener("svc", "route-svc"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lds.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// loggingBuilder is the decorator a user writes to log the streams of
// whatever transport they use: it wraps any transport.Builder, and its
// transport embeds the inner one.
type loggingBuilder struct {
	transport.Builder

	mu     sync.Mutex
	opened []string // the name of every stream opened
	specs  []transport.StreamSpec
}

func (b *loggingBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.Builder.Build(sc, o)
	if err != nil {
		return nil, err
	}
	return loggingXDS{XDS: x, b: b}, nil
}

func (b *loggingBuilder) streams() ([]string, []transport.StreamSpec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.opened), slices.Clone(b.specs)
}

type loggingXDS struct {
	transport.XDS
	b *loggingBuilder
}

func (x loggingXDS) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	x.b.mu.Lock()
	x.b.opened = append(x.b.opened, x.StreamName(spec))
	x.b.specs = append(x.b.specs, spec)
	x.b.mu.Unlock()
	return x.XDS.NewXDSStream(ctx, spec)
}

// TestDecoratedTransport_KeepsItsLayout checks that a transport wrapped in
// a decorator (a logging wrapper) is still used as itself: REST-JSON
// polling, a filesystem source and per-type gRPC streams get their
// Listener over one stream per type, and no ADS stream is opened. The old
// client upgraded a transport to transport.XDS by type assertion, so the
// wrapper hid it: REST and file fell back to ADS, whose every stream
// failed ("has no gRPC streams"), and per-type switched silently to one
// ADS stream.
func TestDecoratedTransport_KeepsItsLayout(t *testing.T) {
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	hs := httptest.NewServer(ms.RESTHandler())
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	writeListenerFile(t, dir)
	grpcStreams := &clienttest.Dialer{Inner: grpctransport.NewBuilder()}

	for _, tc := range []struct {
		name  string
		uri   string
		inner transport.Builder
		want  string // the name of the Listener stream
	}{
		{"REST", hs.URL, rest.NewBuilder(), "REST-JSON polling of /v3/discovery:listeners"},
		{"file", "file://" + filepath.ToSlash(dir), file.NewBuilder(), "filesystem subscription of " + resources.ListenerTypeURL},
		{"per-type", ms.Address(), pertype.NewBuilder(grpcStreams), "ListenerDiscoveryService.StreamListeners stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			lb := &loggingBuilder{Builder: tc.inner}
			c := newClientOf(t, tc.uri, lb)
			w := newRecorder[*resources.Listener]()
			defer client.Watch(c, resources.ListenerType, "svc", w)()
			w.wantKind(ctx, t, changed, nil)
			names, specs := lb.streams()
			if len(names) == 0 || names[0] != tc.want {
				t.Errorf("streams opened through the decorator: %q, want the first %q", names, tc.want)
			}
			for _, s := range specs {
				if s.TypeURL == "" {
					t.Errorf("an aggregated (ADS) stream was opened through the decorator: %+v", s)
				}
			}
		})
	}
	if m := grpcStreams.Methods(); slices.Contains(m, transport.ADSMethod) || !slices.Contains(m, "/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners") {
		t.Errorf("gRPC streams of the per-type transport: %v, want StreamListeners and no ADS", m)
	}
}

// TestConnectionError_NamesTheStream checks that the errors watchers get
// and the client's logs name the stream that failed as its transport
// calls it, with the server: the ADS stream, a per-type stream, a
// REST-JSON poll, a filesystem subscription. The old client said "ADS
// stream to http://…" for every transport.
func TestConnectionError_NamesTheStream(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lds.json"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		uri   string
		b     transport.Builder
		want  string
		noADS bool
	}{
		{"ADS", "127.0.0.1:1", grpctransport.NewBuilder(), "ADS stream, server 127.0.0.1:1: ", false},
		{"per-type", "127.0.0.1:1", pertype.NewBuilder(grpctransport.NewBuilder()), "ListenerDiscoveryService.StreamListeners stream, server 127.0.0.1:1: ", true},
		{"REST", "http://127.0.0.1:1", rest.NewBuilder(), "REST-JSON polling of /v3/discovery:listeners, server http://127.0.0.1:1: ", true},
		{"file", "file://" + filepath.ToSlash(dir), file.NewBuilder(), "filesystem subscription of " + resources.ListenerTypeURL + ", server file://", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			logs := &testutil.LogBuffer{}
			c := newClientOf(t, tc.uri, tc.b, client.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
			w := newRecorder[*resources.Listener]()
			defer client.Watch(c, resources.ListenerType, "svc", w)()
			e := w.wantKind(ctx, t, resourceError, client.ErrConnection)
			if !strings.Contains(e.err.Error(), tc.want) {
				t.Errorf("error %q does not name the stream as %q", e.err, tc.want)
			}
			streamName, _, _ := strings.Cut(tc.want, ",")
			if !strings.Contains(logs.String(), "stream="+fmt.Sprintf("%q", streamName)) {
				t.Errorf("logs do not name the stream %q:\n%s", streamName, logs)
			}
			if tc.noADS && (strings.Contains(e.err.Error(), "ADS") || strings.Contains(logs.String(), "ADS")) {
				t.Errorf("a %s transport's error or logs speak of ADS: %q\n%s", tc.name, e.err, logs)
			}
		})
	}
}

// lineWriter is the output of a logger: it calls found once, with the
// line, when a line containing every one of want is written.
type lineWriter struct {
	want  []string
	found chan string // cap 1

	mu   sync.Mutex
	all  strings.Builder
	done bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	if w.done {
		return len(p), nil
	}
	for _, s := range w.want {
		if !strings.Contains(string(p), s) {
			return len(p), nil
		}
	}
	w.done = true
	w.found <- string(p)
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// TestREST_LogsThroughTheClient checks that a transport given no logger
// of its own logs through the client's (client.WithLogger, with the
// server's server_uri): REST-JSON polling's Debug line for a poll answered
// 304 Not Modified. The old transport had no logger.
func TestREST_LogsThroughTheClient(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
	hs := httptest.NewServer(ms.RESTHandler())
	t.Cleanup(hs.Close)
	logs := &lineWriter{want: []string{"304 Not Modified", "server_uri=" + hs.URL}, found: make(chan string, 1)}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newClientOf(t, hs.URL, rest.NewBuilder(rest.WithInterval(10*time.Millisecond)), client.WithLogger(logger))
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	w.wantKind(ctx, t, changed, nil)
	select {
	case <-logs.found:
	case <-ctx.Done():
		t.Fatalf("no 304 poll logged through the client's logger:\n%s", logs)
	}
}
