// SPDX-License-Identifier: Apache-2.0

// Package backoff holds the xDS stream retry policy, built on
// github.com/cenkalti/backoff/v4: the delays between attempts to open an
// ADS stream that failed before receiving any response.
package backoff

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The stream retry policy of every gRPC xDS client (R-11.1; grpc-go
// internal/backoff, gRPC C++ defines): the first delay is 1 s, each next one
// 1.6 times longer, at most 120 s, each randomised by ±20 %.
const (
	InitialInterval     = time.Second
	Multiplier          = 1.6
	RandomizationFactor = 0.2
	MaxInterval         = 120 * time.Second
)

// NewStreamBackoff returns a fresh backoff for one channel's stream
// attempts. NextBackOff returns the delay before the next attempt and never
// gives up (it never returns backoff.Stop); Reset starts over at 1 s, which
// the client does after a stream that received a response. The
// result is not safe for concurrent use: it belongs to the goroutine that
// runs the stream.
func NewStreamBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(InitialInterval),
		backoff.WithMultiplier(Multiplier),
		backoff.WithRandomizationFactor(RandomizationFactor),
		backoff.WithMaxInterval(MaxInterval),
		backoff.WithMaxElapsedTime(0), // retry forever
	)
}
