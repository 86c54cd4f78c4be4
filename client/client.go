// SPDX-License-Identifier: Apache-2.0

package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	registry   *registry
	node       *v3corepb.Node
	builder    transport.Builder
	logger     *slog.Logger
	ctx        context.Context    // cancelled by Close
	cancel     context.CancelFunc // cancels ctx
	serializer *serializer.Serializer
	closeOnce  sync.Once
	wg         sync.WaitGroup // the goroutines of every channel
	metrics    clientMetrics  // see metrics.go

	// mu guards everything below, and the fields of authorities,
	// channels, slots, streams and entries marked "guarded by c.mu". It is
	// never held while calling a watcher, a transport or a decoder.
	mu         sync.Mutex
	closed     bool                     // set by Close
	auths      map[listKey]*authority   // the authorities in use, by server list (authority.go)
	top        *authority               // the authority of the top-level servers, once made
	xdstp      map[string]*authority    // the authority of each xdstp authority name watched
	channels   map[string]*channel      // the current channel of each server, by bootstrap.ServerConfig.Key()
	transports map[string]transport.XDS // by bootstrap.ServerConfig.Key(); kept until Close
	persist    *persister               // nil without WithStore (persist.go)
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
	reg, err := newRegistry(append(resources.BuiltinTypes(resources.WithCertificateProviderInstances(cfg.CertificateProviderNames()...)), o.customTypes...)...)
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
		auths:      make(map[listKey]*authority),
		xdstp:      make(map[string]*authority),
		channels:   make(map[string]*channel),
		transports: make(map[string]transport.XDS),
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
		for _, a := range c.auths {
			a.stopTimersLocked()
		}
		if c.persist != nil {
			c.persist.timer.Stop()
		}
		trs := make([]transport.XDS, 0, len(c.transports))
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

// Logger returns the logger given with WithLogger, or the default one,
// which discards everything. The packages built on a client (depmgr,
// xdsresolver, server) log through it unless given a logger of their own,
// so that one WithLogger shows everything done for the client's users.
func (c *Client) Logger() *slog.Logger { return c.opts.logger }
