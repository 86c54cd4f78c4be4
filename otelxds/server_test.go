// SPDX-License-Identifier: Apache-2.0

package otelxds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/xdsbackend"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// TestServerOption checks that an xDS-enabled server made with
// otelxds.ServerOption records the server metrics of gRFC A66, as
// grpc-go's plugin does on a grpc.Server, for the RPCs it served.
func TestServerOption(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	bs, err := testutil.WithServerListenerTemplate(ms.Bootstrap(testutil.BootstrapOptions{}), "inbound|%s")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(bs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	b, err := xdsbackend.Start(c, xdsbackend.Options{ServerOptions: []server.Option{
		otelxds.ServerOption(opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	ms.Update("", testutil.Resources{Listeners: []*v3listenerpb.Listener{
		testutil.ServerListener(b.Name("inbound|%s"), b.Address, testutil.ServerFilterChain(testutil.FilterChainOptions{})),
	}})
	if err := b.WaitForMode(ctx, server.ServingModeServing); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(b.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)
	for range 3 {
		if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true)); err != nil {
			t.Fatal(err)
		}
	}

	// A server records an RPC's end once it has sent the response: the
	// client may have it a moment before, so snapshot until all 3 are in.
	var got map[string]string
	for {
		got = map[string]string{}
		var short []string
		for name, ss := range snapshot(t, reader) {
			for _, s := range ss {
				got[name] = s.Unit + " " + s.Attrs
				if n := s.Count; n != 3 && (s.Kind != "sum" || s.Sum != 3) {
					short = append(short, fmt.Sprintf("%s: %d (%s), want 3 RPCs", name, n, s.Kind))
				}
			}
		}
		if len(short) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(strings.Join(short, "; "))
		case <-time.After(10 * time.Millisecond):
		}
	}
	const labels = "grpc.method=grpc.testing.TestService/UnaryCall grpc.status=OK"
	want := map[string]string{
		"grpc.server.call.started":                            "{call} grpc.method=grpc.testing.TestService/UnaryCall",
		"grpc.server.call.duration":                           "s " + labels,
		"grpc.server.call.sent_total_compressed_message_size": "By " + labels,
		"grpc.server.call.rcvd_total_compressed_message_size": "By " + labels,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server metrics (-want +got):\n%s", diff)
	}
}
