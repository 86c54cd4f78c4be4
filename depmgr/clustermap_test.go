// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"fmt"
	"maps"
	"testing"
)

// TestDepMgr_ClusterMap_CopyOnWrite checks the cluster index of snapshots:
// a snapshot never changes after it is taken, however the Manager's
// working copy changes later, and snapshots share the shards that did
// not change.
func TestDepMgr_ClusterMap_CopyOnWrite(t *testing.T) {
	const n = 2000
	b := newClusterMapBuilder()
	want := make(map[string]*ClusterResult)
	for i := range n {
		name := fmt.Sprint("c", i)
		r := &ClusterResult{Name: name}
		b.set(r)
		want[name] = r
	}
	s1 := b.snapshot()
	want1 := maps.Clone(want)

	changed := &ClusterResult{Name: "c7"}
	b.set(changed)
	b.delete("c8")
	b.delete("absent")
	b.set(&ClusterResult{Name: "new"})
	s2 := b.snapshot()
	b.set(&ClusterResult{Name: "c9"}) // after s2: must not show in it

	check := func(name string, s *clusterMap, want map[string]*ClusterResult) {
		t.Helper()
		cfg := &XDSConfig{clusters: s}
		got := maps.Collect(cfg.Clusters())
		if cfg.NumClusters() != len(want) || !maps.Equal(got, want) {
			t.Errorf("%s: %d clusters (NumClusters %d), want %d; equal: %t", name, len(got), cfg.NumClusters(), len(want), maps.Equal(got, want))
		}
		for k, v := range want {
			if cfg.Cluster(k) != v {
				t.Errorf("%s: Cluster(%q) = %p, want %p", name, k, cfg.Cluster(k), v)
			}
		}
	}
	check("s1", s1, want1)
	want["c7"] = changed
	delete(want, "c8")
	want["new"] = s2.get("new")
	check("s2", s2, want)

	shared := 0
	for i := range s1.shards {
		if fmt.Sprintf("%p", s1.shards[i]) == fmt.Sprintf("%p", s2.shards[i]) {
			shared++
		}
	}
	if shared < clusterShards-3 {
		t.Errorf("s1 and s2 share %d of %d shards, want all but the (at most 3) changed ones", shared, clusterShards)
	}
}
