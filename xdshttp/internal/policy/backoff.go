// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the time to wait before retry k (1 for the first
// retry): Envoy's fully jittered exponential back-off ([retry
// semantics]), uniform in [0, min(base × (2^k − 1), max)) with base
// retry_back_off.base_interval (25 ms by default) and max its
// max_interval (10 × base by default). With the defaults, the first retry
// waits 0 to 25 ms, the second 0 to 75 ms, the third 0 to 175 ms, then 0
// to 250 ms. 0 when r is nil or k < 1. Safe for concurrent use (math/rand/v2's
// global source).
//
// [retry semantics]: https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/http/http_routing#retry-semantics
func (r *Retry) Backoff(k int) time.Duration {
	if r == nil || k < 1 {
		return 0
	}
	bound := backoffBound(r.base, r.max, k)
	if bound <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(bound)))
}

// backoffBound is min(base × (2^k − 1), max), without overflow.
func backoffBound(base, maxInterval time.Duration, k int) time.Duration {
	if base <= 0 {
		return 0
	}
	if k >= 63 {
		return maxInterval
	}
	m := time.Duration(1)<<k - 1
	if base > maxInterval/m {
		return maxInterval
	}
	return base * m
}
