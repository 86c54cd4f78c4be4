// SPDX-License-Identifier: Apache-2.0

package client

import (
	"testing"
	"unsafe"
)

// TestEntrySizes guards the heap per watched resource: tens of thousands
// of cache entries and watches are common (a mesh), and each entry is
// allocated in a size class (…, 144, 160, 176, 192, …, 240 bytes). A field
// added to entry or watchEntry that crosses into the next class
// costs that class's step for every resource: keep rarely set state in
// entryExtra.
func TestEntrySizes(t *testing.T) {
	for _, c := range []struct {
		name     string
		got, max uintptr
	}{
		{"entry", unsafe.Sizeof(entry{}), 160},
		{"entryExtra", unsafe.Sizeof(entryExtra{}), 48},
		{"watchEntry", unsafe.Sizeof(watchEntry{}), 32},
	} {
		if c.got > c.max {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.got, c.max)
		}
	}
}
