// SPDX-License-Identifier: Apache-2.0

package client

import (
	"cmp"
	"slices"
	"strings"

	"github.com/proxyless/xds/resources"
)

// This file holds the client's metrics (gRFC A78 "XdsClient", with the
// cache states of gRFC A88; R-21): the counters it reports to a
// MetricsRecorder as things happen, and the gauges it computes when asked
// (Gauges). The adapter to OpenTelemetry is the nested module
// github.com/proxyless/xds/otelxds, which names the instruments:
//
//	grpc.xds_client.resource_updates_valid    counter {resource}  grpc.target, grpc.xds.server, grpc.xds.resource_type
//	grpc.xds_client.resource_updates_invalid  counter {resource}  grpc.target, grpc.xds.server, grpc.xds.resource_type
//	grpc.xds_client.server_failure            counter {failure}   grpc.target, grpc.xds.server
//	grpc.xds_client.connected                 gauge   {bool}      grpc.target, grpc.xds.server
//	grpc.xds_client.resources                 gauge   {resource}  grpc.target, grpc.xds.authority, grpc.xds.cache_state, grpc.xds.resource_type

// DefaultTarget is the target the client reports in its metrics (the
// grpc.target label of gRFC A78) unless WithTarget sets another. gRPC
// reports the target of the channel the XdsClient serves, or "#server" for
// an xDS-enabled server; a Client of this package serves whatever its
// application makes of it, so it says so.
const DefaultTarget = "#standalone"

// OldStyleAuthority is the authority reported in metrics for resources with
// old-style (non-xdstp) names (gRFC A78).
const OldStyleAuthority = "#old"

// MetricsRecorder receives the client's metrics (gRFC A78 "XdsClient",
// counters as they change, and a function that reads the gauges,
// to be called on each collection, as OpenTelemetry's asynchronous gauges
// are. Set one with WithMetrics; the nested module
// github.com/proxyless/xds/otelxds implements it over an OpenTelemetry
// MeterProvider. One recorder may serve several clients: each record
// carries its client's target.
//
// The Record methods are called from the client's goroutines (a stream's,
// after the response or failure they count was handled), never with the
// client's internal lock held, so they may call the Client; they must be
// safe for concurrent use and return quickly, since the stream waits for
// them (as the synchronous instruments of OpenTelemetry's SDK do).
type MetricsRecorder interface {
	// RecordResourceUpdates adds u.Valid to the counter
	// grpc.xds_client.resource_updates_valid and u.Invalid to
	// grpc.xds_client.resource_updates_invalid, for the resources of one
	// response; see ResourceUpdates for what is counted.
	RecordResourceUpdates(u ResourceUpdates)

	// RecordServerFailure adds one to the counter
	// grpc.xds_client.server_failure: the management server went from
	// healthy to unhealthy; see ServerFailure.
	RecordServerFailure(f ServerFailure)

	// RegisterGauges is called once, by New, with a function that returns
	// the client's current gauges (Client.Gauges). The recorder calls read
	// when its gauges are collected, from any goroutine but never from a
	// Record method, until the function RegisterGauges returns is called:
	// Close calls it once, and read must not be called afterwards (a read
	// after Close returns an empty Gauges).
	RegisterGauges(read func() Gauges) (unregister func())
}

// ResourceUpdates counts the resources of one response from a management
// server (SotW or delta) of one type, for the counters
// grpc.xds_client.resource_updates_valid and _invalid (gRFC A78, R-21.4).
//
// Valid counts the resources the client wanted (watched by name, through
// an alias in delta, or under a WatchAll) that were valid, whether or not
// they changed (the same bytes again count too). Invalid counts what the
// response's NACK names: each wanted resource that failed validation, each
// name repeated in the response whether wanted or not, and each
// entry that could not be attributed to a name (an unusable Resource
// wrapper, a resource without a name or too broken to name), as gRPC C++
// counts structurally broken entries. Each name
// counts once per response, however many times it appears (a repeated
// name is one invalid resource) and however many watchers it has
// (grpc-go counts a resource once per watching authority). Resources not
// wanted are not counted, nor are delta heartbeats and
// removed_resources. A response with nothing to count is not recorded.
type ResourceUpdates struct {
	Target       string // grpc.target: see WithTarget
	Server       string // grpc.xds.server: the management server's server_uri
	ResourceType string // grpc.xds.resource_type: the type URL without its "type.googleapis.com/" prefix, e.g. "envoy.config.listener.v3.Listener"
	Valid        int64  // resources counted valid (≥ 0)
	Invalid      int64  // resources counted invalid (≥ 0)
}

// ServerFailure is one transition of a management server from healthy to
// unhealthy, for the counter grpc.xds_client.server_failure (gRFC A78,
// A server becomes unhealthy when a stream to it cannot be
// created or ends before any response and before it is healthy (gRFC
// A57; the failures reported to watchers as ErrConnection, R-11.3), and
// healthy again when a stream receives a message or becomes healthy by
// staying open. A server the client has not yet failed to reach is
// healthy, so the first failure counts, as in gRPC C++. Deviation from
// grpc-go, which counts every failed attempt: a server down for N retries
// counts once, not N times. The state of a server survives the retirement
// of its stream, so watching and unwatching a server that stays
// down does not count it again.
type ServerFailure struct {
	Target string // grpc.target: see WithTarget
	Server string // grpc.xds.server: the management server's server_uri
}

// Gauges are the client's gauges at one instant (gRFC A78, R-21.1).
type Gauges struct {
	Target string // grpc.target: see WithTarget

	// Connected has one entry per management server the client has an
	// ADS stream for (something served there is watched; ), sorted
	// by Server: the gauge grpc.xds_client.connected.
	Connected []ServerConnected

	// Resources has one entry per authority, resource type and cache
	// state with at least one resource in the client's cache (each entry
	// Dump reports), sorted by Authority, ResourceType, CacheState: the
	// gauge grpc.xds_client.resources.
	Resources []ResourceCount
}

// ServerConnected is the gauge grpc.xds_client.connected of one
// management server (gRFC A78, R-21.2): whether the client has a working
// ADS stream to it. It is false until the first stream is created, true
// from then on; false again when a stream cannot be created or ends
// before any response (the server is unhealthy, see ServerFailure), and
// then true again only once a stream receives a message or becomes
// healthy by staying open. A stream that had responses and ends
// keeps it true while the next one is created.
type ServerConnected struct {
	Server    string // grpc.xds.server: the management server's server_uri
	Connected bool   // reported as 1 or 0
}

// ResourceCount is one value of the gauge grpc.xds_client.resources (gRFC
// A78, gRFC A88): how many resources of the cache have this authority,
// type and cache state.
type ResourceCount struct {
	Authority    string // grpc.xds.authority: an xdstp name's authority, OldStyleAuthority ("#old") for other names
	ResourceType string // grpc.xds.resource_type, as in ResourceUpdates
	CacheState   string // grpc.xds.cache_state: one of the CacheState constants
	Count        int64  // > 0
}

// metricsOptions are the options of WithMetrics and WithTarget.
type metricsOptions struct {
	recorder MetricsRecorder // nil: counters are not reported
	target   string          // "": DefaultTarget
}

// WithMetrics makes the client report its metrics (gRFC A78 "XdsClient",
// R-21) to r: counters as they change, and its gauges through the read
// function New registers with r.RegisterGauges (see MetricsRecorder). A
// nil r reports nothing, as without the option. Client.Gauges works with
// or without it.
func WithMetrics(r MetricsRecorder) Option {
	return func(o *options) { o.metrics.recorder = r }
}

// WithTarget sets the target the client reports as the grpc.target label
// of its metrics (gRFC A78): for a client that serves one gRPC channel,
// that channel's target (for example "xds:///svc"), or "#server" for an
// xDS-enabled gRPC server, as gRPC does. The default, and what an empty
// target means, is DefaultTarget. It has no other effect.
func WithTarget(target string) Option {
	return func(o *options) { o.metrics.target = target }
}

// clientMetrics is the metrics state of a Client. recorder, target and
// unregister are set by startMetrics and read-only afterwards; servers is
// guarded by Client.mu.
type clientMetrics struct {
	recorder   MetricsRecorder // nil when counters are not reported
	target     string
	unregister func() // from recorder.RegisterGauges; nil without a recorder

	servers map[string]*serverHealth // by bootstrap.ServerConfig.Key(); kept until Close, as transports

	// The records made while Client.mu was held, reported once it is
	// released (unlockAndRecord), in order. Guarded by Client.mu.
	queuedUpdates  []ResourceUpdates
	queuedFailures []ServerFailure
}

// unlockAndRecord releases c.mu, then reports to the recorder the records
// queued while it was held: the recorder is user code, which never runs
// under the client's lock (docs/style.md "Concurrency"), as persistence's
// Store is called after the lock is released (persist.go). The code that
// queues records (recordUpdatesLocked, serverFailedLocked) releases the
// lock with it.
func (c *Client) unlockAndRecord() {
	m := &c.metrics
	updates, failures := m.queuedUpdates, m.queuedFailures
	m.queuedUpdates, m.queuedFailures = nil, nil
	c.mu.Unlock()
	for _, u := range updates {
		m.recorder.RecordResourceUpdates(u)
	}
	for _, f := range failures {
		m.recorder.RecordServerFailure(f)
	}
}

// serverHealth is what the metrics know of one management server. Guarded
// by Client.mu.
type serverHealth struct {
	// unhealthy: the last stream (or attempt to create one) failed before
	// any response.
	unhealthy bool
	// connectedOn is the channel whose stream made the server count as
	// connected, nil when it does not: connected is reported for
	// the server's current channel only, so a retired channel's state
	// does not leak into the next one.
	connectedOn *channel
}

// startMetrics sets up the client's metrics at New.
func (c *Client) startMetrics() {
	m := &c.metrics
	m.recorder = c.opts.metrics.recorder
	m.target = cmp.Or(c.opts.metrics.target, DefaultTarget)
	if m.recorder != nil {
		m.unregister = m.recorder.RegisterGauges(c.Gauges)
	}
}

// stopMetrics unregisters the gauges at Close.
func (c *Client) stopMetrics() {
	if c.metrics.unregister != nil {
		c.metrics.unregister()
	}
}

// healthLocked returns the health of the channel's server, creating it on
// first use.
func (ch *channel) healthLocked() *serverHealth {
	m := &ch.c.metrics
	h := m.servers[ch.key]
	if h == nil {
		if m.servers == nil {
			m.servers = make(map[string]*serverHealth)
		}
		h = &serverHealth{}
		m.servers[ch.key] = h
	}
	return h
}

// streamCreatedLocked records that a stream to the server was created: the
// server counts as connected unless it is unhealthy, in which case it does
// once a message is received.
func (ch *channel) streamCreatedLocked() {
	if h := ch.healthLocked(); !h.unhealthy {
		h.connectedOn = ch
	}
}

// messageReceivedLocked records that a stream of the channel received a
// message: the server is healthy and connected.
func (ch *channel) messageReceivedLocked() { ch.serverHealthyLocked() }

// serverHealthyLocked records that a stream of the channel received a
// message or became healthy by staying open: the server is
// healthy and connected.
func (ch *channel) serverHealthyLocked() {
	h := ch.healthLocked()
	h.unhealthy = false
	h.connectedOn = ch
}

// serverFailedLocked records that a stream to the server could not be
// created or failed before any response: the server is not
// connected and, if it was healthy, goes unhealthy, which counts one
// server failure, queued for unlockAndRecord.
func (ch *channel) serverFailedLocked() {
	h := ch.healthLocked()
	h.connectedOn = nil
	if h.unhealthy {
		return
	}
	h.unhealthy = true
	if m := &ch.c.metrics; m.recorder != nil {
		m.queuedFailures = append(m.queuedFailures, ServerFailure{Target: m.target, Server: ch.sc.ServerURI})
	}
}

// recordUpdatesLocked queues the report of the resources of one response
// of type typ (see ResourceUpdates), for unlockAndRecord.
func (ch *channel) recordUpdatesLocked(typ resources.ResourceType, valid, invalid int) {
	m := &ch.c.metrics
	if m.recorder == nil || valid+invalid == 0 {
		return
	}
	m.queuedUpdates = append(m.queuedUpdates, ResourceUpdates{
		Target:       m.target,
		Server:       ch.sc.ServerURI,
		ResourceType: metricsTypeName(typ.TypeURL()),
		Valid:        int64(valid),
		Invalid:      int64(invalid),
	})
}

// Gauges returns the client's gauges now (see Gauges and MetricsRecorder):
// the connection state of each management server it has a stream for, and
// the number of cached resources by authority, type and cache state. It
// takes the client's lock for O(servers + resources) steps and allocates
// one entry per gauge value; it is meant to be called when metrics are
// collected (a MetricsRecorder's gauge callback, or an application's own
// exporter). After Close it returns an empty Gauges with the target. It
// is safe for concurrent use, and works with or without WithMetrics.
func (c *Client) Gauges() Gauges {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := Gauges{Target: c.metrics.target}
	if c.closed {
		return g
	}
	for _, key := range sortedKeys(c.channels) {
		ch := c.channels[key]
		h := c.metrics.servers[key]
		g.Connected = append(g.Connected, ServerConnected{Server: ch.sc.ServerURI, Connected: h != nil && h.connectedOn == ch})
	}
	// Two server entries may share a server_uri (with other credentials):
	// one value per label set, connected if any of them is.
	slices.SortStableFunc(g.Connected, func(a, b ServerConnected) int { return strings.Compare(a.Server, b.Server) })
	merged := g.Connected[:0]
	for _, sc := range g.Connected {
		if n := len(merged); n > 0 && merged[n-1].Server == sc.Server {
			merged[n-1].Connected = merged[n-1].Connected || sc.Connected
			continue
		}
		merged = append(merged, sc)
	}
	g.Connected = merged

	type bucket struct{ authority, typeURL, state string }
	counts := make(map[bucket]int64)
	for _, a := range c.auths {
		for e := range a.allEntriesLocked() {
			counts[bucket{nameAuthority(e.name), e.typ.TypeURL(), e.cacheState()}]++
		}
	}
	for b, n := range counts {
		g.Resources = append(g.Resources, ResourceCount{Authority: b.authority, ResourceType: metricsTypeName(b.typeURL), CacheState: b.state, Count: n})
	}
	slices.SortFunc(g.Resources, func(a, b ResourceCount) int {
		return cmp.Or(strings.Compare(a.Authority, b.Authority), strings.Compare(a.ResourceType, b.ResourceType), strings.Compare(a.CacheState, b.CacheState))
	})
	return g
}

// nameAuthority returns the grpc.xds.authority of a canonical resource
// name: the authority of an xdstp name as written in it, OldStyleAuthority
// otherwise. It does not allocate.
func nameAuthority(name string) string {
	rest, ok := strings.CutPrefix(name, "xdstp://")
	if !ok {
		return OldStyleAuthority
	}
	authority, _, _ := strings.Cut(rest, "/")
	return authority
}

// metricsTypeName returns the grpc.xds.resource_type of a type URL: the
// message's full name, after the last "/" (gRFC A78's
// "envoy.config.listener.v3.Listener", as gRPC C++ and Java report it).
func metricsTypeName(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}
