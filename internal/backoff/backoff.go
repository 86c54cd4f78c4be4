// SPDX-License-Identifier: Apache-2.0

// Package backoff holds the library's retry delays, built on
// github.com/cenkalti/backoff/v4: one exponential policy type, Policy, with
// the parameters of each user. Stream is the xDS stream retry policy
// package lrs retries its stream and package depmgr its DNS
// lookups with parameters of their own, through the same code.
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

// Stream is the stream retry policy, of the constants above.
var Stream = Policy{Initial: InitialInterval, Multiplier: Multiplier, Jitter: RandomizationFactor, Max: MaxInterval}

// Policy is an exponential backoff: the delay before the first retry is
// Initial, each next one Multiplier times the previous one, at most Max
// (nominal delays: Initial × Multiplierⁿ, capped at Max); each delay
// actually waited is its nominal one randomised uniformly within ±Jitter
// (a fraction: 0.2 is ±20 %, 0 none), so it may exceed Max by that much.
// A Policy never gives up.
type Policy struct {
	Initial    time.Duration
	Multiplier float64
	Jitter     float64
	Max        time.Duration
}

// New returns a fresh backoff of p. NextBackOff returns the delay before
// the next attempt and never returns backoff.Stop; Reset starts over at
// Initial. The result is not safe for concurrent use: it belongs to the
// goroutine that retries.
func (p Policy) New() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(p.Initial),
		backoff.WithMultiplier(p.Multiplier),
		backoff.WithRandomizationFactor(p.Jitter),
		backoff.WithMaxInterval(p.Max),
		backoff.WithMaxElapsedTime(0), // retry forever
	)
}

// NewStreamBackoff returns a fresh backoff for one channel's stream
// attempts: Stream.New(). The client resets it after a stream that
// received a response.
func NewStreamBackoff() *backoff.ExponentialBackOff { return Stream.New() }
