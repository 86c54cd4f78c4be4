// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"hash/maphash"
	"slices"
	"strings"
)

// clusterShards is the number of shards of a clusterMap; a power of two.
const clusterShards = 256

// clusterMap maps top-level cluster names to their results. It is split
// into shards by a hash of the name so that a snapshot can share every
// shard that did not change with the previous snapshot: publishing after
// one cluster changed copies one shard (about 40 entries with 10,000
// clusters) and the shard table (2 KiB), not every entry. A shard holds
// results sorted by name, searched by bisection: 8 bytes per cluster,
// where a map takes about 44. A clusterMap in a snapshot is never
// modified.
type clusterMap struct {
	seed   maphash.Seed
	n      int // entries in all shards
	shards [clusterShards]*shard
}

// shard is one shard of a clusterMap; nil is empty.
type shard struct {
	results []*ClusterResult // sorted by Name
}

func (s *shard) all() []*ClusterResult {
	if s == nil {
		return nil
	}
	return s.results
}

func (c *clusterMap) shard(name string) int {
	return int(maphash.String(c.seed, name) & (clusterShards - 1))
}

// search returns the position of name in shard s, and whether it is there.
func search(s []*ClusterResult, name string) (int, bool) {
	return slices.BinarySearchFunc(s, name, func(r *ClusterResult, name string) int {
		return strings.Compare(r.Name, name)
	})
}

func (c *clusterMap) get(name string) *ClusterResult {
	s := c.shards[c.shard(name)].all()
	if i, ok := search(s, name); ok {
		return s[i]
	}
	return nil
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

func (b *clusterMapBuilder) get(name string) *ClusterResult { return b.m.get(name) }

// set records r as the result of the cluster r.Name.
func (b *clusterMapBuilder) set(r *ClusterResult) {
	i := b.m.shard(r.Name)
	s := b.writable(i, 1)
	j, found := search(s.results, r.Name)
	if found {
		s.results[j] = r
	} else {
		s.results = slices.Insert(s.results, j, r)
		b.m.n++
	}
}

// writable returns shard i, copying it first (with room for grow more
// entries) if it is shared with a snapshot.
func (b *clusterMapBuilder) writable(i, grow int) *shard {
	if !b.owned[i] {
		old := b.m.shards[i].all()
		b.m.shards[i] = &shard{results: append(make([]*ClusterResult, 0, len(old)+grow), old...)}
		b.owned[i] = true
	}
	return b.m.shards[i]
}

// delete removes the result of name, and reports whether there was one.
func (b *clusterMapBuilder) delete(name string) bool {
	i := b.m.shard(name)
	j, found := search(b.m.shards[i].all(), name)
	if !found {
		return false
	}
	s := b.writable(i, 0)
	s.results = slices.Delete(s.results, j, j+1)
	b.m.n--
	return true
}

// snapshot returns an immutable copy of the map, which shares every shard
// with the builder until the builder writes to it. The shards written
// since the last snapshot lose their spare capacity, which the builder
// would not use: its next write to them copies them.
func (b *clusterMapBuilder) snapshot() *clusterMap {
	for i, owned := range b.owned {
		if s := b.m.shards[i]; owned && cap(s.results)-len(s.results) > len(s.results)/8 {
			s.results = slices.Clone(s.results)
		}
	}
	s := b.m // copies the shard table
	clear(b.owned[:])
	return &s
}
