// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// The cluster graph. Cluster nodes are the Cluster watches; a root is a
// cluster node that is a top-level cluster, and a cluster node is shared by
// every root that reaches it; a leaf cluster node is bound to the endpoints
// node (EDS) or DNS node (LOGICAL_DNS) its value names, shared by every
// cluster that names it.
//
// A node exists while something reaches it: a cluster node while it is a
// root or another root's last resolution visited it (its links' roots), an
// endpoints or DNS node while a cluster node is bound to it (its users).
// When the last one lets go, its watch is cancelled, by the end of the
// update. A change of a node's data marks the roots that reach it
// dirty, and updateLocked resolves only those again: one
// ClusterLoadAssignment change costs a walk of the subtrees that lead to
// it, whatever the number of clusters.
//
// The common graph is a route table naming leaf clusters: every cluster
// node is a root that reaches only itself. It costs per cluster one
// cluster node, one endpoints node, their index slots (nameIndex) and a
// leafResult: what only aggregate graphs need is in graphLinks, allocated
// when a node is reached from another root, and what only shared or
// failed ClusterLoadAssignments need is in endpointsRare. TestDepMgr_NodeSizes
// keeps the nodes in their size classes.

// clusterNode is the watch of one Cluster resource, and a top-level
// cluster while static or dynamic. It implements
// watcher.Watcher[*resources.Cluster]; its callbacks act only while it is
// the Manager's node of its name.
type clusterNode struct {
	m    *Manager // read-only
	name string   // read-only; canonical

	// Guarded by m.mu.
	cancel  func()             // cancels the client watch
	value   *resources.Cluster // nil before a value and after a resource error
	version string             // value's version_info
	// own is the node's result of its own: its resource error (value is
	// then nil), or the config of a leaf value whose endpoints are known
	// (a *leafResult's). nil before anything is received, for an
	// aggregate value, and for a leaf value waiting for its endpoints.
	own   *ClusterResult
	eds   *endpointsNode // the endpoints of an EDS value
	dns   *dnsNode       // the addresses of a LOGICAL_DNS value
	links *graphLinks    // nil until the node is in an aggregate graph

	// As a root; a node is one while static or dynamic. Its last complete
	// result is its entry in m.results.
	dynamic  int32 // SubscribeToCluster references not cancelled
	static   bool  // named by a route of the virtual host in use
	dirty    bool  // queued in m.dirty
	complete bool  // the last resolution found every resource of the subtree
	// 96 bytes, a size class: keep new fields out of here (graphLinks, or
	// derive them).
}

// graphLinks are the edges of a cluster node to other roots than itself:
// a root always reaches its own node, which is not listed.
type graphLinks struct {
	reach   []*clusterNode // as a root: the other nodes its last resolution visited
	roots   []*clusterNode // the other roots whose last resolution visited the node
	visited uint64         // the epoch of the last resolution that visited it under another root
}

// leafResult is a leaf cluster's config and its result, allocated
// together.
type leafResult struct {
	result ClusterResult
	config ClusterConfig
}

// endpointsNode is the watch of one ClusterLoadAssignment. It implements
// watcher.Watcher[*resources.Endpoints].
type endpointsNode struct {
	m    *Manager // read-only
	name string   // read-only; canonical

	// Guarded by m.mu.
	cancel  func()               // cancels the client watch
	value   *resources.Endpoints // empty after a resource error; nil before anything is received
	version string               // value's version_info
	user    *clusterNode         // the first cluster node bound to it; its users are user and rare.users
	rare    *endpointsRare       // nil with one user and no resource error
	// 80 bytes, a size class, where a users slice and the note took 96
	// and an allocation per node.
}

// endpointsRare is what an endpoints node has beyond the common case of
// one cluster node bound to it and no resource error.
type endpointsRare struct {
	note  error          // the resource error, if any
	users []*clusterNode // the cluster nodes bound to it after the first
}

func (e *endpointsNode) noteLocked() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.note
}

func (e *endpointsNode) rareLocked() *endpointsRare {
	if e.rare == nil {
		e.rare = &endpointsRare{}
	}
	return e.rare
}

// setNoteLocked sets the resource error of e; nil clears it.
func (e *endpointsNode) setNoteLocked(err error) {
	if err != nil {
		e.rareLocked().note = err
		return
	}
	if e.rare != nil {
		e.rare.note = nil
		e.trimRareLocked()
	}
}

func (e *endpointsNode) trimRareLocked() {
	if r := e.rare; r.note == nil && len(r.users) == 0 {
		e.rare = nil
	}
}

// addUserLocked and removeUserLocked maintain the users of e.
func (e *endpointsNode) addUserLocked(u *clusterNode) {
	if e.user == nil {
		e.user = u
		return
	}
	r := e.rareLocked()
	r.users = append(r.users, u)
}

func (e *endpointsNode) removeUserLocked(u *clusterNode) {
	r := e.rare
	switch {
	case e.user == u && (r == nil || len(r.users) == 0):
		e.user = nil
		return
	case e.user == u:
		e.user = r.users[0]
		r.users = slices.Delete(r.users, 0, 1)
	case r != nil:
		if i := slices.Index(r.users, u); i >= 0 {
			r.users = slices.Delete(r.users, i, i+1)
		}
	}
	if r != nil {
		e.trimRareLocked()
	}
}

func (n *clusterNode) isRoot() bool { return n.static || n.dynamic > 0 }

// reachedLocked reports whether n is a root or another root reaches it.
func (n *clusterNode) reachedLocked() bool {
	return n.isRoot() || (n.links != nil && len(n.links.roots) > 0)
}

// linksLocked returns n's links, allocating them if needed.
func (n *clusterNode) linksLocked() *graphLinks {
	if n.links == nil {
		n.links = &graphLinks{}
	}
	return n.links
}

// trimLinksLocked lets go of n's links once they are empty.
func (n *clusterNode) trimLinksLocked() {
	if l := n.links; l != nil && len(l.reach) == 0 && len(l.roots) == 0 {
		n.links = nil
	}
}

// addRootLocked returns the node of the cluster name, which the caller
// makes a root (static or dynamic); one that was not a root is marked
// dirty, so that it is resolved by the next updateLocked.
func (m *Manager) addRootLocked(name string) *clusterNode {
	n := m.clusterNodeLocked(name)
	if !n.isRoot() {
		m.setRootCompleteLocked(n, false)
		m.markRootDirtyLocked(n)
	}
	return n
}

func (m *Manager) markRootDirtyLocked(r *clusterNode) {
	if !r.dirty {
		r.dirty = true
		m.dirty = append(m.dirty, r)
	}
}

// markDirtyLocked marks every root that reaches n dirty.
func (m *Manager) markDirtyLocked(n *clusterNode) {
	if n.isRoot() {
		m.markRootDirtyLocked(n)
	}
	if n.links != nil {
		for _, r := range n.links.roots {
			m.markRootDirtyLocked(r)
		}
	}
}

// setStaticRootsLocked makes names the static roots: roots that
// are no longer named lose their static reference, and are removed unless
// subscribed to; new ones are created. names is not kept: the roots'
// static flags are the set.
func (m *Manager) setStaticRootsLocked(names map[string]struct{}) {
	for n := range m.clusters.all() {
		if _, ok := names[n.name]; ok || !n.static {
			continue
		}
		m.setRootStaticLocked(n, false)
		if n.dynamic == 0 {
			m.removeRootLocked(n)
		}
	}
	for name := range names {
		m.setRootStaticLocked(m.addRootLocked(name), true)
	}
}

// setRootStaticLocked and setRootCompleteLocked keep incompleteStatic in
// step with the roots' flags.
func (m *Manager) setRootStaticLocked(r *clusterNode, static bool) {
	if r.static == static {
		return
	}
	r.static = static
	if !r.complete {
		if static {
			m.incompleteStatic++
		} else {
			m.incompleteStatic--
		}
	}
}

func (m *Manager) setRootCompleteLocked(r *clusterNode, complete bool) {
	if r.complete == complete {
		return
	}
	r.complete = complete
	if r.static {
		if complete {
			m.incompleteStatic--
		} else {
			m.incompleteStatic++
		}
	}
}

// removeRootLocked makes r, which is neither static nor subscribed to any
// more, a plain cluster node, and lets go of what it reached. It is
// dropped with the orphans unless another root reaches it.
func (m *Manager) removeRootLocked(r *clusterNode) {
	if r.links != nil {
		for _, n := range r.links.reach {
			m.unlinkLocked(n, r)
		}
		r.links.reach = nil
		r.trimLinksLocked()
	}
	if m.results.delete(r.name) {
		m.changed = true
	}
	if !r.reachedLocked() {
		m.orphans = append(m.orphans, r)
	}
}

// unlinkLocked removes r from the roots of n. A node nothing reaches any
// more is dropped by dropOrphansLocked, at the end of the update: a root
// resolved later in the same update may reach it again (a cluster moved
// from under an aggregate to the route table), and its watch and cached
// value are then kept.
func (m *Manager) unlinkLocked(n *clusterNode, r *clusterNode) {
	if l := n.links; l != nil { // always: r reached n
		if i := slices.Index(l.roots, r); i >= 0 {
			l.roots = slices.Delete(l.roots, i, i+1)
		}
		n.trimLinksLocked()
	}
	if !n.reachedLocked() {
		m.orphans = append(m.orphans, n)
	}
}

// dropOrphansLocked cancels the watches of the cluster nodes nothing
// reaches any more, and lets go of their endpoints and DNS nodes.
func (m *Manager) dropOrphansLocked() {
	for i, n := range m.orphans {
		m.orphans[i] = nil
		if n.reachedLocked() || m.clusters.get(n.name) != n {
			continue
		}
		m.logger.Debug("cancelling the watch of an unreachable Cluster", xdslog.KeyResource, n.name)
		n.cancel()
		n.value = nil
		m.bindLocked(n)
		m.clusters.delete(n.name)
	}
	m.orphans = m.orphans[:0]
	if cap(m.orphans) > maxKeptQueue {
		m.orphans = nil
	}
}

// clusterNodeLocked returns the node of the cluster name, creating it and
// starting its watch if needed.
func (m *Manager) clusterNodeLocked(name string) *clusterNode {
	n := m.clusters.get(name)
	if n == nil {
		n = &clusterNode{m: m, name: name}
		m.clusters.add(n)
		n.cancel = client.WatchVersioned(m.client, resources.ClusterType, name, n)
	}
	return n
}

// resolveRootLocked walks the subtree of r again: it starts the watches of
// the clusters it meets for the first time, lets go of those r no longer
// reaches, and records r's result if the subtree is complete.
func (m *Manager) resolveRootLocked(r *clusterNode) {
	m.epoch++
	t := traversal{m: m, root: r, epoch: m.epoch}
	complete, graphErr := t.visitNode(r, 0)
	if r.links != nil || len(t.reach) > 0 {
		l := r.linksLocked()
		for _, n := range l.reach {
			if n.links == nil || n.links.visited != m.epoch {
				m.unlinkLocked(n, r)
			}
		}
		l.reach = t.reach
		r.trimLinksLocked()
	}
	m.setRootCompleteLocked(r, complete)

	var res *ClusterResult
	switch {
	case graphErr != nil:
		res = &ClusterResult{Name: r.name, Err: graphErr}
	case !complete:
		// The last complete result, if any, stays: a dynamic root keeps
		// it, and a static one holds publication back.
		return
	default:
		res = t.result()
	}
	if last := m.results.get(r.name); last != nil && sameResult(last, res) {
		return
	}
	if graphErr != nil || res.Err != nil {
		m.logger.Warn("cluster unusable", xdslog.KeyResource, r.name, xdslog.KeyError, res.Err)
	}
	m.results.set(res)
	m.changed = true
}

// traversal is one walk of a root's subtree, depth first in priority
// order.
type traversal struct {
	m     *Manager
	root  *clusterNode
	epoch uint64

	reach   []*clusterNode   // nodes visited under the root, in order
	path    []string         // the aggregate clusters from the root to the current node
	leaves  []*ClusterConfig // leaf configs met under the root, each once
	skipped []*ClusterResult // clusters with an error met under the root
}

// visit walks the cluster name at depth (the root is at 0). It reports
// whether everything under name is known, and returns an error that makes
// the whole graph unusable: too deep, or a cycle.
func (t *traversal) visit(name string, depth int) (complete bool, graphErr error) {
	if depth >= MaxAggregateDepth {
		return true, fmt.Errorf("%w: %s -> %s", ErrMaxDepthExceeded, strings.Join(t.path, " -> "), name)
	}
	if i := slices.Index(t.path, name); i >= 0 {
		return true, fmt.Errorf("%w: %s -> %s", ErrAggregateCycle, strings.Join(t.path[i:], " -> "), name)
	}
	return t.visitNode(t.m.clusterNodeLocked(name), depth)
}

// visitNode walks n, met at depth. Under the root, n is a node of another
// name than the root's (visit found no cycle).
func (t *traversal) visitNode(n *clusterNode, depth int) (complete bool, graphErr error) {
	if depth > 0 {
		l := n.linksLocked()
		if l.visited == t.epoch {
			return true, nil // met before on another path: its leaves are listed already
		}
		l.visited = t.epoch
		t.reach = append(t.reach, n)
		if !slices.Contains(l.roots, t.root) {
			l.roots = append(l.roots, t.root)
		}
	}
	switch {
	case n.value == nil && n.own == nil:
		return false, nil // nothing received
	case n.value == nil: // a resource error
		if depth > 0 {
			t.skipped = append(t.skipped, n.own)
		}
		return true, nil
	case n.value.Kind == resources.ClusterKindAggregate:
		t.path = append(t.path, n.name)
		complete = true
		for _, child := range n.value.AggregateClusters {
			c, err := t.visit(resources.CanonicalName(child), depth+1)
			if err != nil {
				return true, err
			}
			complete = complete && c
		}
		t.path = t.path[:len(t.path)-1]
		return complete, nil
	case n.own == nil:
		return false, nil // waiting for its endpoints
	default:
		if depth > 0 {
			t.leaves = append(t.leaves, n.own.Config)
		}
		return true, nil
	}
}

// result is the result of a complete walk without graph error.
func (t *traversal) result() *ClusterResult {
	n := t.root
	if n.value == nil || n.value.Kind != resources.ClusterKindAggregate {
		return n.own // its error, or its leaf config
	}
	if len(t.leaves) == 0 {
		err := fmt.Errorf("%w under %q", ErrNoLeafClusters, n.name)
		if len(t.skipped) > 0 {
			errs := make([]error, 0, len(t.skipped)+1)
			errs = append(errs, err)
			for _, s := range t.skipped {
				errs = append(errs, fmt.Errorf("skipped %q: %w", s.Name, s.Err))
			}
			err = errors.Join(errs...)
		}
		return &ClusterResult{Name: n.name, Err: err}
	}
	return &ClusterResult{Name: n.name, Config: &ClusterConfig{
		Name:           n.name,
		Cluster:        n.value,
		ClusterVersion: n.version,
		Leaves:         t.leaves,
		Skipped:        t.skipped,
	}}
}

// ResourceChanged records a new value of the Cluster.
func (n *clusterNode) ResourceChanged(v client.Versioned[*resources.Cluster], done func()) {
	defer done() // after the rebuild: the client reads on once it is taken in
	m := n.m
	c := v.Value
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.clusters.get(n.name) != n || n.value == c {
		return // cancelled while this call was queued, or the same value again
	}
	n.value, n.version, n.own = c, v.Version, nil
	m.bindLocked(n)
	m.refreshLeafLocked(n)
	m.markDirtyLocked(n)
	m.updateLocked()
}

// ResourceError records that the Cluster is unusable: it becomes an error
// of every root that reaches it (at the top) or is skipped (under an
// aggregate).
func (n *clusterNode) ResourceError(err error, done func()) {
	defer done()
	m := n.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.clusters.get(n.name) != n {
		return
	}
	n.value, n.version, n.own = nil, "", &ClusterResult{Name: n.name, Err: err}
	m.bindLocked(n)
	m.markDirtyLocked(n)
	m.updateLocked()
}

// AmbientError leaves the last value in use.
func (n *clusterNode) AmbientError(err error, done func()) {
	defer done()
	n.m.logger.Info("ambient error of a cluster; its last value stays", xdslog.KeyResource, n.name, xdslog.KeyError, err)
}

// bindLocked binds n to the endpoints or DNS node its value names,
// letting go of the one it was bound to if that differs; a node without a
// leaf value is bound to nothing.
func (m *Manager) bindLocked(n *clusterNode) {
	var edsName, dnsKey string
	if v := n.value; v != nil {
		switch v.Kind {
		case resources.ClusterKindEDS:
			edsName = v.EDSServiceName
			if edsName == "" {
				edsName = v.Name
			}
			edsName = resources.CanonicalName(edsName)
		case resources.ClusterKindLogicalDNS:
			dnsKey = net.JoinHostPort(v.DNSHost, strconv.FormatUint(uint64(v.DNSPort), 10))
		}
	}
	if n.eds != nil && n.eds.name != edsName {
		m.releaseEndpointsLocked(n)
	}
	if n.dns != nil && n.dns.key != dnsKey {
		m.releaseDNSLocked(n)
	}
	if edsName != "" && n.eds == nil {
		n.eds = m.acquireEndpointsLocked(edsName, n)
	}
	if dnsKey != "" && n.dns == nil {
		n.dns = m.acquireDNSLocked(dnsKey, n.value.DNSHost, n.value.DNSPort, n)
	}
}

// refreshLeafLocked updates the leaf result of n, a node with a value,
// from its value and its endpoints, and reports whether it changed. An
// unchanged result keeps its identity. A node with a resource error keeps
// its error.
func (m *Manager) refreshLeafLocked(n *clusterNode) bool {
	if n.value == nil {
		return false
	}
	var (
		eps     *resources.Endpoints
		version string
		note    error
	)
	switch {
	case n.eds != nil && n.eds.value != nil:
		eps, version, note = n.eds.value, n.eds.version, n.eds.noteLocked()
	case n.dns != nil && n.dns.received:
		eps, note = n.dns.value, n.dns.note
	default:
		changed := n.own != nil
		n.own = nil
		return changed
	}
	if n.own != nil {
		if l := n.own.Config; l.Cluster == n.value && l.ClusterVersion == n.version &&
			l.Endpoints == eps && l.EndpointsVersion == version && sameError(l.ResolutionNote, note) {
			return false
		}
	}
	lr := &leafResult{config: ClusterConfig{
		Name:             n.name,
		Cluster:          n.value,
		ClusterVersion:   n.version,
		Endpoints:        eps,
		EndpointsVersion: version,
		ResolutionNote:   note,
	}}
	lr.result = ClusterResult{Name: n.name, Config: &lr.config}
	n.own = &lr.result
	return true
}

// acquireEndpointsLocked returns the endpoints node name with user among
// its users, creating it and starting its watch if needed.
func (m *Manager) acquireEndpointsLocked(name string, user *clusterNode) *endpointsNode {
	e := m.endpoints.get(name)
	if e == nil {
		e = &endpointsNode{m: m, name: name}
		m.endpoints.add(e)
		e.cancel = client.WatchVersioned(m.client, resources.EndpointsType, name, e)
	}
	e.addUserLocked(user)
	return e
}

// releaseEndpointsLocked unbinds n from its endpoints node, and cancels
// that node's watch when n was its last user.
func (m *Manager) releaseEndpointsLocked(n *clusterNode) {
	e := n.eds
	n.eds = nil
	e.removeUserLocked(n)
	if e.user == nil {
		m.logger.Debug("cancelling the watch of an unreachable ClusterLoadAssignment", xdslog.KeyResource, e.name)
		e.cancel()
		m.endpoints.delete(e.name)
	}
}

// ResourceChanged records new endpoints.
func (e *endpointsNode) ResourceChanged(ver client.Versioned[*resources.Endpoints], done func()) {
	defer done()
	m := e.m
	v := ver.Value
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.endpoints.get(e.name) != e || (e.value == v && e.noteLocked() == nil) {
		return
	}
	e.value, e.version = v, ver.Version
	e.setNoteLocked(nil)
	e.changedLocked()
}

// ResourceError records that the endpoints are unusable: the clusters
// bound to e get an empty endpoint set and err as ResolutionNote.
func (e *endpointsNode) ResourceError(err error, done func()) {
	defer done()
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.endpoints.get(e.name) != e {
		return
	}
	m.logger.Warn("endpoints unusable", xdslog.KeyResource, e.name, xdslog.KeyError, err)
	e.value, e.version = &resources.Endpoints{ClusterName: e.name}, ""
	e.setNoteLocked(err)
	e.changedLocked()
}

// AmbientError leaves the last endpoints in use.
func (e *endpointsNode) AmbientError(err error, done func()) {
	defer done()
	e.m.logger.Info("ambient error of endpoints; the last ones stay", xdslog.KeyResource, e.name, xdslog.KeyError, err)
}

// changedLocked refreshes the leaf configs of e's users after e changed,
// and resolves the roots that reach them.
func (e *endpointsNode) changedLocked() {
	m := e.m
	m.leafChangedLocked(e.user)
	if e.rare != nil {
		for _, u := range e.rare.users {
			m.leafChangedLocked(u)
		}
	}
	m.updateLocked()
}

// endpointsChangedLocked refreshes the leaf configs of users after their
// endpoints changed, and resolves the roots that reach them.
func (m *Manager) endpointsChangedLocked(users []*clusterNode) {
	for _, u := range users {
		m.leafChangedLocked(u)
	}
	m.updateLocked()
}

// leafChangedLocked refreshes the leaf config of n after its endpoints
// changed, and marks the roots that reach it dirty if it did.
func (m *Manager) leafChangedLocked(n *clusterNode) {
	if m.refreshLeafLocked(n) {
		m.markDirtyLocked(n)
	}
}

// sameResult reports whether a and b say the same: the same resources, by
// identity, the same versions and the same errors, by message. It is the
// equality that keeps identical snapshots from being published twice.
func sameResult(a, b *ClusterResult) bool {
	if a == b {
		return true
	}
	return a.Name == b.Name && sameError(a.Err, b.Err) && sameConfig(a.Config, b.Config)
}

func sameConfig(a, b *ClusterConfig) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Name == b.Name && a.Cluster == b.Cluster && a.ClusterVersion == b.ClusterVersion &&
		a.Endpoints == b.Endpoints && a.EndpointsVersion == b.EndpointsVersion &&
		sameError(a.ResolutionNote, b.ResolutionNote) &&
		slices.Equal(a.Leaves, b.Leaves) && slices.EqualFunc(a.Skipped, b.Skipped, sameResult)
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.Error() == b.Error()
}
