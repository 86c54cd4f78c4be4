// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClosedLoop runs rpc from workers goroutines for d, each calling it
// again as soon as its last call returns (a closed-loop load), and
// returns how many calls succeeded, with the first error of a call that
// did not end with d (a DEADLINE_EXCEEDED at its end is not one). Each
// call gets a context that ends with d or ctx. It returns when every
// worker has stopped.
func ClosedLoop(ctx context.Context, workers int, d time.Duration, rpc func(context.Context) error) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		n        atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := rpc(ctx); err != nil {
					if ctx.Err() == nil && status.Code(err) != codes.DeadlineExceeded {
						once.Do(func() { firstErr = err })
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return n.Load(), firstErr
}
