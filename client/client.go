// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/serializer"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Client is an xDS client: it holds one ADS stream per management server,
// shared by every resource type and authority served there, and a cache of
// the resources its watchers asked for. Create it with New, watch resources
// with Watch, and release it with Close.
//
// A Client is safe for concurrent use.
type Client struct {
	// Initialized at creation time and read-only afterwards.
	cfg        *bootstrap.Config
	opts       options
	registry   *resources.Registry
	node       *v3corepb.Node
	builder    transport.Builder
	logger     *slog.Logger
	ctx        context.Context    // cancelled by Close
	cancel     context.CancelFunc // cancels ctx
	serializer *serializer.Serializer
	closeOnce  sync.Once
	wg         sync.WaitGroup // the goroutines of every channel
	metrics    clientMetrics  // see metrics.go

	// mu guards everything below, and the fields of channels, typeStates
	// and resourceStates marked "guarded by c.mu". It is never held while
	// calling a watcher or a transport. Decoders run under it (they are pure
	// functions of their input).
	mu         sync.Mutex
	closed     bool                           // set by Close
	channels   map[string]*channel            // the current channel of each server, by bootstrap.ServerConfig.Key()
	transports map[string]transport.Transport // by bootstrap.ServerConfig.Key(); kept until Close
	lists      map[listKey]*serverList        // server lists in use (fallback.go)
	persist    *persister                     // nil without WithStore (persist.go)
}

// New returns a Client for the management servers of cfg. It does not
// connect: the ADS stream to a server is opened when the first resource it
// serves is watched. cfg must not be modified afterwards.
//
// New returns an error if cfg has no server or the resource types given
// with WithResourceTypes clash with each other or the built-in ones.
func New(cfg *bootstrap.Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("client: nil bootstrap config")
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New("client: bootstrap config has no xds_servers")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	reg, err := resources.NewRegistry(append(resources.BuiltinTypes(resources.WithCertificateProviderInstances(cfg.CertificateProviderNames()...)), o.customTypes...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg:        cfg,
		opts:       o,
		registry:   reg,
		node:       cfg.Node.Proto(),
		builder:    o.builder(),
		ctx:        ctx,
		cancel:     cancel,
		serializer: serializer.New(ctx),
		channels:   make(map[string]*channel),
		transports: make(map[string]transport.Transport),
		lists:      make(map[listKey]*serverList),
	}
	c.logger = o.logger.With(xdslog.KeyNodeID, cfg.Node.ID)
	c.startMetrics()
	c.startPersistence()
	return c, nil
}

// Close stops every stream, cancels every timer and watch, closes the
// transports the client built, and waits for every goroutine the client
// started, including a watcher method in progress. Watcher methods still
// queued are not called. Close is idempotent. It must not be called from a
// watcher method, since it waits for that method to return.
//
// Watches made after Close (Watch, WatchAll, and so depmgr.New) are not
// silent: their watcher gets one ResourceError, a *ResourceError wrapping
// ErrClosed, on a goroutine of its own, soon after the call.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		for _, t := range c.registry.Types() {
			for rs := range c.entriesLocked(t.TypeURL()) {
				rs.stopTimerLocked()
				rs.stopTTLLocked()
			}
		}
		if c.persist != nil {
			c.persist.timer.Stop()
		}
		trs := make([]transport.Transport, 0, len(c.transports))
		for _, tr := range c.transports {
			trs = append(trs, tr)
		}
		c.mu.Unlock()

		c.cancel()
		c.wg.Wait()
		<-c.serializer.Done()
		// Transports are closed last, outside mu: closing one may block on
		// its streams, which the channel goroutines no longer use.
		for _, tr := range trs {
			tr.Close()
		}
		c.stopMetrics()
	})
}

// NodeID returns the node ID from the bootstrap config.
func (c *Client) NodeID() string { return c.node.GetId() }

// BootstrapConfig returns the config the client was created with. It must
// not be modified.
func (c *Client) BootstrapConfig() *bootstrap.Config { return c.cfg }

// channelForLocked returns the server list of name and the channel of its
// active server, creating the channel (and its transport) on first
// use, and again after the last one was retired because nothing it served
// was watched any more; the transport (one gRPC connection) is
// kept until Close. Old-style names go to the top-level servers; xdstp
// names to their authority's.
func (c *Client) channelForLocked(name string) (*channel, *serverList, error) {
	l, err := c.listForLocked(name)
	if err != nil {
		return nil, nil, err
	}
	ch, err := c.channelLocked(l, l.active)
	return ch, l, err
}

// listForLocked returns the server list that serves name.
func (c *Client) listForLocked(name string) (*serverList, error) {
	servers := c.cfg.Servers
	if strings.HasPrefix(name, "xdstp:") {
		n, err := resources.ParseName(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		servers, err = c.cfg.ServersForAuthority(n.Authority)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no management server for %q", ErrUnsupported, name)
	}
	return c.serverListLocked(servers), nil
}

// channelLocked returns the channel of server i of l, creating it (and its
// transport) if needed. It runs on every watch: the server's key is the
// list's, computed once.
func (c *Client) channelLocked(l *serverList, i int) (*channel, error) {
	sc, key := l.servers[i], l.keys[i]
	if ch, ok := c.channels[key]; ok {
		return ch, nil
	}
	tr := c.transports[key]
	if tr == nil {
		var err error
		if tr, err = c.builder.Build(sc); err != nil {
			return nil, fmt.Errorf("%w: building transport to %s: %w", ErrConnection, sc.ServerURI, err)
		}
		c.transports[key] = tr
	}
	ch := newChannel(c, sc, key, tr)
	c.channels[key] = ch
	return ch, nil
}

// The cache has no index of its own: an entry is in the cache while the
// channel that serves it (resourceState.ch) holds it in its typeState's
// entries. Other channels may hold it too (the higher-priority servers of
// its list, fallback.go), and a channel holds entries served by others,
// so each entry is counted once, at its serving channel. A client has a
// channel per management server in use: few.

// entryLocked returns the cache entry of the resource of type typeURL
// named name, or nil.
func (c *Client) entryLocked(typeURL, name string) *resourceState {
	for _, ch := range c.channels {
		if ts := ch.types[typeURL]; ts != nil {
			if rs := ts.entries[name]; rs != nil && rs.ch == ch {
				return rs
			}
		}
	}
	return nil
}

// cachedLocked reports whether rs is in the cache: it was not dropped.
func (rs *resourceState) cachedLocked() bool {
	ts := rs.ch.types[rs.typ.TypeURL()]
	return ts != nil && ts.entries[rs.name] == rs
}

// entriesLocked yields the cache entries of type typeURL, in no order. The
// cache must not change meanwhile.
func (c *Client) entriesLocked(typeURL string) iter.Seq[*resourceState] {
	return func(yield func(*resourceState) bool) {
		for _, ch := range c.channels {
			ts := ch.types[typeURL]
			if ts == nil {
				continue
			}
			for _, rs := range ts.entries {
				if rs.ch == ch && !yield(rs) {
					return
				}
			}
		}
	}
}

// sortedEntriesLocked returns the cache entries of type typeURL, sorted by
// name.
func (c *Client) sortedEntriesLocked(typeURL string) []*resourceState {
	return slices.SortedFunc(c.entriesLocked(typeURL), func(a, b *resourceState) int { return strings.Compare(a.name, b.name) })
}

// allEntriesLocked returns every cache entry, in no order: a copy, which
// the caller may change the cache while walking.
func (c *Client) allEntriesLocked() []*resourceState {
	var out []*resourceState
	for _, t := range c.registry.Types() {
		out = slices.AppendSeq(out, c.entriesLocked(t.TypeURL()))
	}
	return out
}
