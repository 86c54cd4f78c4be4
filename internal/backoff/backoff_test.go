// SPDX-License-Identifier: Apache-2.0

package backoff

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// TestStreamBackoff_Schedule checks: delays start at 1 s, grow by
// 1.6, are capped at 120 s, stay within ±20 % of the nominal value, never
// stop, and start over after Reset.
func TestStreamBackoff_Schedule(t *testing.T) {
	b := NewStreamBackoff()
	check := func(attempt int, nominal time.Duration) {
		t.Helper()
		got := b.NextBackOff()
		if got == backoff.Stop {
			t.Fatalf("attempt %d: backoff gave up", attempt)
		}
		lo, hi := time.Duration(float64(nominal)*0.8), time.Duration(float64(nominal)*1.2)
		if got < lo || got > hi {
			t.Fatalf("attempt %d: delay %v, want within [%v, %v]", attempt, got, lo, hi)
		}
	}
	nominal := time.Second
	for i := range 40 {
		check(i, nominal)
		nominal = min(time.Duration(float64(nominal)*1.6), 120*time.Second)
	}
	if nominal != 120*time.Second {
		t.Fatalf("nominal delay after 40 attempts = %v, want the 120s cap", nominal)
	}
	b.Reset()
	check(0, time.Second)
}

// TestStreamBackoff_Jitter checks that delays are randomised, so that many
// clients of one management server do not retry in lockstep.
func TestStreamBackoff_Jitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[NewStreamBackoff().NextBackOff()] = true
	}
	if len(seen) < 2 {
		t.Fatalf("20 first delays were all equal (%v): no jitter", seen)
	}
}
