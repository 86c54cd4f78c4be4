// SPDX-License-Identifier: Apache-2.0

package testutil_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/proxyless/xds/testutil"
)

// errorfTB is a testing.TB that records Errorf instead of failing the
// test.
type errorfTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (tb *errorfTB) Errorf(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.errs = append(tb.errs, fmt.Sprintf(format, args...))
}

// TestManagementServer_UpdateFailsTheTest checks that the Update of a
// server from NewManagementServer fails its test with the error it
// returns, so that a test may ignore the error.
func TestManagementServer_UpdateFailsTheTest(t *testing.T) {
	tb := &errorfTB{TB: t}
	ms := testutil.NewManagementServer(tb, testutil.ServerOptions{Manual: true})
	if err := ms.Update("", testutil.Chain(testutil.ChainOptions{})); err != nil || len(tb.errs) > 0 {
		t.Fatalf("Update(valid) = %v, test failed with %q", err, tb.errs)
	}
	const want = `Resources.Other[0] ("x") has no Resource`
	err := ms.Update("", testutil.Resources{Other: []testutil.NamedResource{{Name: "x"}}})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Update() = %v, want an error containing %q", err, want)
	}
	if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], want) {
		t.Errorf("the test was failed with %q, want one error containing %q", tb.errs, want)
	}
}
