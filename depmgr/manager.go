// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/serializer"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
)

// Manager watches a Listener and everything it leads to through a
// client, and publishes complete configurations to a
// watcher.Watcher[*XDSConfig]. Create it with New and release it with
// Close. See the package doc.
type Manager struct {
	// Initialized at creation time and read-only afterwards.
	client       *client.Client
	listenerName string // canonical
	authority    string // the data-plane authority the virtual host is selected for
	nodeID       string
	watcher      watcher.Watcher[*XDSConfig]
	opts         options
	logger       *slog.Logger
	ctx          context.Context        // cancelled by Close; DNS lookups run under it
	cancel       context.CancelFunc     // cancels ctx
	serializer   *serializer.Serializer // runs the watcher's methods, one call at a time (delivery.go)
	closeOnce    sync.Once
	dnsWG        sync.WaitGroup // the DNS goroutines

	// mu guards everything below, and the fields of the nodes
	// marked "guarded by m.mu". Client watches are started and cancelled
	// with mu held: neither waits for a watcher callback, so a callback
	// blocked on mu cannot deadlock them. mu is never held while a method
	// of the Manager's watcher runs.
	mu     sync.Mutex
	closed bool // set by Close

	// The Listener and its RouteConfiguration.
	lisCancel  func()              // cancels the Listener watch
	lis        *resources.Listener // the last Listener received; nil before it and after a resource error
	lisVersion string              // its version_info
	rds        *rdsWatch           // the RDS watch lis asks for; nil with an inline route config or no lis
	cur        current             // what is in use; zero when no configuration is usable

	// The clusters.
	clusters  nameIndex[*clusterNode]   // every Cluster watch, by cluster name; roots included
	endpoints nameIndex[*endpointsNode] // every ClusterLoadAssignment watch, by name
	dns       map[string]*dnsNode       // every DNS lookup, by host:port
	dirty     []*clusterNode            // roots to resolve again
	orphans   []*clusterNode            // cluster nodes that lost their last root in this update
	epoch     uint64                    // incremented by every root resolution
	results   *clusterMapBuilder        // the last complete result of every root that has one
	// incompleteStatic counts the static roots whose subtree is not
	// complete; a snapshot is published only when it is zero.
	incompleteStatic int

	// Publication (delivery.go).
	changed bool          // the next snapshot differs from the last one delivered
	queue   deliveryQueue // the watcher calls not started yet
	busy    bool          // a watcher call is scheduled, running, or waiting for its done
}

// current is the configuration in use: the Listener and the
// RouteConfiguration it names (or holds inline), and the selected virtual
// host. They always belong together.
type current struct {
	lis        *resources.Listener
	lisVersion string
	rc         *resources.RouteConfig
	rcVersion  string
	vh         *resources.VirtualHost // nil when no configuration is usable
}

// New returns a Manager that watches the Listener listenerName through c
// and delivers its configurations to w: complete snapshots through
// ResourceChanged, whole-configuration errors through ResourceError,
// errors that leave the last snapshot valid through AmbientError (see the
// package doc, "Delivery" and "Errors"). It starts the Listener watch at
// once, and returns without waiting for anything. c must outlive the
// Manager: close the Manager first. On a client already closed, w gets
// ResourceError with an error wrapping client.ErrClosed. New panics if c
// or w is nil (programmer error).
func New(c *client.Client, listenerName string, w watcher.Watcher[*XDSConfig], opts ...Option) *Manager {
	if c == nil || w == nil {
		panic("depmgr: New with a nil client or watcher")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = c.Logger()
	}
	if o.authority == "" {
		o.authority = listenerName
	}
	ctx, cancel := context.WithCancel(context.Background())
	name := resources.CanonicalName(listenerName)
	m := &Manager{
		client:       c,
		listenerName: name,
		authority:    o.authority,
		nodeID:       c.NodeID(),
		watcher:      w,
		opts:         o,
		logger:       o.logger.With(xdslog.KeyNodeID, c.NodeID(), xdslog.KeyListener, name),
		ctx:          ctx,
		cancel:       cancel,
		serializer:   serializer.New(ctx),
		clusters:     newNameIndex[*clusterNode](),
		endpoints:    newNameIndex[*endpointsNode](),
		dns:          make(map[string]*dnsNode),
		results:      newClusterMapBuilder(),
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lisCancel = client.WatchVersioned(c, resources.ListenerType, name, listenerWatcher{m})
	return m
}

// Close cancels every watch and DNS lookup of the Manager and waits for
// every goroutine it started, including a method of the watcher in
// progress; it does not wait for the done of a call that has returned:
// once Close was called, done does nothing. Calls not started yet are not
// made. Close is idempotent. It must not be called from a method of the
// watcher, since it waits for it to return.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.queue = deliveryQueue{}
		m.lisCancel()
		m.stopRDSLocked()
		for n := range m.clusters.all() {
			n.cancel()
		}
		for e := range m.endpoints.all() {
			e.cancel()
		}
		for _, d := range m.dns {
			d.cancel()
		}
		m.clusters.clear()
		m.endpoints.clear()
		clear(m.dns)
		m.dirty = nil
		m.mu.Unlock()

		m.cancel()
		<-m.serializer.Done()
		m.dnsWG.Wait()
	})
}

// SubscribeToCluster adds the cluster name to the top-level clusters of
// the configuration, whether or not a route names it: for routes
// whose cluster is chosen per RPC (cluster specifier plugins), and for
// RPCs in flight on a cluster the route table no longer names (gRFC A74).
// Subscriptions are counted: the cluster stays until every cancel func
// returned for it was called. A dynamically subscribed cluster does not
// hold publication back: it is among the snapshot's clusters
// (XDSConfig.Cluster) once its subtree is complete. cancel is idempotent.
// SubscribeToCluster and cancel may be called from a method of the
// watcher. After Close they do nothing.
func (m *Manager) SubscribeToCluster(name string) (cancel func()) {
	name = resources.CanonicalName(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return func() {}
	}
	r := m.addRootLocked(name)
	r.dynamic++
	m.updateLocked()
	return sync.OnceFunc(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed {
			return
		}
		r.dynamic--
		if r.dynamic == 0 && !r.static {
			m.removeRootLocked(r)
		}
		m.updateLocked()
	})
}

// ResolveNow asks for every LOGICAL_DNS host to be resolved again now,
// rather than at the end of its refresh interval; a gRPC channel does so
// when it cannot connect to the addresses it has. It does not wait for
// the lookups. It may be called from a method of the watcher.
func (m *Manager) ResolveNow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.dns {
		select {
		case d.now <- struct{}{}:
		default:
		}
	}
}

// updateLocked resolves the roots marked dirty again, and publishes a
// snapshot if one is due.
func (m *Manager) updateLocked() {
	for len(m.dirty) > 0 {
		r := m.dirty[len(m.dirty)-1]
		m.dirty[len(m.dirty)-1] = nil
		m.dirty = m.dirty[:len(m.dirty)-1]
		r.dirty = false
		if r.isRoot() { // else removed since it was marked
			m.resolveRootLocked(r)
		}
	}
	if cap(m.dirty) > maxKeptQueue {
		m.dirty = nil // the roots of a new route table: not kept for the next update
	}
	m.dropOrphansLocked()
	m.maybePublishLocked()
}

// maxKeptQueue is the capacity up to which the Manager keeps its work
// queues (dirty, orphans) for the next update: a route table of 10,000
// clusters fills them once, and most updates need a few entries.
const maxKeptQueue = 64

// maybePublishLocked publishes a snapshot when the configuration is
// complete and differs from the last one delivered.
func (m *Manager) maybePublishLocked() {
	if m.closed || !m.changed || m.cur.vh == nil || m.incompleteStatic > 0 {
		return
	}
	m.changed = false
	cfg := &XDSConfig{
		Listener:           m.cur.lis,
		ListenerVersion:    m.cur.lisVersion,
		RouteConfig:        m.cur.rc,
		RouteConfigVersion: m.cur.rcVersion,
		VirtualHost:        m.cur.vh,
		clusters:           m.results.snapshot(),
	}
	m.logger.Debug("publishing a configuration", xdslog.KeyClusters, cfg.NumClusters())
	m.deliverLocked(delivery{kind: deliverChanged, cfg: cfg})
}

// failLocked makes the whole configuration unusable with err: the
// route table's clusters are no longer watched, and the
// watcher gets ResourceError(err). The next usable configuration is
// published even if it equals the last one.
func (m *Manager) failLocked(err error) {
	m.cur = current{}
	m.setStaticRootsLocked(nil)
	m.changed = true
	m.logger.Warn("the configuration is unusable", xdslog.KeyError, err)
	m.deliverLocked(delivery{kind: deliverResourceError, err: err})
}

// errorf returns an error of the Manager's own, naming the node once as
// the client's errors do.
func (m *Manager) errorf(format string, a ...any) error {
	return fmt.Errorf("%w (node %q)", fmt.Errorf(format, a...), m.nodeID)
}
