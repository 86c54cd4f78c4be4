// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestDeltaChangeMatchesFullWalk drives two delta streams with the same
// random requests and snapshot updates; one answers subscription changes
// through deltaChange, the other is made to walk the whole snapshot each
// time (deltaResponse). Their responses must be the same but for nonces.
func TestDeltaChangeMatchesFullWalk(t *testing.T) {
	ms, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Stop)
	rng := rand.New(rand.NewPCG(1, 2))
	name := func() string { return fmt.Sprintf("c%d", rng.IntN(12)) }
	update := func() {
		var cs []*v3clusterpb.Cluster
		for i := range 12 {
			if rng.IntN(3) > 0 {
				cs = append(cs, &v3clusterpb.Cluster{Name: fmt.Sprintf("c%d", i), EdsClusterConfig: &v3clusterpb.Cluster_EdsClusterConfig{ServiceName: fmt.Sprintf("eds%d", rng.IntN(2))}})
			}
		}
		if err := ms.Update("", Resources{Clusters: cs}); err != nil {
			t.Fatal(err)
		}
	}
	fast, full := newDeltaStream(1), newDeltaStream(2)
	drain := func(s *deltaStream) []*v3discoverypb.DeltaDiscoveryResponse {
		s.sendMu.Lock()
		defer s.sendMu.Unlock()
		q := s.sendQueue
		s.sendQueue = nil
		for _, r := range q {
			r.Nonce = ""
		}
		return q
	}
	update()
	fastPaths := 0
	for step := range 2000 {
		if rng.IntN(10) == 0 {
			update()
			ms.pushDeltaSnapshot(fast)
			ms.pushDeltaSnapshot(full)
		} else {
			req := &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: clusterTypeURL}
			if step > 0 {
				for range rng.IntN(4) {
					req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, name())
				}
				for range rng.IntN(3) {
					req.ResourceNamesUnsubscribe = append(req.ResourceNamesUnsubscribe, name())
				}
				switch rng.IntN(20) {
				case 0:
					req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, "*")
				case 1:
					req.ResourceNamesUnsubscribe = append(req.ResourceNamesUnsubscribe, "*")
				}
			}
			if ts := fast.types[clusterTypeURL]; ts != nil && ts.synced == ms.snapshotFor("") {
				fastPaths++
			}
			ms.handleDeltaRequest(fast, req)
			if ts := full.types[clusterTypeURL]; ts != nil {
				ts.synced = nil
			}
			ms.handleDeltaRequest(full, proto.Clone(req).(*v3discoverypb.DeltaDiscoveryRequest))
			fast.gotFirst, full.gotFirst = true, true
		}
		got, want := drain(fast), drain(full)
		if len(got) != len(want) {
			t.Fatalf("step %d: %d responses through deltaChange, %d through the full walk", step, len(got), len(want))
		}
		for i := range got {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("step %d: response through deltaChange:\n%v\nthrough the full walk:\n%v", step, got[i], want[i])
			}
		}
	}
	if fastPaths < 100 {
		t.Fatalf("deltaChange answered %d requests; the test does not exercise it", fastPaths)
	}
}
