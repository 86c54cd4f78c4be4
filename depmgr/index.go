// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"hash/maphash"
	"iter"
)

// named is a node kept in a nameIndex: a pointer that knows its name.
type named interface {
	comparable
	nodeName() string
}

func (n *clusterNode) nodeName() string   { return n.name }
func (e *endpointsNode) nodeName() string { return e.name }

// nameIndex is a set of nodes keyed by their names: a hash table of node
// pointers with open addressing (linear probing, deletion by backward
// shift, Knuth's algorithm 6.4R), at most 3/4 full, that shrinks when a
// route table does. A slot is 8 bytes where a map[string]*node entry is
// 24 (the key's string header besides the pointer): with 10,000 nodes,
// the index takes 128 KiB and the map 420 KiB. Lookups are a few per
// update (a callback's identity check, a new node), not a hot path. Not
// safe for concurrent use.
type nameIndex[N named] struct {
	seed  maphash.Seed
	slots []N // nil or a power of two long; the zero N is an empty slot
	n     int // nodes in slots
}

// minIndexSlots is the length of a nameIndex's table once it has one.
const minIndexSlots = 8

func newNameIndex[N named]() nameIndex[N] { return nameIndex[N]{seed: maphash.MakeSeed()} }

func (x *nameIndex[N]) home(name string) int {
	return int(maphash.String(x.seed, name) & uint64(len(x.slots)-1))
}

// find returns the slot of name, or the empty slot where it would go.
func (x *nameIndex[N]) find(name string) (int, bool) {
	var zero N
	mask := len(x.slots) - 1
	for i := x.home(name); ; i = (i + 1) & mask {
		switch s := x.slots[i]; {
		case s == zero:
			return i, false
		case s.nodeName() == name:
			return i, true
		}
	}
}

// get returns the node name, or the zero N.
func (x *nameIndex[N]) get(name string) N {
	var zero N
	if x.n == 0 {
		return zero
	}
	if i, ok := x.find(name); ok {
		return x.slots[i]
	}
	return zero
}

// add adds n, whose name is not in x.
func (x *nameIndex[N]) add(n N) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(max(minIndexSlots, 2*len(x.slots)))
	}
	i, _ := x.find(n.nodeName())
	x.slots[i] = n
	x.n++
}

// delete removes the node name, if any.
func (x *nameIndex[N]) delete(name string) {
	if x.n == 0 {
		return
	}
	i, ok := x.find(name)
	if !ok {
		return
	}
	var zero N
	mask := len(x.slots) - 1
	// Move back the nodes after i, up to the next empty slot, that the
	// hole at i would hide from a lookup: those whose home slot is not
	// cyclically in (i, j].
	for j := (i + 1) & mask; x.slots[j] != zero; j = (j + 1) & mask {
		if h := x.home(x.slots[j].nodeName()); (j-h)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = zero
	x.n--
	if len(x.slots) > minIndexSlots && x.n*8 < len(x.slots) {
		x.resize(len(x.slots) / 2)
	}
}

// resize moves the nodes to a table of size slots.
func (x *nameIndex[N]) resize(size int) {
	var zero N
	old := x.slots
	x.slots = make([]N, size)
	for _, s := range old {
		if s != zero {
			i, _ := x.find(s.nodeName())
			x.slots[i] = s
		}
	}
}

// all returns the nodes, in no particular order. x must not be modified
// during the iteration.
func (x *nameIndex[N]) all() iter.Seq[N] {
	return func(yield func(N) bool) {
		var zero N
		for _, s := range x.slots {
			if s != zero && !yield(s) {
				return
			}
		}
	}
}

// len returns the number of nodes.
func (x *nameIndex[N]) len() int { return x.n }

// clear removes every node and lets go of the table.
func (x *nameIndex[N]) clear() { x.slots, x.n = nil, 0 }
