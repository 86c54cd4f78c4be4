// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"testing"
	"unsafe"
)

// TestDepMgr_NodeSizes keeps the per-cluster structures of the common
// graph (a route table of EDS clusters) in the size classes their
// comments promise: with 10,000 clusters, each 16 bytes more is 160 KB of
// heap.
func TestDepMgr_NodeSizes(t *testing.T) {
	for _, s := range []struct {
		name      string
		size, max uintptr
	}{
		{"clusterNode", unsafe.Sizeof(clusterNode{}), 96},
		{"endpointsNode", unsafe.Sizeof(endpointsNode{}), 80},
		{"leafResult", unsafe.Sizeof(leafResult{}), 176},
	} {
		if s.size > s.max {
			t.Errorf("%s is %d bytes, want at most %d (a size class)", s.name, s.size, s.max)
		}
	}
}
