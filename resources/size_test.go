// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"testing"
	"unsafe"
)

// TestValueSizes guards the heap per cached resource: tens of thousands of
// Clusters and ClusterLoadAssignments are common (a mesh), and each value
// is allocated in a size class (…, 80, 96, …, 160, 176, … bytes). A field
// that crosses into the next class costs that class's step for every
// resource.
func TestValueSizes(t *testing.T) {
	for _, c := range []struct {
		name     string
		got, max uintptr
	}{
		{"Cluster", unsafe.Sizeof(Cluster{}), 176}, // 160 before Audiences (gRFC A83)
		{"Endpoints", unsafe.Sizeof(Endpoints{}), 80},
	} {
		if c.got > c.max {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.got, c.max)
		}
	}
}
