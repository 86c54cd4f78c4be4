// SPDX-License-Identifier: Apache-2.0

package otelxds_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	experimental "google.golang.org/grpc/experimental/opentelemetry"
	"google.golang.org/grpc/stats/opentelemetry"

	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/testutil"
)

// TestDialOption_Traces checks that with TraceOptions DialOption makes
// the spans grpc-go's plugin makes (names, kinds, attribute keys, events)
// for the same RPCs: grpc-go puts no xDS attribute on them.
func TestDialOption_Traces(t *testing.T) {
	b, err := testutil.StartBackend(testutil.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	spans := func(dial func(opentelemetry.Options) grpc.DialOption) []string {
		ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
		defer cancel()
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		cc, err := grpc.NewClient(b.Address, grpc.WithTransportCredentials(insecure.NewCredentials()), dial(opentelemetry.Options{
			TraceOptions: experimental.TraceOptions{TracerProvider: tp, TextMapPropagator: propagation.TraceContext{}},
		}))
		if err != nil {
			t.Fatal(err)
		}
		calls(ctx, t, cc)
		cc.Close()
		var out []string
		for _, s := range exp.GetSpans() {
			line := s.Name + " " + s.SpanKind.String() + " " + s.Status.Code.String()
			for _, a := range s.Attributes {
				line += " " + string(a.Key)
			}
			for _, e := range s.Events {
				if e.Name == "Delayed LB pick complete" {
					// Timing, not the plugin: only an RPC that waited
					// for the channel to connect has it.
					continue
				}
				line += " event:" + e.Name
			}
			out = append(out, line)
		}
		slices.Sort(out)
		return out
	}
	want := spans(opentelemetry.DialOption)
	if len(want) == 0 {
		t.Fatal("grpc-go's plugin made no span")
	}
	if diff := cmp.Diff(want, spans(otelxds.DialOption)); diff != "" {
		t.Errorf("spans (-grpc-go's plugin +otelxds):\n%s", diff)
	}
}
