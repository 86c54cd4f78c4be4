// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// The fallback tests (gRFC A71, R-15) run in fake time against two
// in-memory management servers, "primary" and "fallback", listed in that
// order in the bootstrap's xds_servers.

// uriBuilder builds transports by server_uri.
type uriBuilder map[string]transport.Builder

func (b uriBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	tb, ok := b[sc.ServerURI]
	if !ok {
		return nil, fmt.Errorf("no test server %q", sc.ServerURI)
	}
	return tb.Build(sc, o)
}

// fallbackPair starts the two servers (snapshot mode), with primaryDown
// making the primary refuse streams, and a client of both (delta when
// delta is set).
func fallbackPair(t *testing.T, primaryDown, delta bool) (primary, fallback *testutil.ManagementServer, c *client.Client) {
	t.Helper()
	return fallbackPairWith(t, testutil.ServerOptions{InMemory: true}, primaryDown, delta)
}

// fallbackPairWith is fallbackPair with servers made with opts, and a
// client with copts.
func fallbackPairWith(t *testing.T, opts testutil.ServerOptions, primaryDown, delta bool, copts ...client.Option) (primary, fallback *testutil.ManagementServer, c *client.Client) {
	t.Helper()
	primary = testutil.NewManagementServer(t, opts)
	fallback = testutil.NewManagementServer(t, opts)
	if primaryDown {
		primary.RejectStreams(errors.New("primary down"))
	}
	features := ""
	if delta {
		features = `, "server_features": ["delta_ads"]`
	}
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{
		"xds_servers": [
			{"server_uri": "primary", "channel_creds": [{"type": "insecure"}]%[1]s},
			{"server_uri": "fallback", "channel_creds": [{"type": "insecure"}]%[1]s}
		],
		"node": {"id": "test-node"}
	}`, features)))
	if err != nil {
		t.Fatal(err)
	}
	c, err = client.New(cfg, append([]client.Option{client.WithTransportBuilder(uriBuilder{
		"primary":  primary.TransportBuilder(),
		"fallback": fallback.TransportBuilder(),
	})}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return primary, fallback, c
}

// clusters is a snapshot of clusters whose EDS service name says which
// server sent them.
func clusters(server string, names ...string) testutil.Resources {
	var r testutil.Resources
	for _, n := range names {
		r.Clusters = append(r.Clusters, testutil.Cluster(n, server))
	}
	return r
}

// wantFrom waits for the next event of w, which must be a value sent by
// server (see clusters).
func wantFrom(t *testing.T, w *recorder[*resources.Cluster], server string) {
	t.Helper()
	e := w.wantKind(testContext(t), t, changed, nil)
	if got := e.value.EDSServiceName; got != server {
		t.Fatalf("cluster %q came from %q, want %q", e.value.Name, got, server)
	}
}

func wantOrigin(t *testing.T, c *client.Client, name, server string) {
	t.Helper()
	o, ok := c.ResourceOrigin(resources.ClusterType, name)
	if !ok || o.ServerURI != server {
		t.Fatalf("ResourceOrigin(%q) = %+v, %v; want server %q", name, o, ok, server)
	}
}

// TestFallback_PrimaryDownAtStartThenRevert checks, SotW
// and delta: with the primary down at start, the fallback's data arrives
// within 5 s without any connection error reaching the watchers; a
// resource first watched during fallback is served too; once the primary
// comes up, the client reverts within 10 s, asks the primary for every
// watched resource, and closes the fallback stream within 3 s of the
// revert.
func TestFallback_PrimaryDownAtStartThenRevert(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			synctestTest(t, func(t *testing.T) {
				ctx := testContext(t)
				primary, fallback, c := fallbackPair(t, true, delta)
				primary.Update("", clusters("primary", "a", "b"))
				fallback.Update("", clusters("fallback", "a", "b"))
				start := time.Now()
				wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, "a", wa)()
				wantFrom(t, wa, "fallback")
				if d := time.Since(start); d > 5*time.Second {
					t.Fatalf("fallback data after %v, want within 5s", d)
				}
				wantOrigin(t, c, "a", "fallback")
				defer client.Watch(c, resources.ClusterType, "b", wb)()
				wantFrom(t, wb, "fallback")

				time.Sleep(time.Minute) // the primary's backoff grows
				primary.RejectStreams(nil)
				up := time.Now()
				wantFrom(t, wa, "primary")
				wantFrom(t, wb, "primary")
				if d := time.Since(up); d > 10*time.Second {
					t.Fatalf("reverted %v after the primary came up, want within 10s", d)
				}
				reverted := time.Now()
				wantOrigin(t, c, "b", "primary")
				if err := fallback.WaitForOpenStreams(ctx, 0); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(reverted); d > 3*time.Second {
					t.Fatalf("fallback stream closed %v after the revert, want within 3s", d)
				}
				// The primary was asked for both names, including "b",
				// first watched during fallback.
				var asked []string
				for _, r := range primary.Requests() {
					if r.Delta != nil {
						asked = append(asked, r.Delta.GetResourceNamesSubscribe()...)
					} else {
						asked = append(asked, r.Req.GetResourceNames()...)
					}
				}
				if !slices.Contains(asked, "a") || !slices.Contains(asked, "b") {
					t.Fatalf("primary was asked for %v, want a and b", asked)
				}
				wa.wantNone(t, time.Second)
			})
		})
	}
}

// TestFallback_NotWhenCached checks gRFC A71: when the primary fails with
// every watched resource cached, the client does not fall back; watchers
// get an ambient connection error, and the cached values stay.
func TestFallback_NotWhenCached(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		primary, fallback, c := fallbackPair(t, false, false)
		primary.Update("", clusters("primary", "a"))
		fallback.Update("", clusters("fallback", "a"))
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		wantFrom(t, w, "primary")

		primary.RejectStreams(errors.New("primary down"))
		primary.BreakStreams()
		w.wantKind(ctx, t, ambientError, client.ErrConnection)
		time.Sleep(time.Minute)
		if n := len(fallback.Requests()); n != 0 {
			t.Fatalf("the fallback server got %d requests, want none", n)
		}
		wantOrigin(t, c, "a", "primary")
	})
}

// TestFallback_BothDown checks: with both servers down,
// watchers get a connection error once per failed stream of the last
// server, not of the primary, with backoff in between.
func TestFallback_BothDown(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		primary, fallback, c := fallbackPair(t, true, false)
		fallback.RejectStreams(errors.New("fallback down"))
		_ = primary
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", w)()
		var at []time.Time
		for range 4 {
			e := w.wantKind(ctx, t, resourceError, client.ErrConnection)
			if !errors.Is(e.err, client.ErrConnection) || !strings.Contains(e.err.Error(), "fallback") {
				t.Fatalf("error = %v, want the fallback server's connection error", e.err)
			}
			at = append(at, time.Now())
		}
		for i := 1; i < len(at); i++ {
			if at[i].Sub(at[i-1]) < 500*time.Millisecond {
				t.Fatalf("connection errors at %v: less than the backoff apart", at)
			}
		}
	})
}

// TestFallback_AuthorityServers checks that an authority's own server list
// falls back on its own (gRFC A71 "per authority"): an xdstp resource of
// the authority is served by the authority's second server while its first
// is down, and the top-level server is not involved.
func TestFallback_AuthorityServers(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		top := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		primary := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		fallback := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
		primary.RejectStreams(errors.New("primary down"))
		const name = "xdstp://auth/envoy.config.cluster.v3.Cluster/c"
		fallback.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster(name, "fallback")}})
		cfg, err := bootstrap.Parse([]byte(`{
			"xds_servers": [{"server_uri": "top", "channel_creds": [{"type": "insecure"}]}],
			"authorities": {"auth": {"xds_servers": [
				{"server_uri": "primary", "channel_creds": [{"type": "insecure"}]},
				{"server_uri": "fallback", "channel_creds": [{"type": "insecure"}]}
			]}},
			"node": {"id": "test-node"}
		}`))
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg, client.WithTransportBuilder(uriBuilder{
			"top": top.TransportBuilder(), "primary": primary.TransportBuilder(), "fallback": fallback.TransportBuilder(),
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w := newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, name, w)()
		wantFrom(t, w, "fallback")
		wantOrigin(t, c, name, "fallback")
		if n := len(top.Requests()); n != 0 {
			t.Fatalf("the top-level server got %d requests, want none", n)
		}
	})
}

// TestFallback_DeltaOffersOnlyOwnVersions checks that, in delta, the first
// request to the fallback server does not offer the versions of resources
// cached from the primary in initial_resource_versions: versions are each
// server's own, and the fallback must send what it has.
func TestFallback_DeltaOffersOnlyOwnVersions(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ctx := testContext(t)
		primary, fallback, c := fallbackPairWith(t, testutil.ServerOptions{InMemory: true, Manual: true}, false, true)
		wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		wantDeltaRequest(t, primary, true, sub(cds, "a"))
		nonce := sendDelta(t, primary, deltaResponse(cds, nil, deltaResource{name: "a", version: "1", msg: testutil.Cluster("a", "primary")}))
		wantDeltaRequest(t, primary, false, ack(cds, nonce))
		wantFrom(t, wa, "primary")
		defer client.Watch(c, resources.ClusterType, "b", wb)()
		wantDeltaRequest(t, primary, false, sub(cds, "b"))

		primary.RejectStreams(errors.New("primary down"))
		primary.BreakStreams()
		r, err := fallback.NextRequest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Delta.GetInitialResourceVersions(); len(got) != 0 || !slices.Equal(r.Delta.GetResourceNamesSubscribe(), []string{"a", "b"}) {
			t.Fatalf("first request to the fallback = %v, want a and b subscribed and no initial_resource_versions", r.Delta)
		}
	})
}
