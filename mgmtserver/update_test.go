// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"strings"
	"testing"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// TestServer_UpdateReportsBadResources checks that Update reports a
// resource it cannot serve with an error naming it, never with a panic,
// and keeps the snapshot it had.
func TestServer_UpdateReportsBadResources(t *testing.T) {
	ms, err := Start(Options{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Stop)
	if err := ms.Update("", Resources{Version: "good", Listeners: []*v3listenerpb.Listener{{Name: "svc"}}}); err != nil {
		t.Fatalf("Update(valid) = %v", err)
	}
	bad := []struct {
		name string
		give Resources
		want string
	}{
		{"Other without Resource", Resources{Version: "bad", Other: []NamedResource{{Name: "x"}}}, `mgmtserver: Update: Resources.Other[0] ("x") has no Resource`},
		{"name not UTF-8", Resources{Version: "bad", Listeners: []*v3listenerpb.Listener{{Name: "\xff"}}}, "mgmtserver: Update: resource \"\\xff\": mgmtserver: marshalling"},
	}
	for _, tc := range bad {
		err := ms.Update("", tc.give)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Update() = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if v := ms.snapshotFor("").version; v != "good" {
			t.Errorf("%s: snapshot version = %q after a failed Update, want the previous one, good", tc.name, v)
		}
	}
}
