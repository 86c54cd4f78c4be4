// SPDX-License-Identifier: Apache-2.0

//go:build unix

package file

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/proxyless/xds/internal/recvlimit"
)

// TestReadFile_FIFO checks readFile on a FIFO, the case of a regular file
// replaced by a FIFO between the listing of the directory and the open: it
// returns a notRegularError at once instead of waiting for a writer.
func TestReadFile_FIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "lds.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	_, err := readFile(fifo, recvlimit.Limit{Bytes: DefaultMaxFileBytes})
	var nr *notRegularError
	if !errors.As(err, &nr) {
		t.Fatalf("readFile(FIFO) = %v, want a notRegularError", err)
	}
	t.Log(err)
}
