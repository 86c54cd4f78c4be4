// SPDX-License-Identifier: Apache-2.0

package router

import (
	"encoding/binary"
	"math/bits"
)

// HashHeader is the requestHashHeader of the ring_hash children: for each
// RPC to a RING_HASH cluster, the picker computes the hash of the route's
// hash policies (gRFC A42) and passes it to ring_hash in this header of
// the context the child picks with. It is not sent: the RPC's own
// metadata is unchanged.
const HashHeader = "x-proxyless-xds-request-hash"

// The primes of XXH64.
const (
	xxPrime1 uint64 = 11400714785074694791
	xxPrime2 uint64 = 14029467366897019727
	xxPrime3 uint64 = 1609587929392839161
	xxPrime4 uint64 = 9650029242287828579
	xxPrime5 uint64 = 2870177450012600261
)

// Their inverses modulo 2⁶⁴ (they are odd), for hashPreimage.
var (
	xxInvPrime1 = inverse(xxPrime1)
	xxInvPrime2 = inverse(xxPrime2)
	xxInvPrime3 = inverse(xxPrime3)
)

// inverse returns the multiplicative inverse of the odd number a modulo
// 2⁶⁴ (Newton's iteration: each step doubles the correct low bits, from
// 3 bits for x = a).
func inverse(a uint64) uint64 {
	x := a
	for range 5 {
		x *= 2 - a*x
	}
	return x
}

// hashPreimage returns the 8 bytes whose XXH64 (seed 0) is h.
//
// gRPC's public ring_hash balancer takes the request hash of an RPC only
// from a header (requestHashHeader, gRFC A76), whose value it hashes with
// XXH64; gRPC's own xDS channel hands it the hash of the route's hash
// policies directly (gRFC A42), through a context key internal to grpc.
// So that an RPC lands on the endpoint gRPC's xDS channel would pick,
// the router gives ring_hash a value whose XXH64 is the A42 hash. XXH64
// of an 8-byte input is a bijection of 64-bit integers: each of its
// steps (multiplications by odd primes, rotations, additions and
// xor-shifts) can be undone.
func hashPreimage(h uint64) string {
	// The final avalanche, undone.
	h ^= h >> 32
	h *= xxInvPrime3
	h ^= h>>29 ^ h>>58
	h *= xxInvPrime2
	h ^= h >> 33
	// h = rotl27(h0 ^ k1)*prime1 + prime4, with h0 = prime5 + length 8.
	k1 := bits.RotateLeft64((h-xxPrime4)*xxInvPrime1, -27) ^ (xxPrime5 + 8)
	// k1 = rotl31(input*prime2)*prime1.
	in := bits.RotateLeft64(k1*xxInvPrime1, -31) * xxInvPrime2
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], in)
	return string(b[:])
}
