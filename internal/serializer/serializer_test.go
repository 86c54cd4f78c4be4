// SPDX-License-Identifier: Apache-2.0

package serializer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestSerializer_FIFOAndSerial schedules from many goroutines and checks
// that funcs never overlap and that each goroutine's funcs keep their order.
func TestSerializer_FIFOAndSerial(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := New(ctx)
	const producers, perProducer = 8, 200
	var (
		mu      sync.Mutex
		running bool
		got     = make(map[int][]int)
		wg      sync.WaitGroup
		all     sync.WaitGroup
	)
	all.Add(producers * perProducer)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				s.Schedule(func() {
					defer all.Done()
					mu.Lock()
					if running {
						t.Error("two funcs ran at once")
					}
					running = true
					got[p] = append(got[p], i)
					mu.Unlock()
					mu.Lock()
					running = false
					mu.Unlock()
				})
			}
		}()
	}
	wg.Wait()
	all.Wait()
	for p := range producers {
		for i, v := range got[p] {
			if v != i {
				t.Fatalf("producer %d: func %d ran at position %d", p, v, i)
			}
		}
	}
	cancel()
	<-s.Done()
	if s.Schedule(func() {}) {
		t.Fatal("Schedule after stop = true, want false")
	}
}

// TestSerializer_StopDropsQueued checks that funcs queued behind a running
// one are dropped when the context ends.
func TestSerializer_StopDropsQueued(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := New(ctx)
	release := make(chan struct{})
	started := make(chan struct{})
	ran := make(chan struct{}, 1)
	s.Schedule(func() { close(started); <-release })
	s.Schedule(func() { ran <- struct{}{} })
	<-started
	cancel()
	close(release)
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("serializer did not stop")
	}
	select {
	case <-ran:
		t.Fatal("queued func ran after the context ended")
	default:
	}
}
