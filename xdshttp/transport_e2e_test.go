// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"testing"
)

// TestTransport_RoundRobin: requests to http://svc:8080 go to the
// endpoints of the Listener "svc:8080"'s cluster, each in turn.
func TestTransport_RoundRobin(t *testing.T) {
	e := newCliEnv(t)
	b1, b2 := startBackend(t, "b1", nil), startBackend(t, "b2", nil)
	e.update(t, clientResources("svc:8080", b1, b2))
	got := map[string]int{}
	for range 10 {
		status, body, err := e.get(t, "http://svc:8080/hello")
		if err != nil {
			t.Fatal(err)
		}
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		got[body]++
	}
	if got["b1"] != 5 || got["b2"] != 5 {
		t.Errorf("requests per backend = %v, want 5 each", got)
	}
	r := <-b1.reqs
	if r.Host != "svc:8080" || r.URL.Path != "/hello" {
		t.Errorf("backend got Host %q path %q, want svc:8080 /hello", r.Host, r.URL.Path)
	}
}
