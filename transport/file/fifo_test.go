// SPDX-License-Identifier: Apache-2.0

//go:build unix

package file_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
}

// unblockFIFO opens path for writing, and closes it, until stop is
// closed: a reader blocked in open(2) of the FIFO then reads EOF. Only the
// failure path of the tests below (old code) needs it.
func unblockFIFO(path string, stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// closeWithin closes c and fails t when that takes longer than d. When it
// does, it unblocks the readers of fifo so that the test ends.
func closeWithin(t *testing.T, c *client.Client, d time.Duration, fifo string) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		c.Close()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	t.Errorf("Client.Close did not return within %v", d)
	stop := make(chan struct{})
	unblocked := make(chan struct{})
	go func() {
		defer close(unblocked)
		unblockFIFO(fifo, stop)
	}()
	<-done
	close(stop)
	<-unblocked
	t.Logf("Client.Close returned after %v, once the FIFO was opened for writing", time.Since(start))
}

// newFIFOClient returns a client of the filesystem source at path, closed
// at the end of the test by closeWithin (1 s).
func newFIFOClient(t *testing.T, path, fifo string, opts ...file.Option) *client.Client {
	t.Helper()
	cfg, b, err := file.Bootstrap(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithTransportBuilder(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, c, time.Second, fifo) })
	return c
}

// TestFIFOInDirectory checks that a FIFO in a watched directory is skipped
// with a warning: the regular files are loaded, and Client.Close returns
// within 1 s. The old code blocked in open(2) of the FIFO forever, with
// Client.Close waiting for it.
func TestFIFOInDirectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	dir := t.TempDir()
	replace(t, filepath.Join(dir, "lds.json"), encode(t, "x.json", response(listenerType, testutil.Listener("svc", "route-v1"))))
	fifo := filepath.Join(dir, "pipe.json")
	mkfifo(t, fifo)

	logs := &testutil.LogBuffer{}
	c := newFIFOClient(t, dir, fifo, file.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	wantRoute(ctx, t, w, "route-v1")
	if got := logs.String(); !strings.Contains(got, "pipe.json") || !strings.Contains(got, "not a regular file") {
		t.Errorf("logs do not warn about the FIFO:\n%s", got)
	}
}

// TestFIFOInDirectory_ClientLogger checks that the transport logs through
// the client's logger (client.WithLogger, given to the Builder as
// transport.BuildOptions.Logger, with the server's server_uri) when it
// has no logger of its own. The old transport logged nowhere then.
func TestFIFOInDirectory_ClientLogger(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	dir := t.TempDir()
	replace(t, filepath.Join(dir, "lds.json"), encode(t, "x.json", response(listenerType, testutil.Listener("svc", "route-v1"))))
	fifo := filepath.Join(dir, "pipe.json")
	mkfifo(t, fifo)

	cfg, b, err := file.Bootstrap(dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.LogBuffer{}
	c, err := client.New(cfg, client.WithTransportBuilder(b), client.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, c, time.Second, fifo) })
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	wantRoute(ctx, t, w, "route-v1")
	var warning string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "not a regular file") {
			warning = line
		}
	}
	if !strings.Contains(warning, "pipe.json") || !strings.Contains(warning, "server_uri="+cfg.Servers[0].ServerURI) {
		t.Errorf("the client's logs do not warn about the FIFO with the server's server_uri:\n%s", logs)
	}
}

// TestFIFOSource checks that a source path that is itself a FIFO is an
// error naming the file, reported to the watcher, and that Client.Close
// returns within 1 s.
func TestFIFOSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	fifo := filepath.Join(t.TempDir(), "lds.json")
	mkfifo(t, fifo)
	c := newFIFOClient(t, fifo, fifo)
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
	if !strings.Contains(e.Err.Error(), fifo) || !strings.Contains(e.Err.Error(), "not a regular file") {
		t.Errorf("error %q, want one naming %s as not a regular file", e.Err, fifo)
	}
}

// TestTransportCloseWithFIFO checks a stream of a directory holding a
// FIFO at the transport level: NewXDSStream and the first Send return
// within 1 s, and Recv within 1 s of Transport.Close.
func TestTransportCloseWithFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	mkfifo(t, fifo)
	tr, err := file.NewBuilder().Build(&bootstrap.ServerConfig{ServerURI: dir}, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		st, err := tr.NewXDSStream(t.Context(), transport.StreamSpec{TypeURL: resources.ListenerTypeURL})
		if err == nil {
			err = st.Send(&transport.Request{SotW: &v3discoverypb.DiscoveryRequest{TypeUrl: resources.ListenerTypeURL}})
		}
		close(opened)
		if err == nil {
			_, err = st.Recv()
		}
		done <- err
	}()
	within := func(what string, c <-chan struct{}) {
		t.Helper()
		timer := time.NewTimer(time.Second)
		defer timer.Stop()
		select {
		case <-c:
		case <-timer.C:
			t.Errorf("%s did not return within 1s", what)
			stop := make(chan struct{})
			unblocked := make(chan struct{})
			go func() {
				defer close(unblocked)
				unblockFIFO(fifo, stop)
			}()
			<-c
			close(stop)
			<-unblocked
		}
	}
	within("NewXDSStream and Send", opened)
	tr.Close()
	ended := make(chan struct{})
	var recvErr error
	go func() {
		defer close(ended)
		recvErr = <-done
	}()
	within("Recv after Transport.Close", ended)
	t.Logf("stream ended: %v", recvErr)
}
