// SPDX-License-Identifier: Apache-2.0

package leakcheck

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestLeakcheck_FindsBlockedGoroutine proves the check can fail: a goroutine
// blocked on a channel is reported until it is released.
func TestLeakcheck_FindsBlockedGoroutine(t *testing.T) {
	stop := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		<-stop
	}()
	gs := leaked(50 * time.Millisecond)
	if len(gs) != 1 || !strings.Contains(gs[0], "TestLeakcheck_FindsBlockedGoroutine") {
		t.Fatalf("leaked() = %d goroutines, want the blocked one:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
	close(stop)
	<-exited
	if gs := leaked(time.Second); len(gs) != 0 {
		t.Fatalf("leaked() after release = %q, want none", gs)
	}
}

// errorsTB records Errorf instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (tb *errorsTB) Helper() {}

func (tb *errorsTB) Errorf(format string, args ...any) {
	tb.errs = append(tb.errs, fmt.Sprintf(format, args...))
}

// TestLeakcheck_CheckNow checks that CheckNow reports a goroutine still
// running at once, without waiting for it, and passes inside a
// testing/synctest bubble once the bubble's goroutines have exited (the
// bubble's own machinery is not reported).
func TestLeakcheck_CheckNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			time.Sleep(time.Hour)
		}()
		synctest.Wait()
		tb := &errorsTB{TB: t}
		CheckNow(tb)
		if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], "TestLeakcheck_CheckNow") {
			t.Errorf("CheckNow with a sleeping goroutine reported %q, want it", tb.errs)
		}
		<-exited
		CheckNow(t)
	})
}
