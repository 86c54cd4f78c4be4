// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"hash/maphash"
	"maps"
)

// clusterShards is the number of shards of a clusterMap; a power of two.
const clusterShards = 256

// clusterMap maps top-level cluster names to their results. It is split
// into shards by a hash of the name so that a snapshot can share every
// shard that did not change with the previous snapshot: publishing after
// one cluster changed copies one shard (about 40 entries with 10,000
// clusters) and the shard table (2 KiB), not every entry. A clusterMap in
// a snapshot is never modified.
type clusterMap struct {
	seed   maphash.Seed
	n      int // entries in all shards
	shards [clusterShards]map[string]*ClusterResult
}

func (c *clusterMap) shard(name string) int {
	return int(maphash.String(c.seed, name) & (clusterShards - 1))
}

func (c *clusterMap) get(name string) *ClusterResult {
	return c.shards[c.shard(name)][name]
}

// clusterMapBuilder is the Manager's working copy of the results: the
// shards it copied since the last snapshot are its own, the others are
// shared with that snapshot and copied on first write.
type clusterMapBuilder struct {
	m     clusterMap
	owned [clusterShards]bool // shards copied since the last snapshot
}

func newClusterMapBuilder() *clusterMapBuilder {
	return &clusterMapBuilder{m: clusterMap{seed: maphash.MakeSeed()}}
}

// writable returns the shard of name, copying it first if it is shared.
func (b *clusterMapBuilder) writable(name string) map[string]*ClusterResult {
	i := b.m.shard(name)
	if !b.owned[i] {
		if b.m.shards[i] == nil {
			b.m.shards[i] = make(map[string]*ClusterResult)
		} else {
			b.m.shards[i] = maps.Clone(b.m.shards[i])
		}
		b.owned[i] = true
	}
	return b.m.shards[i]
}

func (b *clusterMapBuilder) get(name string) *ClusterResult { return b.m.get(name) }

// set records r as the result of the cluster r.Name.
func (b *clusterMapBuilder) set(r *ClusterResult) {
	s := b.writable(r.Name)
	if _, ok := s[r.Name]; !ok {
		b.m.n++
	}
	s[r.Name] = r
}

// delete removes the result of name, and reports whether there was one.
func (b *clusterMapBuilder) delete(name string) bool {
	if b.m.get(name) == nil {
		return false
	}
	delete(b.writable(name), name)
	b.m.n--
	return true
}

// snapshot returns an immutable copy of the map, which shares every shard
// with the builder until the builder writes to it.
func (b *clusterMapBuilder) snapshot() *clusterMap {
	s := b.m // copies the shard table
	clear(b.owned[:])
	return &s
}
