// SPDX-License-Identifier: Apache-2.0

// Package leakcheck finds goroutines that a test left running. It is a
// goroutine-only cousin of grpc-go's internal leakcheck, with no
// dependencies, for the tests of this module and of its users.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
//
// or per test with defer leakcheck.Check(t); leakcheck.CheckNow(t), right
// after a Close that promises to wait for its goroutines, checks that it
// did.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Timeout is how long Check and VerifyTestMain wait for goroutines to exit
// before reporting them.
const Timeout = 10 * time.Second

// ignored are goroutines that belong to the runtime, the testing package or
// long-lived library singletons, and never to the code under test.
var ignored = []string{
	"testing.Main(",
	"testing.tRunner(",
	"testing.(*M).",
	"testing.(*T).Run(",
	"testing.(*F).Fuzz(",
	"testing.runFuzzing(",
	"testing.runFuzzTests(",
	"runtime.goexit",
	"created by runtime.gc",
	"created by runtime/trace.Start",
	"interestingGoroutines",
	"runtime.MHeap_Scavenger",
	"signal.signal_recv",
	"sigterm.handler",
	"runtime_mcall",
	"(*loggingT).flushDaemon",
	"goroutine in C code",
	"runtime.ReadTrace",
	"os/signal.loop",
	"internal/fuzz.",
	// testing/synctest's own goroutines, when the check runs in a bubble.
	"internal/synctest.Run(",
	"testing/synctest.testingSynctestTest(",
	// grpc-go's process-wide goroutines, started once and never stopped.
	"google.golang.org/grpc/internal/grpcsync.NewCallbackSerializer",
	"google.golang.org/grpc/internal/transport.init",
}

// interestingGoroutines returns the stacks of goroutines other than the
// caller's that are not ignored.
func interestingGoroutines() []string {
	buf := make([]byte, 2<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var gs []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		sl := strings.SplitN(g, "\n", 2)
		if len(sl) != 2 {
			continue
		}
		stack := strings.TrimSpace(sl[1])
		if strings.HasPrefix(stack, "testing.RunTests") || isIgnored(stack) {
			continue
		}
		gs = append(gs, g)
	}
	sort.Strings(gs)
	return gs
}

func isIgnored(stack string) bool {
	// The goroutine running this function.
	if strings.Contains(stack, "leakcheck.interestingGoroutines") {
		return true
	}
	first := stack
	if i := strings.Index(stack, "\n"); i >= 0 {
		first = stack[:i]
	}
	for _, s := range ignored {
		if strings.Contains(first, s) || (strings.Contains(s, "created by") && strings.Contains(stack, s)) {
			return true
		}
		if strings.HasPrefix(s, "google.golang.org/grpc/") && strings.Contains(stack, s) {
			return true
		}
	}
	return false
}

// leaked waits up to timeout for interesting goroutines to exit and
// returns those still running.
func leaked(timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		gs := interestingGoroutines()
		if len(gs) == 0 || time.Now().After(deadline) {
			return gs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Check fails t if goroutines other than the test's own are still running
// Timeout after it is called. Call it at the end of a test (usually by
// defer, or from t.Cleanup registered first).
func Check(t testing.TB) {
	t.Helper()
	if gs := leaked(Timeout); len(gs) > 0 {
		t.Errorf("leakcheck: %d goroutine(s) leaked:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}

// CheckNow fails t if goroutines other than the test's own are running
// now: unlike Check it does not wait for them to exit. It is how a test
// checks that a Close which promises to wait for its goroutines does:
// call it right after Close returns, where nothing else the test started
// is still ending (a component with fake dependencies, in a
// testing/synctest bubble or not). Goroutines of tests running in
// parallel count too: do not use it in parallel tests.
func CheckNow(t testing.TB) {
	t.Helper()
	if gs := interestingGoroutines(); len(gs) > 0 {
		t.Errorf("leakcheck: %d goroutine(s) still running:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}

// VerifyTestMain runs the tests of m and then fails the run (exit code 1)
// if goroutines are still running after Timeout. Call it from TestMain.
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if gs := leaked(Timeout); len(gs) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) leaked after all tests:\n%s\n", len(gs), strings.Join(gs, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}
