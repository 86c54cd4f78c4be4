// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"fmt"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// listenerWatcher receives the events of the Listener watch. There is one
// Listener watch per Manager, for its whole life.
type listenerWatcher struct{ m *Manager }

func (w listenerWatcher) ResourceChanged(l client.Versioned[*resources.Listener], done func()) {
	defer done() // after the rebuild: the client reads on once it is taken in
	w.m.listenerChanged(l.Value, l.Version)
}

func (w listenerWatcher) ResourceError(err error, done func()) {
	defer done()
	w.m.listenerError(err)
}

func (w listenerWatcher) AmbientError(err error, done func()) {
	defer done()
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.ambientErrorLocked(resources.ListenerType, m.listenerName, err)
}

// rdsWatch is one watch of a RouteConfiguration. Its callbacks use the name
// it was registered for and act only while it is the Manager's current RDS
// watch (R-16.9: gRPC Go reads the current name at callback time instead,
// so a late callback of a cancelled watch passes its stale-name check).
type rdsWatch struct {
	m    *Manager // read-only
	name string   // read-only; canonical

	// Guarded by m.mu.
	cancel  func()                 // cancels the client watch
	rc      *resources.RouteConfig // the last value; nil before it and after a resource error
	version string                 // its version_info
}

func (w *rdsWatch) ResourceChanged(v client.Versioned[*resources.RouteConfig], done func()) {
	defer done()
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	rc := v.Value
	if m.closed || m.rds != w || w.rc == rc {
		return
	}
	w.rc, w.version = rc, v.Version
	m.useRouteConfigLocked(rc, w.version)
	m.updateLocked()
}

func (w *rdsWatch) ResourceError(err error, done func()) {
	defer done()
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.rds != w {
		return
	}
	w.rc, w.version = nil, ""
	m.failLocked(err)
	m.updateLocked()
}

func (w *rdsWatch) AmbientError(err error, done func()) {
	defer done()
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.rds != w {
		return
	}
	m.ambientErrorLocked(resources.RouteConfigType, w.name, err)
}

// listenerChanged applies a new Listener. With an inline route
// config, that config is used at once and any RDS watch is cancelled. With
// RDS, a new name cancels the old watch and starts one for the new name,
// and the configuration in use, with the Listener that named the old
// RouteConfiguration, stays until the new RouteConfiguration arrives.
func (m *Manager) listenerChanged(l *resources.Listener, version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.lis == l {
		return // the same value again (after a NACK, R-13.5): nothing changed
	}
	if l.Server != nil {
		m.lis, m.lisVersion = nil, ""
		m.stopRDSLocked()
		m.failLocked(fmt.Errorf("%w: Listener %q", ErrServerListener, l.Name))
		m.updateLocked()
		return
	}
	m.lis, m.lisVersion = l, version
	if l.InlineRouteConfig != nil {
		m.stopRDSLocked()
		m.useRouteConfigLocked(l.InlineRouteConfig, "")
		m.updateLocked()
		return
	}
	name := resources.CanonicalName(l.RouteConfigName)
	switch {
	case m.rds == nil || m.rds.name != name:
		m.stopRDSLocked()
		w := &rdsWatch{m: m, name: name}
		m.rds = w
		m.logger.Debug("watching RouteConfiguration", xdslog.KeyResource, name)
		w.cancel = client.WatchVersioned(m.client, resources.RouteConfigType, name, w)
	case m.rds.rc != nil:
		// The same RouteConfiguration with a new Listener.
		m.useRouteConfigLocked(m.rds.rc, m.rds.version)
	}
	m.updateLocked()
}

// listenerError handles a resource error of the Listener: the whole
// configuration is unusable, and nothing it led to is watched any
// more.
func (m *Manager) listenerError(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.lis, m.lisVersion = nil, ""
	m.stopRDSLocked()
	m.failLocked(err)
	m.updateLocked()
}

// ambientErrorLocked passes an ambient error of the Listener or the
// current RouteConfiguration to the watcher's AmbientError: the
// configuration in use stays.
func (m *Manager) ambientErrorLocked(typ resources.ResourceType, name string, err error) {
	m.logger.Info("ambient error; the configuration in use stays", xdslog.KeyTypeURL, typ.TypeURL(),
		xdslog.KeyResource, name, xdslog.KeyError, err)
	m.deliverLocked(delivery{kind: deliverAmbientError, err: err})
}

// stopRDSLocked cancels the RDS watch, if any. Its value, if in use, stays
// in use until replaced.
func (m *Manager) stopRDSLocked() {
	if m.rds == nil {
		return
	}
	m.logger.Debug("cancelling the watch of RouteConfiguration", xdslog.KeyResource, m.rds.name)
	m.rds.cancel()
	m.rds = nil
}

// useRouteConfigLocked makes rc, with the last Listener, the configuration
// in use, and its virtual host's clusters the static roots. A
// RouteConfiguration without a virtual host for the data-plane authority
// makes the whole configuration unusable.
func (m *Manager) useRouteConfigLocked(rc *resources.RouteConfig, rcVersion string) {
	vh, err := routing.SelectVirtualHost(m.authority, rc)
	if err != nil {
		m.failLocked(m.errorf("RouteConfiguration %q: %w", rc.Name, err))
		return
	}
	next := current{lis: m.lis, lisVersion: m.lisVersion, rc: rc, rcVersion: rcVersion, vh: vh}
	if next == m.cur {
		return
	}
	if vh != m.cur.vh {
		m.setStaticRootsLocked(routeClusters(vh, m.opts.httpRoutes))
	}
	m.cur = next
	m.changed = true
}
