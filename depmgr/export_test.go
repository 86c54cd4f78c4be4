// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
)

// DeliverEndpoints hands v to the Manager's watcher of the
// ClusterLoadAssignment name, as the client would, and reports whether
// there is one. It returns once the Manager has taken v in (when the
// client would be given done).
func (m *Manager) DeliverEndpoints(name string, v *resources.Endpoints) bool {
	m.mu.Lock()
	e := m.endpoints.get(name)
	m.mu.Unlock()
	if e == nil {
		return false
	}
	e.ResourceChanged(client.Versioned[*resources.Endpoints]{Value: v}, func() {})
	return true
}
