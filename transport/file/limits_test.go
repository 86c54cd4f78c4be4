// SPDX-License-Identifier: Apache-2.0

package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/clienttest"
	"github.com/proxyless/xds/transport/file"
)

// TestFileTooLarge checks the default size limit, 4 MiB: a larger file
// (sparse: no disk used) is refused with an error naming the file and the
// limit, without being read; the old code read it whole.
func TestFileTooLarge(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	replace(t, filepath.Join(dir, "lds.json"), encode(t, "x.json", response(listenerType, testutil.Listener("svc", "route-v1"))))
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c := newClient(t, dir)
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.Want(ctx, t, clienttest.ResourceError, client.ErrConnection)
	for _, want := range []string{big, strconv.Itoa(4 << 20)} {
		if !strings.Contains(e.Err.Error(), want) {
			t.Errorf("error %q does not name %q", e.Err, want)
		}
	}
}

// TestFileTooLarge_Option checks WithMaxFileBytes: a file over the limit
// set fails the load with an error wrapping ErrFileTooLarge that names the
// file and the limit; the last good value stays.
func TestFileTooLarge_Option(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "lds.json")
	small := encode(t, path, response(listenerType, testutil.Listener("svc", "r")))
	replace(t, path, small)
	limit := int64(len(small) + 10)
	c := newClient(t, path, file.WithMaxFileBytes(limit))
	w := clienttest.NewRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	wantRoute(ctx, t, w, "r")

	replace(t, path, encode(t, path, response(listenerType, testutil.Listener("svc", "a-longer-route-name"))))
	e := w.Want(ctx, t, clienttest.AmbientError, client.ErrConnection)
	if !errors.Is(e.Err, file.ErrFileTooLarge) {
		t.Errorf("error %v does not wrap file.ErrFileTooLarge", e.Err)
	}
	for _, want := range []string{path, strconv.FormatInt(limit, 10) + " bytes", "file.WithMaxFileBytes"} {
		if !strings.Contains(e.Err.Error(), want) {
			t.Errorf("error %q does not name %q", e.Err, want)
		}
	}
}
