// SPDX-License-Identifier: Apache-2.0

package router

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestHashPreimage checks that the value the router gives ring_hash
// hashes (XXH64, as ring_hash hashes its requestHashHeader, gRFC A76)
// back to the request hash of gRFC A42, for edge values and random ones.
func TestHashPreimage(t *testing.T) {
	hashes := []uint64{0, 1, 42, math.MaxUint64, 1 << 63, xxhash.Sum64String("alice")}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		hashes = append(hashes, r.Uint64())
	}
	for _, h := range hashes {
		v := hashPreimage(h)
		if got := xxhash.Sum64String(v); got != h || len(v) != 8 {
			t.Fatalf("XXH64(hashPreimage(%d)) = %d (%d bytes); want %d", h, got, len(v), h)
		}
	}
}

func BenchmarkHashPreimage(b *testing.B) {
	for i := range b.N {
		_ = hashPreimage(uint64(i))
	}
}
