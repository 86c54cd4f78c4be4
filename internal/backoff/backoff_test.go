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

// TestPolicy_Schedule pins Policy's schedule without randomisation: the
// first delay is Initial, each next one Multiplier times longer, capped at
// Max (where it stays), never Stop; Reset starts over.
func TestPolicy_Schedule(t *testing.T) {
	b := Policy{Initial: time.Second, Multiplier: 1.5, Max: 5 * time.Second}.New()
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := b.NextBackOff(); got != w {
			t.Fatalf("delay %d = %v, want %v (all: %v)", i, got, w, want)
		}
	}
	b.Reset()
	if got := b.NextBackOff(); got != time.Second {
		t.Fatalf("delay after Reset = %v, want 1s", got)
	}
	for range 10000 { // never gives up
		if b.NextBackOff() == backoff.Stop {
			t.Fatal("the backoff gave up")
		}
	}
}

// TestPolicy_Jitter checks that each delay is its nominal value randomised
// within ±Jitter, and that the randomisation spans the range.
func TestPolicy_Jitter(t *testing.T) {
	p := Policy{Initial: time.Second, Multiplier: 2, Jitter: 0.5, Max: 4 * time.Second}
	var lo, hi time.Duration = time.Hour, 0
	for range 200 {
		b := p.New()
		for i, nominal := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
			got := b.NextBackOff()
			if got < nominal/2 || got > nominal*3/2+1 {
				t.Fatalf("delay %d = %v, want %v ± 50%%", i, got, nominal)
			}
			if i == 0 {
				lo, hi = min(lo, got), max(hi, got)
			}
		}
	}
	if lo > 600*time.Millisecond || hi < 1400*time.Millisecond {
		t.Errorf("200 first delays span [%v, %v], want about [500ms, 1.5s]", lo, hi)
	}
}
