// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestOutlierDetection_SideBySide_GRPCGo serves one go-control-plane
// configuration, a cluster of three endpoints with failure percentage
// ejection every second (gRFC A50), to this library's channel and to
// grpc-go's xDS channel, one endpoint failing every RPC, and checks for
// both, RPC by RPC from each channel's own clock:
//   - after the second interval, fewer than 2 % of RPCs reach (and fail
//     on) the failing endpoint;
//   - once it is healthy, it gets RPCs again after its ejection time
//     (base_ejection_time 5s, from its ejection), within 2 intervals more.
func TestOutlierDetection_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const interval, base = time.Second, 5 * time.Second
	a, b := startFlakyServer(t, "A", false, false), startFlakyServer(t, "B", false, false)
	c := startFlakyServer(t, "C", false, true)
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{a.port, b.port, c.port}})
	cl := testutil.Cluster("cluster-svc", "eds-svc")
	cl.OutlierDetection = &v3clusterpb.OutlierDetection{
		Interval:                       durationpb.New(interval),
		BaseEjectionTime:               durationpb.New(base),
		MaxEjectionPercent:             wrapperspb.UInt32(50),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(3),
		FailurePercentageRequestVolume: wrapperspb.UInt32(10),
	}
	res.Clusters = []*v3clusterpb.Cluster{cl}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)
	channels := bothChannels(t, s, "xds:///svc")

	// Phase 1, on both channels at once: from the first RPC to reach A,
	// RPCs for 2 intervals and a half, then 1.5 s counted.
	type outcome struct {
		total, failed int
		err           error
	}
	var wg sync.WaitGroup
	phase1 := make([]outcome, len(channels))
	for i, ch := range channels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc, cctx := testgrpc.NewTestServiceClient(ch.cc), channelCtx(ctx, ch)
			for { // until the configuration is in
				resp, err := tc.UnaryCall(cctx, &testgrpc.SimpleRequest{})
				if err == nil && resp.GetServerId() == "A" {
					break
				}
				if ctx.Err() != nil {
					phase1[i].err = fmt.Errorf("no RPC reached A: %v", err)
					return
				}
			}
			start := time.Now()
			for time.Since(start) < 2*interval+interval/2 {
				_, _ = tc.UnaryCall(cctx, &testgrpc.SimpleRequest{})
			}
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
				phase1[i].total++
				if _, err := tc.UnaryCall(cctx, &testgrpc.SimpleRequest{}); err != nil {
					phase1[i].failed++
				}
			}
		}()
	}
	wg.Wait()
	for i, ch := range channels {
		o := phase1[i]
		if o.err != nil {
			t.Fatalf("%s: %v", ch.name, o.err)
		}
		t.Logf("%s: after the second interval, %d of %d RPCs reached the failing endpoint", ch.name, o.failed, o.total)
		if o.failed*50 >= o.total {
			t.Errorf("%s: after the second interval, %d of %d RPCs reached the failing endpoint; want under 2%%", ch.name, o.failed, o.total)
		}
	}

	// Phase 2: C heals; each channel sends RPCs until one reaches C.
	c.failAll.Store(false)
	healed := time.Now()
	back := make([]time.Duration, len(channels))
	for i, ch := range channels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc, cctx := testgrpc.NewTestServiceClient(ch.cc), channelCtx(ctx, ch)
			for ctx.Err() == nil {
				if resp, err := tc.UnaryCall(cctx, &testgrpc.SimpleRequest{}); err == nil && resp.GetServerId() == "C" {
					back[i] = time.Since(healed)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, ch := range channels {
		t.Logf("%s: the endpoint got RPCs again %v after it healed", ch.name, back[i])
		if back[i] == 0 || back[i] > base+2*interval {
			t.Errorf("%s: the healed endpoint got RPCs again after %v; want within base_ejection_time and 2 intervals (%v)", ch.name, back[i], base+2*interval)
		}
	}
}
