// SPDX-License-Identifier: Apache-2.0

package leakcheck

import (
	"strings"
	"testing"
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
