// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func sotw(stream int64, typeURL string, names ...string) *testutil.Request {
	return &testutil.Request{StreamID: stream, Req: &v3discoverypb.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names}}
}

func delta(stream int64, typeURL string, sub, unsub []string) *testutil.Request {
	return &testutil.Request{StreamID: stream, Delta: &v3discoverypb.DeltaDiscoveryRequest{
		TypeUrl: typeURL, ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub,
	}}
}

// TestCheckSubscribed checks the wire checks of the cells: what counts as
// the wildcard, its legacy form, and names.
func TestCheckSubscribed(t *testing.T) {
	rds, lds := routeKind, listenerKind
	for _, tc := range []struct {
		desc     string
		k        *kind
		reqs     []*testutil.Request
		wildcard bool
		names    []string
		wantErr  string // "" for none
	}{
		{"SotW legacy wildcard of a Listener", lds, []*testutil.Request{sotw(1, lds.typeURL)}, true, nil, ""},
		{"SotW legacy wildcard of a Listener, names kept out", lds, []*testutil.Request{sotw(1, lds.typeURL), sotw(1, lds.typeURL)}, true, []string{"a"}, ""},
		{"SotW legacy wildcard of a RouteConfiguration", rds, []*testutil.Request{sotw(1, rds.typeURL)}, true, nil, "legacy form"},
		{"SotW legacy wildcard of a RouteConfiguration, then names", rds, []*testutil.Request{sotw(1, rds.typeURL), sotw(1, rds.typeURL, "*", "a")}, true, []string{"a"}, "legacy form"},
		{"SotW explicit wildcard of a RouteConfiguration", rds, []*testutil.Request{sotw(1, rds.typeURL, "a"), sotw(1, rds.typeURL, "*", "a")}, true, []string{"a"}, ""},
		{"SotW empty list after names: no wildcard", lds, []*testutil.Request{sotw(1, lds.typeURL, "a"), sotw(1, lds.typeURL)}, true, nil, "no request subscribed"},
		{"SotW names only", lds, []*testutil.Request{sotw(1, lds.typeURL, "a")}, true, nil, "no request subscribed"},
		{"SotW another type", lds, []*testutil.Request{sotw(1, rds.typeURL, "*")}, true, nil, "no request subscribed"},
		{"delta legacy wildcard of a Cluster", clusterKind, []*testutil.Request{delta(1, clusterKind.typeURL, nil, nil)}, true, nil, ""},
		{"delta legacy wildcard of endpoints, then a name", endpointsKind, []*testutil.Request{
			delta(1, endpointsKind.typeURL, nil, nil), delta(1, endpointsKind.typeURL, []string{"*", "a"}, nil),
		}, true, []string{"a"}, "legacy form"},
		{"delta explicit wildcard", rds, []*testutil.Request{delta(1, rds.typeURL, []string{"a", "*"}, nil)}, true, []string{"a"}, ""},
		{"delta wildcard unsubscribed", rds, []*testutil.Request{delta(1, rds.typeURL, []string{"*"}, nil), delta(1, rds.typeURL, nil, []string{"*"})}, true, nil, "no request subscribed"},
		{"delta name unsubscribed", rds, []*testutil.Request{delta(1, rds.typeURL, []string{"a"}, nil), delta(1, rds.typeURL, nil, []string{"a"})}, false, []string{"a"}, "no request subscribed"},
		{"REST polls are each their own", lds, []*testutil.Request{sotw(0, lds.typeURL, "a"), sotw(0, lds.typeURL)}, true, nil, ""},
		{"REST empty poll of a RouteConfiguration", rds, []*testutil.Request{sotw(0, rds.typeURL)}, true, nil, "legacy form"},
	} {
		err := checkSubscribed(tc.reqs, tc.k, tc.wildcard, tc.names...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.desc, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.desc, err, tc.wantErr)
		}
	}
}

// TestMarkerAfter checks that a marker keeps the requests of newer
// streams and the newer polls.
func TestMarkerAfter(t *testing.T) {
	reqs := []*testutil.Request{sotw(1, "t"), sotw(0, "t"), sotw(2, "t")}
	m := markOf(reqs)
	reqs = append(reqs, sotw(2, "t", "old"), sotw(0, "t", "poll"), sotw(3, "t", "new"))
	var got []string
	for _, r := range m.after(reqs) {
		got = append(got, r.Req.GetResourceNames()...)
	}
	if strings.Join(got, ",") != "poll,new" {
		t.Errorf("after the marker: %v, want [poll new]", got)
	}
}

// TestLog checks that Log.WaitForRequest consumes requests in order and
// waits for new ones.
func TestLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l := NewLog()
	l.Record(sotw(1, "a"))
	l.Record(sotw(1, "b"))
	r, err := l.WaitForRequest(ctx, func(r *testutil.Request) bool { return r.Req.GetTypeUrl() == "b" })
	if err != nil || r.Req.GetTypeUrl() != "b" {
		t.Fatalf("WaitForRequest = %v, %v; want the request of b", r, err)
	}
	done := make(chan *testutil.Request)
	go func() {
		r, _ := l.WaitForRequest(ctx, func(*testutil.Request) bool { return true })
		done <- r
	}()
	l.Record(sotw(1, "c"))
	if r := <-done; r.Req.GetTypeUrl() != "c" {
		t.Errorf("WaitForRequest after the others were consumed = %v, want the request of c", r)
	}
	if n := len(l.Requests()); n != 3 {
		t.Errorf("Requests() has %d requests, want 3", n)
	}
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	if _, err := l.WaitForRequest(short, func(*testutil.Request) bool { return true }); err == nil {
		t.Error("WaitForRequest with nothing new returned no error")
	}
}
