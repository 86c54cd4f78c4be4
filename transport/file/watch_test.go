// SPDX-License-Identifier: Apache-2.0

package file_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// inotifyFDs returns how many inotify instances the process holds open
// (Linux: /proc/self/fd links to "anon_inode:inotify").
func inotifyFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(l, "inotify") {
			n++
		}
	}
	return n
}

// TestClose_ReleasesTheWatch checks that the watch of the source has an
// owner that Close waits for (docs/style.md: every goroutine has one):
// when Close returns, the file-system notifications are released (their
// inotify instance closed), every time, and no goroutine of the
// transport is left (leakcheck). The old transport's watch goroutines
// were not in its wait group: Close returned while the notifier was still
// open, which the 50 rounds here catch.
func TestClose_ReleasesTheWatch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts inotify instances in /proc/self/fd")
	}
	defer leakcheck.Check(t)
	dir := t.TempDir()
	replace(t, filepath.Join(dir, "lds.json"), encode(t, "x.json", response(listenerType, testutil.Listener("svc", "route-v1"))))
	before := inotifyFDs(t)
	for round := range 50 {
		tr, err := file.NewBuilder().Build(&bootstrap.ServerConfig{ServerURI: dir}, transport.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := tr.NewXDSStream(t.Context(), transport.StreamSpec{TypeURL: resources.ListenerTypeURL})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&transport.Request{SotW: &v3discoverypb.DiscoveryRequest{TypeUrl: resources.ListenerTypeURL}}); err != nil {
			t.Fatal(err)
		}
		// A response means the source was loaded, so watched: the watch
		// starts before the first load.
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		if got := inotifyFDs(t); got != before+1 {
			t.Fatalf("round %d: %d inotify instances while watching, want %d", round, got, before+1)
		}
		tr.Close()
		if got := inotifyFDs(t); got != before {
			t.Fatalf("round %d: %d inotify instances after Close returned, want %d: the watch outlived Close", round, got, before)
		}
	}
}

// TestClose_StopsThePolling checks the polling watch (WithPolling): Close
// leaves no goroutine of the transport behind (leakcheck).
func TestClose_StopsThePolling(t *testing.T) {
	defer leakcheck.Check(t)
	dir := t.TempDir()
	replace(t, filepath.Join(dir, "lds.json"), encode(t, "x.json", response(listenerType, testutil.Listener("svc", "route-v1"))))
	tr, err := file.NewBuilder(file.WithPolling(time.Millisecond)).Build(&bootstrap.ServerConfig{ServerURI: dir}, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.NewXDSStream(t.Context(), transport.StreamSpec{TypeURL: resources.ListenerTypeURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&transport.Request{SotW: &v3discoverypb.DiscoveryRequest{TypeUrl: resources.ListenerTypeURL}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	tr.Close()
}
