// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
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

// TestServer_UpdateReportsBadResources checks that Update reports a
// resource it cannot serve with an error and by failing the test of
// NewManagementServer, never with a panic, and keeps the snapshot it had.
func TestServer_UpdateReportsBadResources(t *testing.T) {
	tb := &errorfTB{TB: t}
	ms := NewManagementServer(tb, ServerOptions{Manual: true})
	if err := ms.Update("", Resources{Version: "good", Listeners: []*v3listenerpb.Listener{{Name: "svc"}}}); err != nil {
		t.Fatalf("Update(valid) = %v", err)
	}
	bad := []struct {
		name string
		give Resources
		want string
	}{
		{"Other without Resource", Resources{Version: "bad", Other: []NamedResource{{Name: "x"}}}, `Resources.Other[0] ("x") has no Resource`},
		{"name not UTF-8", Resources{Version: "bad", Listeners: []*v3listenerpb.Listener{{Name: "\xff"}}}, "testutil: Update: resource \"\\xff\": mgmtserver: marshalling"},
	}
	for _, tc := range bad {
		tb.errs = nil
		err := ms.Update("", tc.give)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Update() = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], tc.want) {
			t.Errorf("%s: the test was failed with %q, want one error containing %q", tc.name, tb.errs, tc.want)
		}
		if v := ms.snapshotFor("").version; v != "good" {
			t.Errorf("%s: snapshot version = %q after a failed Update, want the previous one, good", tc.name, v)
		}
	}
}
