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
// clusters) and the shard table (6 KiB), not every entry. A shard is a
// slice of results sorted by name, searched by bisection: 8 bytes per
// cluster, where a map takes about 44. A clusterMap in a snapshot is never
// modified.
type clusterMap struct {
	seed   maphash.Seed
	n      int // entries in all shards
	shards [clusterShards][]*ClusterResult
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
	s := c.shards[c.shard(name)]
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
	s := b.m.shards[i]
	j, found := search(s, r.Name)
	if !b.owned[i] {
		s = slices.Grow(slices.Clip(s), 1) // a copy: the snapshots keep theirs
		b.owned[i] = true
	}
	if found {
		s[j] = r
	} else {
		s = slices.Insert(s, j, r)
		b.m.n++
	}
	b.m.shards[i] = s
}

// delete removes the result of name, and reports whether there was one.
func (b *clusterMapBuilder) delete(name string) bool {
	i := b.m.shard(name)
	s := b.m.shards[i]
	j, found := search(s, name)
	if !found {
		return false
	}
	if !b.owned[i] {
		s = slices.Clone(s)
		b.owned[i] = true
	}
	b.m.shards[i] = slices.Delete(s, j, j+1)
	b.m.n--
	return true
}

// snapshot returns an immutable copy of the map, which shares every shard
// with the builder until the builder writes to it. The shards written
// since the last snapshot lose their spare capacity, which the builder
// would not use: its next write to them copies them.
func (b *clusterMapBuilder) snapshot() *clusterMap {
	for i, owned := range b.owned {
		if s := b.m.shards[i]; owned && cap(s)-len(s) > len(s)/8 {
			b.m.shards[i] = slices.Clone(s)
		}
	}
	s := b.m // copies the shard table
	clear(b.owned[:])
	return &s
}
